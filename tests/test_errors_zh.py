"""Errors in Chinese: with --lang zh every error a user meets reads as Chinese a Chinese engineer would write,
still naming the field, file and line; the English stays as it was, word for word."""

from __future__ import annotations

import ast
import re
import string
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import gpukb
from gpukb.answer.workload import Workload
from gpukb.cli import app
from gpukb.core.errors import ASK_ERRORS, KBDefectError, Problem, WorkloadError
from gpukb.core.messages import MESSAGES, PYDANTIC_ZH, Message, message
from test_glossary import avoided_in
from test_languages import ENGLISH_IN_CHINESE

REPO = Path(__file__).resolve().parents[1]
HAN = re.compile(r"[\u3400-\u9fff]")
runner = CliRunner()

# (bad workload, the field its error names, the English it says, as the tests and users have read it)
BAD = [
    ({"model": "llama-2-7b", "task": "lora", "seq_len": -3}, "seq_len", "Input should be greater than 0"),
    ({"model": "llama-2-7b", "task": "lora", "seq_len": True}, "seq_len", "expected a whole number, got true"),
    ({"model": "llama-2-7b", "task": "finetune"}, "task", "Input should be 'pretrain', 'full_finetune', 'lora', "
                                                          "'qlora', 'inference', 'grpo', 'ppo' or 'dpo'"),
    ({"model": "llama-2-7b", "task": "lora", "colour": 3}, "colour", "unknown field (fields: model, params,"),
    ({"params": "seven", "task": "lora", "layers": 2, "hidden_size": 64, "heads": 2, "vocab_size": 100}, "params",
     "cannot read 'seven' as a whole number: write e.g. 4096, '4k' (4,000), '4Ki' (4,096), '7B' or '70e9'"),
    ({"model": "llama-2-7b", "params": "7B", "task": "lora"}, "workload",
     "give either model (a catalog id) or params (with its architecture), not both or neither"),
    ({"model": "llama-2-7b", "task": "inference", "optimizer": "adamw"}, "optimizer", "not used for inference; remove it"),
    ({"model": "llama-2-7b", "task": "lora", "batch_size": 3}, "batch_size",
     "inference concurrency; for training use micro_batch_size"),
    ({"model": "llama-2-7b", "task": "full_finetune", "offload": "optimizer+params", "zero_stage": 2}, "offload",
     "parameter offload needs zero_stage 3 (ZeRO-Infinity)"),
    ({"model": "llama-2-7b", "task": "full_finetune", "optimizer_in_backward": True, "global_batch_size": 8},
     "optimizer_in_backward", "every micro-batch is its own optimizer step, so gradients cannot accumulate"),
    ({"model": "llama-2-7b", "task": "full_finetune", "gpu_count": 2, "tensor_parallel": 4}, "gpu_count",
     "2 is fewer than tensor_parallel x pipeline_parallel x expert_parallel x context_parallel = 4"),
    ({"model": "llama-2-7b", "task": "lora", "gpus": ["h100"]}, "gpus.0", "unknown GPU 'h100'; did you mean "),
    ({"model": "llama-2-7b", "task": "lora", "gpus": ["t4-16gb", "t4-16gb"]}, "gpus.1",
     "'t4-16gb' is listed 2 times: gpus names the GPU types to compare, each once; for 2 GPUs of one type give "
     "gpu_count: 2"),
    ({"model": "llama-2-70bx", "task": "lora"}, "model", "unknown model 'llama-2-70bx'; did you mean llama-2-70b"),
    ({"params": "7B", "task": "lora"}, "layers", "needed with params (activation and KV-cache memory depend on it); "
                                                 "give layers, hidden_size, heads, vocab_size or use a catalog model id"),
    ({"params": "70B", "task": "lora", "layers": 32, "hidden_size": 4096, "heads": 32, "vocab_size": 32000}, "params",
     "70,000,000,000 is not within a factor 2 of the 6,704,861,184 parameters"),
    ({"model": "llama-2-7b", "task": "full_finetune", "pipeline_parallel": 64}, "pipeline_parallel",
     "64 stages for 32 layers: a stage needs at least one layer"),
    ({"model": "llama-2-7b", "task": "lora", "lora_rank": 8192}, "lora_rank",
     "8192 exceeds the hidden size 4096: an adapter's rank is at most the width it adapts"),
    ({"model": "llama-2-7b", "task": "full_finetune", "expert_parallel": 2}, "expert_parallel",
     "the model has no routed experts to split (not a mixture of experts)"),
    ({"model": "llama-2-7b", "task": "inference", "prompt_len": 9000, "output_len": 20}, "prompt_len",
     "a 9,020-token context is longer than llama-2-7b's 4,096 (max_position_embeddings, with any RoPE scaling)"),
    ({"model": "llama-2-7b", "task": "lora", "framework": "vllm"}, "framework",
     "vllm does not run task lora; frameworks for it: deepspeed, fsdp, hf, megatron, torchtune, unsloth"),
    ({"model": "hf:bad", "task": "lora"}, "model", "hf:bad: expected hf:ORG/NAME, e.g. hf:meta-llama/Llama-3.1-8B"),
    ({"model": "llama-3-8b", "task": "grpo", "rollout_batch": 64, "samples_per_prompt": 8, "prompt_len": 128,
      "response_len": 1024, "global_batch_size": 96}, "global_batch_size",
     "96 sequences per optimizer step must divide the step's 512 sequences and be a multiple of micro_batch_size 1"),
]

# Words the Chinese errors keep in English besides ENGLISH_IN_CHINESE: what the user types (workload and
# config.json keys, values, commands) is stripped before the check; these are names and formats
NAMES = {"Hugging", "Face", "Hub", "JSON", "RoPE", "MLP", "Infinity", "ORG", "NAME", "dict", "true", "false", "hub", "id",
         "workload", "max_position_embeddings", "file"}


def english_words(text: str, given: dict[str, object]) -> set[str]:
    """English words in a Chinese text outside ids, fields, quoted values, commands and the allowlists."""
    kb = gpukb.load_kb()
    text = re.sub(r"`[^`]*`|'[^']*'|\S+://\S+|hf:\S+|\S+\.json|\b\w+(?:[./@-]\w+)+", " ", text)
    for word in sorted({*Workload.model_fields, *kb.gpus, *kb.models, *kb.frameworks, *given, *map(str, given.values())},
                       key=len, reverse=True):
        text = text.replace(word, " ")
    words = re.findall(r"(?<![\w.])[A-Za-z][A-Za-z_'-]*", text)
    return {w for w in words if w not in ENGLISH_IN_CHINESE | NAMES}


@pytest.fixture(scope="module")
def glossary():
    return gpukb.load_kb().glossary


@pytest.mark.parametrize(("workload", "field", "english"), BAD, ids=[b[1] for b in BAD])
def test_each_error_reads_in_chinese_and_keeps_its_english(kb, glossary, workload, field, english):
    with pytest.raises(WorkloadError) as caught:
        kb.ask(workload)
    error = caught.value
    assert error.field == field and str(error).startswith(f"{field}: {english}")  # the English, word for word
    assert error.text("en") == str(error)
    zh = error.text("zh")
    assert zh.startswith(f"{field}：") and HAN.search(zh.removeprefix(field)), zh
    assert not english_words(zh, workload), (zh, english_words(zh, workload))
    assert not [a for t in glossary.values() for a in t.avoid_zh if avoided_in(zh, a)], zh


def test_a_config_json_error_names_the_file_and_key_in_chinese(tmp_path, kb):
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 30}', encoding="utf-8")
    for path, key, zh_part in ((bad, "num_attention_heads", "30 不能整除 hidden_size 4096"),
                               (tmp_path / "missing.json", "file", "无法读取：没有这个文件")):
        with pytest.raises(WorkloadError) as caught:
            kb.ask({"model": str(path), "task": "lora"})
        assert caught.value.text("zh") == f"model：{path}：{key}：{zh_part}"
        assert str(caught.value).startswith(f"model: {path}: {key}: ")


def test_every_message_has_both_languages_with_the_same_values():
    names = string.Formatter()
    for key, (en, zh) in MESSAGES.items():
        fields_en = {name for _, name, _, _ in names.parse(en) if name}
        fields_zh = {name for _, name, _, _ in names.parse(zh) if name}
        assert fields_en == fields_zh, key
        assert HAN.search(zh) or not HAN.search(zh.format(**dict.fromkeys(fields_zh, ""))), key  # words, or only values


def test_every_message_id_is_used_and_every_used_id_exists():
    """A raise site names an id of MESSAGES (message() refuses others as it runs); none is left unused."""
    used = set()
    for path in (REPO / "src" / "gpukb").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("message", "Invalid", "ProbeError"):
                # message("id", ...), the workload validators' Invalid("field", "id", ...) and ProbeError("id", ...)
                used.update(a.value for a in node.args[:2] if isinstance(a, ast.Constant) and a.value in MESSAGES)
    assert used == set(MESSAGES)
    with pytest.raises(KeyError):
        message("no-such-message")


def test_pydantic_checks_have_chinese_and_other_checks_name_their_kind():
    error = {"type": "uuid_parsing", "msg": "Input should be a valid UUID", "loc": ("x",)}
    from gpukb.core.messages import pydantic_message

    text = pydantic_message(error)
    assert text.text("en") == "Input should be a valid UUID" and text.text("zh") == "取值无效（uuid_parsing）"
    assert all(HAN.search(zh) for zh in PYDANTIC_ZH.values())


def test_a_knowledge_base_defect_says_so_in_chinese():
    error = KBDefectError(message("policies_missing", missing=["gpu-usable-memory", "pretrain-horizon"]))
    assert str(error) == "knowledge-base defect: kb/policies/ lacks the policies gpu-usable-memory, pretrain-horizon"
    assert error.text("zh") == "知识库缺陷：kb/policies/ 缺少策略 gpu-usable-memory、pretrain-horizon"
    assert isinstance(error, ASK_ERRORS)


def test_the_command_line_prints_errors_in_the_language_asked():
    args = ["ask", "--model", "llama-2-7b", "--task", "lora", "--gpu", "t4-16gb", "--gpu", "t4-16gb"]
    english = runner.invoke(app, args)
    chinese = runner.invoke(app, [*args, "--lang", "zh"])
    assert english.exit_code == chinese.exit_code == 2
    assert english.stderr.startswith("error: gpus.1: 't4-16gb' is listed 2 times")
    assert chinese.stderr.startswith("错误：--gpu：'t4-16gb' 列出了 2 次")  # the flag typed, not the field
    wrong = runner.invoke(app, ["ask", "--model", "llama-2-7b", "--task", "inference", "--framework", "gpt-fast",
                                "--launch", "--lang", "zh"])
    assert wrong.exit_code == 2 and wrong.stderr.startswith(
        "错误：--launch：框架 gpt-fast 没有启动命令；gpukb 只为 vllm、sglang、tensorrt-llm、llama.cpp 写出命令")
    unknown = runner.invoke(app, ["explain", "req.kv-cach", "--lang", "zh"])
    assert unknown.exit_code == 2 and unknown.stderr.startswith("错误：没有哪条规则、论断、GPU、模型或来源的 id 是 'req.kv-cach'")


def test_nothing_fits_says_the_nearest_misses_in_chinese(glossary):
    args = ["ask", "--model", "llama-3-8b", "--task", "full_finetune", "--gpu", "rtx-4090-24gb", "--gpu-count", "1"]
    result = runner.invoke(app, [*args, "--lang", "zh"])
    assert result.exit_code == 3
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("放不下"))  # under the header's assumptions
    assert lines[1].startswith("假设：框架 hf（未指定，取全量微调的默认框架：微调最常通过 Transformers 的 Trainer")
    text = "".join(lines[start:start + 3])
    assert text.startswith("放不下：1 种 GPU 都无法运行 llama-3-8b（全量微调，最多 1 块 GPU）")
    assert "rtx-4090-24gb（最接近的方案：1 块 GPU，每块占用" in text and "gpu_count 改为" in text
    assert "full_finetune" not in text  # the task in words, not its value
    assert not [a for t in glossary.values() for a in t.avoid_zh if avoided_in(text, a)]
    # where stdout is for a reader (--explain), the headline on stderr is in the reader's language too
    explained = runner.invoke(app, [*args, "--lang", "zh", "--explain"])
    assert explained.exit_code == 3 and explained.stderr.startswith("放不下：")
    assert runner.invoke(app, [*args, "--explain"]).stderr.startswith("nothing fits: none of the 1 GPU type(s)")


def test_an_invalid_knowledge_base_is_summed_up_in_chinese(checkout):
    path = checkout / "kb" / "gpus" / "h100-sxm-80gb.yaml"
    if not path.is_file():
        path = next(p for p in (checkout / "kb" / "gpus").rglob("*.yaml"))
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    entry = data[0] if isinstance(data, list) else data
    entry["colour"] = "green"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    english = runner.invoke(app, ["ask", "--model", "llama-2-7b", "--task", "lora", "--root", str(checkout)])
    chinese = runner.invoke(app, ["ask", "--model", "llama-2-7b", "--task", "lora", "--root", str(checkout),
                                  "--lang", "zh"])
    assert english.exit_code == chinese.exit_code == 1
    problem = english.stderr.strip().splitlines()[0]
    assert re.match(r"kb/gpus/\S+\.yaml:\d+:\d+: E011 colour: ", problem), problem
    first, said = chinese.stderr.splitlines()[:2]
    assert first == "知识库（kb/ 或 rules/）无效，共 1 处问题："
    assert said == problem.split(" colour:")[0] + " colour：未知字段（拼写错误，或这类条目没有这个字段）"
    # a value pydantic refuses is said in Chinese; a validator's own sentence stays, under the code's summary
    entry["colour"] = None
    del entry["colour"]
    entry["scale_up_domain"] = "eight"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    lines = runner.invoke(app, ["explain", "llama-2-7b", "--root", str(checkout), "--lang", "zh"]).stderr.splitlines()
    assert re.search(r": E010 scale_up_domain：需要整数$", lines[1]), lines


def test_a_problem_says_in_chinese_what_it_can():
    problem = Problem("kb/x.yaml", 3, 1, "T001", "did not fire", "tests.0")
    assert problem.text("zh") == str(problem) == "kb/x.yaml:3:1: T001 tests.0: did not fire"  # a lint code
    refused = Problem("kb/x.yaml", 3, 1, "E010", "Value error, a source needs url or path", "sources.0")
    assert refused.text("zh") == ("kb/x.yaml:3:1: E010 sources.0：字段取值有误（类型、范围、单位，或来源缺少 url 或 path 等）"
                                  "\n    Value error, a source needs url or path")


def test_messages_nest_and_join_lists_in_the_reader_s_language():
    hint = message("did_you_mean", ids=["a", "b"])
    outer = Message("unknown_gpu", {"gpu": "x", "hint": hint})
    assert outer.text("en") == "unknown GPU 'x'; did you mean a, b? (`gpukb list gpus` shows the catalog)"
    assert outer.text("zh") == "未知 GPU 'x'；是否想写 a、b？（`gpukb list gpus` 列出目录）"


def test_lint_json_stays_english():
    import json

    from gpukb.contrib.reporters import JsonReporter

    problem = Problem("kb/x.yaml", 3, 1, "E011", "unknown field", "colour", "未知字段")
    assert problem.text("zh") == "kb/x.yaml:3:1: E011 colour：未知字段"
    (row,) = json.loads(JsonReporter().render([problem], []))
    assert "message_zh" not in row and row["message"] == "unknown field"


# (arguments after `ask`, what the Chinese error says) for Click's own errors, before any command runs
USAGE = [
    (["--task", "finetune", "--model", "llama-2-7b"],
     "错误：--task 不接受“finetune”；可选值：pretrain、full_finetune、lora、qlora、inference、grpo、ppo、dpo"),
    (["--task", "lora", "--model", "llama-2-7b", "--precision", "bf12"],
     "错误：--precision 不接受“bf12”；可选值：fp32、bf16、fp16、fp8、int8、int4"),
    (["--task", "inference", "--model", "llama-2-7b", "--tpot-ms", "abc"], "错误：--tpot-ms 需要一个数字，而给出的是“abc”"),
    (["--task", "lora", "--model", "llama-2-7b", "--layers=x"], "错误：--layers 需要一个整数，而给出的是“x”"),
    (["--model", "llama-2-7b"], "错误：缺少选项 --task"),
    (["--task", "lora", "--model", "llama-2-7b", "--colour", "3"], "错误：没有 --colour 这个选项"),
]


@pytest.mark.parametrize(("args", "said"), USAGE, ids=[u[1].split("：")[1][:12] for u in USAGE])
def test_click_s_own_errors_read_in_chinese(args, said):
    chinese = runner.invoke(app, ["ask", *args, "--lang", "zh"])
    assert chinese.exit_code == 2 and chinese.stderr.splitlines()[0] == said, chinese.stderr
    assert chinese.stderr.splitlines()[1].startswith("用法：") and "ask --help 查看全部选项" in chinese.stderr
    english = runner.invoke(app, ["ask", *args])  # untouched: Click's and Typer's own words
    assert english.exit_code == 2 and not HAN.search(english.stderr) and english.stderr.strip()


def test_an_unknown_command_and_a_stray_argument_read_in_chinese():
    assert runner.invoke(app, ["bogus", "--lang", "zh"]).stderr.startswith("错误：没有 bogus 这个命令")
    stray = runner.invoke(app, ["ask", "--task", "lora", "--model", "llama-2-7b", "extra", "--lang", "zh"])
    assert stray.exit_code == 2 and stray.stderr.startswith("错误：多出了参数：extra")


@pytest.mark.parametrize(("args", "flag", "field"), [
    (["--task", "lora", "--model", "llama-2-7b", "--gpu", "h100"], "--gpu", "gpus.0"),
    (["--task", "pretrain", "--model", "llama-2-7b", "--tokens", "1T", "--deadline-days", "-1"], "--deadline-days",
     "deadline_days"),
    (["--task", "grpo", "--model", "llama-2-7b"], "--rollout-batch", "rollout_batch"),
    (["--task", "lora", "--model", "llama-2-7b", "--seq-len", "-3"], "--seq-len", "seq_len"),
])
def test_a_workload_error_names_the_flag_the_user_typed(args, flag, field):
    chinese = runner.invoke(app, ["ask", *args, "--lang", "zh"])
    assert chinese.exit_code == 2 and chinese.stderr.startswith(f"错误：{flag}："), chinese.stderr
    assert field not in chinese.stderr.split("：", 2)[1]
    assert runner.invoke(app, ["ask", *args]).stderr.startswith(f"error: {field}: ")  # the English names the field


def test_the_catalog_lists_in_chinese():
    for what, headers in (("gpus", ("名称", "显存", "显存带宽", "售价")), ("models", ("参数量", "层数", "上下文")),
                          ("systems", ("节点间网络", "主机内存", "$/节点小时"))):
        listed = runner.invoke(app, ["list", what, "--lang", "zh"])
        assert listed.exit_code == 0 and all(h in listed.output for h in headers), listed.output[:300]
        assert HAN.search(listed.output.splitlines()[0])
    assert "GPUs (--gpu ID" in runner.invoke(app, ["list", "gpus"]).output
