"""Models read from a Hugging Face config.json: exact parameter counts, the KV cache per attention
type, where the answer says the model came from, and clear errors for bad files."""

import json
import sys
import types
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpukb.cli import app
from gpukb.core.errors import WorkloadError
from gpukb.knowledge.hfconfig import MAX_BYTES, ConfigError, checkpoint_quantization, load_model

HF = Path(__file__).parent / "fixtures" / "hf"

# (total, active) parameters. Where the source gives an exact figure, the derived count must equal
# it; the rest must round to the published figure. Sources:
PUBLISHED = {
    # the safetensors totals of the Hub repositories, as in tests/test_catalog.py
    "llama-2-7b": (6_738_415_616, None),
    "mistral-7b-v0.1": (7_241_732_096, None),
    "mixtral-8x7b-v0.1": (46_702_792_704, 12_879_925_248),
    "qwen2.5-7b": (7_615_616_512, None),
    # the same architecture as Meta-Llama-3-8B (only rope_scaling differs): 8,030,261,248
    "llama-3.1-8b": (8_030_261_248, None),
    # Pythia model card (EleutherAI/pythia, "Total params" of pythia-1.4b); its non-embedding
    # 1,208,602,624 is this less both 50304 x 2048 embedding matrices
    "pythia-1.4b": (1_414_647_808, None),
}
ROUNDED = {
    # Qwen3-8B model card: "Number of Parameters: 8.2B" (6.95B non-embedding); q/k norms included
    "qwen3-8b": (8_190_735_360, 8.2e9, 1e8),
    # Gemma 2 9B on the Hub: 9.24B (tied embeddings, head_dim 256, four norms per layer)
    "gemma-2-9b": (9_241_705_984, 9.24e9, 1e7),
    # Phi-3 technical report and model card: 3.8B (fused qkv and gate_up count as separate matrices)
    "phi-3-mini-4k-instruct": (3_821_079_552, 3.8e9, 1e8),
    # DeepSeek-V2-Lite model card and the Hub's safetensors total: 15.7B
    "deepseek-v2-lite": (15_706_484_224, 15.7e9, 1e8),
    # DeepSeek-V3 technical report: 671B total. The Hub's 685B also counts the 14B multi-token
    # prediction module (num_nextn_predict_layers), which next-token inference does not run.
    "deepseek-v3": (671_026_419_200, 671e9, 1e9),
    # Qwen3-4B model card: "Number of Parameters: 4.0B" (tied embeddings); the AWQ checkpoint's architecture
    "qwen3-4b-awq": (4_022_468_096, 4.0e9, 1e8),
}


@pytest.mark.parametrize(("folder", "expected"), sorted(PUBLISHED.items()))
def test_parameter_counts_equal_the_published_totals(folder, expected):
    model = load_model(HF / folder / "config.json")
    assert (model.params, model.active_params) == expected


@pytest.mark.parametrize(("folder", "expected"), sorted(ROUNDED.items()))
def test_parameter_counts_round_to_the_published_figures(folder, expected):
    exact, published, unit = expected
    model = load_model(HF / folder)
    assert model.params == exact
    assert round(model.params / unit) == round(published / unit)


def test_active_parameters_of_deepseek_count_shared_and_routed_experts():
    lite, v3 = load_model(HF / "deepseek-v2-lite"), load_model(HF / "deepseek-v3")
    # 26 MoE layers x (2 shared + 6 of 64 routed experts of 1408) after one dense layer
    assert lite.active_params == 2_661_150_208
    # the report's 37B activated: 1 shared + 8 of 256 routed experts in 58 MoE layers
    assert v3.active_params == 37_552_297_472
    assert abs(v3.active_params / 37e9 - 1) < 0.02


def test_catalog_entries_and_their_configs_agree(kb):
    for folder, model_id in (("llama-2-7b", "llama-2-7b"), ("mixtral-8x7b-v0.1", "mixtral-8x7b"),
                             ("qwen2.5-7b", "qwen2.5-7b"), ("mistral-7b-v0.1", "mistral-7b")):
        read, catalog = load_model(HF / folder), kb.models[model_id]
        assert (read.params, read.active_params) == (catalog.params, catalog.active_params)
    # the catalog entries copied from these configs agree field by field
    ignored = {"id", "version", "name", "sources", "notes", "hf_repo"}
    for folder, model_id in (("llama-3.1-8b", "llama-3.1-8b"), ("gemma-2-9b", "gemma-2-9b"),
                             ("phi-3-mini-4k-instruct", "phi-3-mini"), ("qwen3-8b", "qwen3-8b")):
        read, catalog = load_model(HF / folder), kb.models[model_id]
        assert read.model_dump(exclude=ignored) == catalog.model_dump(exclude=ignored), model_id


def kv(kb, model, **workload):
    answer = kb.ask({"model": str(model), "task": "inference", "gpus": ["h200-sxm-141gb"], **workload})
    step = next(s for s in answer.trace if s.rule.startswith("req.kv-cache@"))
    return answer, {v["name"]: v["value"] for v in step.values}


def test_mla_caches_the_latent_and_the_rotary_key(kb):
    answer, values = kv(kb, HF / "deepseek-v2-lite", seq_len=32768)
    assert values["per_token"] == 27 * (512 + 64) * 2  # not 2 x 16 heads x 192 per layer
    assert answer.memory.kv_cache == 27 * (512 + 64) * 2 * 32768


def test_sliding_window_layers_keep_at_most_the_window(kb):
    answer, _ = kv(kb, HF / "mistral-7b-v0.1", seq_len=8192)
    assert answer.memory.kv_cache == 32 * 2 * 8 * 128 * 2 * 4096  # every layer slides over 4096 tokens
    answer, _ = kv(kb, HF / "gemma-2-9b", seq_len=8192)
    # 21 local layers keep 4096 tokens, 21 global layers all 8192
    assert answer.memory.kv_cache == 2 * 8 * 256 * 2 * (21 * 4096 + 21 * 8192)
    answer, _ = kv(kb, HF / "qwen2.5-7b", seq_len=8192)  # use_sliding_window false
    assert answer.memory.kv_cache == 28 * 2 * 4 * 128 * 2 * 8192


def test_the_answer_says_where_the_model_came_from(kb):
    answer, _ = kv(kb, HF / "llama-2-7b" / "config.json")
    assert answer.workload.model == "meta-llama/Llama-2-7b-hf"  # the config's _name_or_path
    assert answer.workload.config_file == str(HF / "llama-2-7b" / "config.json")
    catalog = kb.ask({"model": "llama-2-7b", "task": "inference", "gpus": ["h200-sxm-141gb"]})
    assert answer.memory == catalog.memory
    # fields only some architectures have stay out of catalog answers
    assert not {"config_file", "attention", "sliding_layers"} & set(json.loads(catalog.model_dump_json())["workload"])
    unnamed, _ = kv(kb, HF / "gemma-2-9b")
    assert unnamed.workload.model == str(HF / "gemma-2-9b" / "config.json")  # no _name_or_path: the file


def test_command_line_accepts_a_path():
    result = CliRunner().invoke(app, ["ask", "--model", str(HF / "qwen3-8b"), "--task", "inference", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["workload"]["params"] == 8_190_735_360


def test_hub_reference_downloads_only_the_config(kb, monkeypatch):
    calls = []

    def hf_hub_download(repo_id, filename):
        calls.append((repo_id, filename))
        return str(HF / "llama-3.1-8b" / "config.json")

    monkeypatch.setitem(sys.modules, "huggingface_hub", types.SimpleNamespace(hf_hub_download=hf_hub_download))
    answer = kb.ask({"model": "hf:meta-llama/Llama-3.1-8B", "task": "inference", "gpus": ["h200-sxm-141gb"]})
    assert calls == [("meta-llama/Llama-3.1-8B", "config.json")]
    assert (answer.workload.model, answer.workload.params) == ("meta-llama/Llama-3.1-8B", 8_030_261_248)


def test_hub_reference_without_the_extra_says_how_to_install_it(kb, monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import fails
    with pytest.raises(WorkloadError, match=r"pip install 'gpukb\[hub\]'"):
        kb.ask({"model": "hf:meta-llama/Llama-3.1-8B", "task": "inference"})
    with pytest.raises(WorkloadError, match="hf:ORG/NAME"):
        kb.ask({"model": "hf:../../etc", "task": "inference"})


def write(tmp_path, **changes):
    config = json.loads((HF / "llama-3.1-8b" / "config.json").read_text())
    config.update(changes)
    for key, value in changes.items():
        if value is ...:
            del config[key]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


@pytest.mark.parametrize(("changes", "key", "says"), [
    ({"num_attention_heads": 30, "num_key_value_heads": 30}, "num_attention_heads", "does not divide hidden_size 4096"),
    ({"num_key_value_heads": 7}, "num_key_value_heads", "does not divide num_attention_heads"),
    ({"hidden_size": -4096}, "hidden_size", "must be between 1"),
    ({"num_hidden_layers": 32.5}, "num_hidden_layers", "must be an integer"),
    ({"vocab_size": ...}, "vocab_size", "missing"),
    ({"model_type": "bert"}, "model_type", "supported: llama, mistral, mixtral, qwen2, qwen3, gemma"),
    ({"model_type": ...}, "model_type", "missing; supported: llama"),
    ({"tie_word_embeddings": "no"}, "tie_word_embeddings", "true or false"),
    ({"attention_bias": True}, "attention_bias", "not supported"),
    ({"rope_scaling": {"rope_type": "linear", "factor": "4"}}, "rope_scaling", "factor must be a number"),
    ({"rope_scaling": {"type": "yarn", "factor": 4, "original_max_position_embeddings": 0}}, "rope_scaling",
     "original_max_position_embeddings must be an integer"),
    ({"rope_scaling": [8]}, "rope_scaling", "must be an object"),
])
def test_bad_configs_name_the_key_and_the_file(tmp_path, changes, key, says):
    path = write(tmp_path, **changes)
    with pytest.raises(ConfigError) as caught:
        load_model(path)
    assert (caught.value.key, caught.value.path) == (key, str(path))
    assert says in str(caught.value) and str(path) in str(caught.value)


@pytest.mark.parametrize(("folder", "changes", "context"), [
    ("llama-3.1-8b", {}, 131072),  # rope_type llama3: max_position_embeddings already is the extended length
    ("deepseek-v3", {}, 163840),  # YaRN: original_max_position_embeddings 4096 x factor 40
    ("qwen2.5-7b", {"max_position_embeddings": 32768, "rope_scaling": {"type": "yarn", "factor": 4.0,
                                                                         "original_max_position_embeddings": 32768}}, 131072),
    ("qwen2.5-7b", {"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": 2.0}}, 8192),
    ("qwen3-8b", {}, 40960),
])
def test_the_context_length_is_the_one_a_serving_engine_derives(tmp_path, folder, changes, context):
    config = json.loads((HF / folder / "config.json").read_text()) | changes
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert load_model(tmp_path / "config.json").context_length == context


def test_bad_files_are_errors_not_tracebacks(tmp_path):
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "broken.json").write_text("{")
    (tmp_path / "huge.json").write_text(" " * (MAX_BYTES + 1))
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    for name, says in (("list.json", "JSON object"), ("broken.json", "not valid JSON"),
                       ("huge.json", "larger than"), ("deep.json", "not valid JSON"),
                       ("empty", "cannot read"), ("absent.json", "cannot read")):
        (tmp_path / "empty").mkdir(exist_ok=True)
        with pytest.raises(ConfigError, match=says):
            load_model(tmp_path / name)


def test_command_line_reports_a_bad_config_without_a_traceback(tmp_path):
    path = write(tmp_path, hidden_size=0)
    result = CliRunner().invoke(app, ["ask", "--model", str(path), "--task", "inference"])
    assert result.exit_code == 2
    assert f"{path}: hidden_size: must be between 1" in result.output and "Traceback" not in result.output


def test_deepseek_moe_fields_are_checked(tmp_path):
    config = json.loads((HF / "deepseek-v2-lite" / "config.json").read_text())
    for key, value, says in (("first_k_dense_replace", 27, "leaves no MoE layer"),
                             ("moe_layer_freq", 2, "every layer"), ("kv_lora_rank", None, "missing"),
                             ("num_experts_per_tok", 65, "exceeds the 64 experts")):
        path = tmp_path / "config.json"
        path.write_text(json.dumps({**config, key: value}))
        with pytest.raises(ConfigError, match=says):
            load_model(path)


def test_unknown_names_still_suggest_catalog_ids(kb):
    with pytest.raises(WorkloadError, match=r"did you mean llama-2-7b.*config\.json"):
        kb.ask({"model": "llama-2-7", "task": "inference"})


def test_lora_of_a_latent_attention_model_is_refused_not_mis_sized(kb):
    with pytest.raises(WorkloadError, match="task: lora adapters are not sized"):
        kb.ask({"model": str(HF / "deepseek-v2-lite"), "task": "lora"})
    answer = kb.ask({"model": str(HF / "deepseek-v2-lite"), "task": "full_finetune", "gpus": ["h200-sxm-141gb"]})
    assert answer.memory.weights == 2 * 15_706_484_224


def test_a_checkpoint_s_fp8_weights_size_the_served_model(kb):
    """DeepSeek-V3 publishes FP8 weights only (quantization_config quant_method fp8): served without a precision in
    the ask, its 671,026,419,200 parameters take a byte each, not two, and the answer says why."""
    fp8 = kb.ask({"model": str(HF / "deepseek-v3"), "task": "inference", "gpus": ["h200-sxm-141gb"]})
    assert fp8.workload.precision == "fp8" and fp8.workload.checkpoint_precision == "fp8"
    assert fp8.memory.weights == 671_026_419_200
    assert any(a.startswith("precision not given: fp8, as config.json declares FP8 e4m3 weights in 128 x 128 blocks")
               for a in fp8.workload.assumptions)
    (option,) = fp8.options
    assert option.count == 8  # one HGX H200 node, as DeepSeek-V3 is served in FP8
    assert "--quantization" not in option.launch["vllm"]  # the engine reads the checkpoint's own format
    asked = kb.ask({"model": str(HF / "deepseek-v3"), "task": "inference", "precision": "bf16", "gpus": ["h200-sxm-141gb"]})
    assert asked.workload.precision == "bf16" and asked.memory.weights == 2 * 671_026_419_200
    assert any("sized at precision bf16 (as asked)" in a for a in asked.workload.assumptions)
    assert asked.options[0].count == 16


def test_an_awq_checkpoint_is_sized_at_four_bits_with_its_embeddings_in_16(kb):
    answer = kb.ask({"model": str(HF / "qwen3-4b-awq"), "task": "inference", "gpus": ["l4-24gb"]})
    embedding = 151_936 * 2560  # tied: one matrix, left in 16 bits as AWQ leaves it
    assert answer.workload.precision == "int4"
    assert answer.memory.weights == (4_022_468_096 - embedding) * 4.25 / 8 + embedding * 2  # kb/dtypes int4: 4.25 bits
    assert any("AWQ int4 weights, a scale per 128 weights" in a for a in answer.workload.assumptions)


def test_training_a_quantized_checkpoint_says_which_precision_it_sized(kb):
    answer = kb.ask({"model": str(HF / "deepseek-v3"), "task": "full_finetune", "gpus": ["h100-sxm-80gb"]})
    assert answer.workload.precision == "bf16"
    assert any("sized at precision bf16 (the default for training), the weights loaded dequantized" in a
               for a in answer.workload.assumptions)
    plain = kb.ask({"model": str(HF / "llama-3.1-8b"), "task": "inference", "gpus": ["h100-sxm-80gb"]})
    assert plain.workload.precision == "bf16" and plain.workload.checkpoint_precision is None
    assert "checkpoint_precision" not in plain.model_dump_json()


@pytest.mark.parametrize(("quantization", "precision"), [
    # transformers' quantization config classes, as they serialize into config.json
    ({"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}, "fp8"),
    ({"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0, "modules_to_not_convert": ["lm_head"]}, "fp8"),
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}, "int4"),
    ({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}, "int4"),
    ({"quant_method": "gptq", "bits": 8, "group_size": 128, "desc_act": False, "sym": True}, "int8"),
    ({"quant_method": "bitsandbytes", "_load_in_4bit": True, "_load_in_8bit": False, "load_in_4bit": True,
      "load_in_8bit": False, "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True}, "int4"),
    ({"quant_method": "bitsandbytes", "load_in_8bit": True, "llm_int8_threshold": 6.0}, "int8"),
    ({"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {"group_0": {
        "targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}}, "fp8"),
    ({"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": {
        "targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}}}},
     "int4"),
    ({"quant_method": "compressed-tensors", "format": "int-quantized", "config_groups": {"group_0": {
        "targets": ["Linear"], "weights": {"num_bits": 8, "type": "int", "strategy": "channel"}}}}, "int8"),
])
def test_each_quantization_method_names_its_weights_precision(kb, tmp_path, quantization, precision):
    path = write(tmp_path, quantization_config=quantization)
    assert checkpoint_quantization(json.loads(path.read_text()), str(path)).precision == precision
    answer = kb.ask({"model": str(path), "task": "inference", "gpus": ["h100-sxm-80gb"]})
    assert answer.workload.precision == precision


@pytest.mark.parametrize(("quantization", "key", "says"), [
    ({"quant_method": "exl3", "bits": 4.5}, "quantization_config.quant_method", "'exl3' is not a weight format"),
    ({"quant_method": "gptq", "bits": 3, "group_size": 128}, "quantization_config.bits", "3-bit weights"),
    ({"quant_method": "bitsandbytes"}, "quantization_config.load_in_4bit", "bitsandbytes"),
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "float"}}}},
     "quantization_config.config_groups.group_0.weights.num_bits", "compressed-tensors float"),
    ("fp8", "quantization_config", "must be an object"),
])
def test_a_quantization_config_gpukb_cannot_size_is_an_error_naming_the_key(kb, tmp_path, quantization, key, says):
    path = write(tmp_path, quantization_config=quantization)
    with pytest.raises(ConfigError) as caught:
        kb.ask({"model": str(path), "task": "inference"})
    assert caught.value.key == key and says in str(caught.value) and str(path) in str(caught.value)


def test_a_format_gpukb_cannot_size_is_sized_at_the_precision_the_ask_gives(kb, tmp_path):
    path = write(tmp_path, quantization_config={"quant_method": "exl3", "bits": 4.5})
    answer = kb.ask({"model": str(path), "task": "inference", "precision": "int4", "gpus": ["h100-sxm-80gb"]})
    assert answer.workload.precision == "int4" and answer.workload.checkpoint_precision is None
