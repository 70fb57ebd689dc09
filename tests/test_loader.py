"""Every kind of bad knowledge-base input gives an error naming file, line and field."""

import re
from pathlib import Path

import pytest
import yaml

import gpukb
from gpukb.core.errors import KBError


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"fixture text not found in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _problems(checkout: Path) -> list[str]:
    with pytest.raises(KBError) as info:
        gpukb.load_kb(checkout)
    return [str(p) for p in info.value.problems]


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if needle in line)


def test_the_repository_kb_loads(kb):
    manifest = yaml.safe_load((kb.root / "kb" / "manifest.yaml").read_text(encoding="utf-8"))
    # the repository's CHANGELOG (an installed package carries kb/ and rules/, not the changelog)
    changelog = (Path(__file__).resolve().parent.parent / "CHANGELOG.md").read_text(encoding="utf-8")
    newest = re.search(r"^## \[(\d+\.\d+\.\d+)\]", changelog, re.M)
    assert re.fullmatch(r"\d+\.\d+\.\d+", kb.version) and kb.version == manifest["version"] == newest[1]  # type: ignore[index]
    assert {"h100-sxm-80gb", "rtx-4090-24gb", "mi300x-192gb"} <= set(kb.gpus)
    assert kb.gpus["h100-sxm-80gb"].memory == 80e9  # the datasheet's figure
    assert kb.gpus["h100-sxm-80gb"].memory_bytes == 81559 * 2**20  # what the driver reports, used to plan
    assert kb.gpus["h100-sxm-80gb"].memory_bandwidth == 3.35e12
    assert kb.models["llama-3-8b"].params == 8_030_261_248


def test_yaml_syntax_error_names_the_line(checkout):
    path = checkout / "kb/gpus/l4-24gb.yaml"
    _edit(path, "memory_type: GDDR6", "memory_type: [GDDR6")
    (problem,) = _problems(checkout)
    assert problem.startswith("kb/gpus/l4-24gb.yaml:")
    assert "E001 YAML syntax" in problem


def test_unknown_field_names_file_line_and_field(checkout):
    path = checkout / "kb/gpus/h100-sxm-80gb.yaml"
    _edit(path, "memory_type: HBM3", "memory_type: HBM3\nmemroy: 80 GB")
    line = _line_of(path, "memroy:")
    assert _problems(checkout) == [f"kb/gpus/h100-sxm-80gb.yaml:{line}:1: E011 memroy: unknown field"]


def test_missing_field(checkout):
    path = checkout / "kb/gpus/h100-sxm-80gb.yaml"
    _edit(path, "tdp: 700 W\n", "")
    (problem,) = _problems(checkout)
    assert problem == "kb/gpus/h100-sxm-80gb.yaml:2:1: E012 tdp: required field is missing"


def test_bad_unit_names_the_field_and_the_fix(checkout):
    path = checkout / "kb/gpus/h100-sxm-80gb.yaml"
    _edit(path, "memory_bandwidth: 3.35 TB/s", "memory_bandwidth: 3.35 TB")
    line = _line_of(path, "memory_bandwidth:")
    (problem,) = _problems(checkout)
    assert problem.startswith(f"kb/gpus/h100-sxm-80gb.yaml:{line}:1: E010 memory_bandwidth:")
    assert "write it like '3.35 TB/s'" in problem


def test_duplicate_key(checkout):
    path = checkout / "kb/gpus/h100-sxm-80gb.yaml"
    _edit(path, "tdp: 700 W", "tdp: 700 W\ntdp: 350 W")
    (problem,) = _problems(checkout)
    assert f":{_line_of(path, 'tdp: 350 W')}:1: E002 tdp: duplicate key 'tdp'" in problem


def test_duplicate_id_points_at_the_first(checkout):
    text = (checkout / "kb/gpus/l4-24gb.yaml").read_text(encoding="utf-8")
    (checkout / "kb/gpus/copy.yaml").write_text(text, encoding="utf-8")
    (problem,) = _problems(checkout)
    assert problem.startswith("kb/gpus/l4-24gb.yaml:") or problem.startswith("kb/gpus/copy.yaml:")
    assert "E020 id: duplicate id 'l4-24gb' (first defined at" in problem


def test_dangling_reference(checkout):
    path = checkout / "kb/gpus/h100-sxm-80gb.yaml"
    _edit(path, "pcie: pcie-5-x16", "pcie: pcie-9-x16")
    assert _problems(checkout) == [
        f"kb/gpus/h100-sxm-80gb.yaml:{_line_of(path, 'pcie: pcie-9')}:1: E030 pcie: unknown interconnect id 'pcie-9-x16'"]


def test_rule_citing_an_unknown_claim(checkout):
    path = checkout / "rules/requirements/kv-cache.yaml"
    _edit(path, "claims: [art.kv.quadratic,", "claims: [art.kv.cubic,")
    (problem,) = _problems(checkout)
    assert problem.startswith(f"rules/requirements/kv-cache.yaml:{_line_of(path, 'art.kv.cubic')}:")
    assert "E030 claims.0: unknown claim id 'art.kv.cubic'" in problem


@pytest.mark.parametrize(("expression", "message"), [
    ("__import__('os').system('true')", "R002 then.0.compute.bytes: unsafe or invalid expression: only these functions"),
    ("w.__class__", "R002 then.0.compute.bytes: unsafe or invalid expression: name 'w.__class__' may not start"),
    ("per_token * w.seq_len ** 99", "R002 then.0.compute.bytes: unsafe or invalid expression: exponents"),
    ("per_token * w.seqlen", "R003 then.0.compute.bytes: 'workload' facts have no field 'seqlen'"),
    ("per_token * x.seq_len", "R006 then.0.compute.bytes: 'x' in 'x.seq_len' is not an earlier alias"),
])
def test_unsafe_or_wrong_rule_expressions_are_rejected_at_load(checkout, expression, message):
    path = checkout / "rules/requirements/kv-cache.yaml"
    _edit(path, "bytes: per_layer * w.kv_bytes * layer_tokens * w.batch_size", f'bytes: "{expression}"')
    line = _line_of(path, "      bytes: ")
    (problem,) = _problems(checkout)
    assert problem.startswith(f"rules/requirements/kv-cache.yaml:{line}:")
    assert message in problem


def test_rule_condition_on_an_unknown_field(checkout):
    path = checkout / "rules/bottlenecks/capacity-no-fit.yaml"
    _edit(path, "if: fits == false", "if: fit == false")
    (problem,) = _problems(checkout)
    assert f"capacity-no-fit.yaml:{_line_of(path, 'if: fit ==')}:5: R003 when.0.if: 'plan' facts have no field 'fit'" in problem


def test_template_with_format_tricks_is_rejected(checkout):
    path = checkout / "rules/requirements/kv-cache.yaml"
    _edit(path, "The KV cache takes", "The {w.__class__} KV cache takes")
    (problem,) = _problems(checkout)
    assert "R005 explain: braces must enclose a name" in problem


def test_every_problem_is_reported_not_only_the_first(checkout):
    _edit(checkout / "kb/gpus/h100-sxm-80gb.yaml", "tdp: 700 W", "tdp: hot")
    _edit(checkout / "kb/gpus/l4-24gb.yaml", "version: 2", "version: 0")
    _edit(checkout / "rules/requirements/kv-cache.yaml", "kind: kv_cache", "kind: kv_cash")
    problems = _problems(checkout)
    assert len(problems) == 3
    assert [p.split(":")[0] for p in problems] == [
        "kb/gpus/h100-sxm-80gb.yaml", "kb/gpus/l4-24gb.yaml", "rules/requirements/kv-cache.yaml"]


def test_yaml_is_loaded_safely(checkout):
    path = checkout / "kb/gpus/h100-sxm-80gb.yaml"
    _edit(path, "memory_type: HBM3", "memory_type: !!python/object/apply:os.system ['echo pwned']")
    (problem,) = _problems(checkout)
    assert "E001" in problem and "python/object/apply" in problem


def test_missing_knowledge_base(tmp_path):
    with pytest.raises(KBError, match=r"kb/manifest\.yaml missing"):
        gpukb.load_kb(tmp_path)


def test_non_utf8_file_is_a_located_error(checkout):
    (checkout / "kb/gpus/latin1.yaml").write_bytes("name: caf\xe9\n".encode("latin-1"))
    (problem,) = _problems(checkout)
    assert problem.startswith("kb/gpus/latin1.yaml:1:1: E001 not UTF-8 text")


def test_each_compiled_rule_carries_its_citations_from_load(kb):
    for compiled in kb.compiled:
        assert [c.id for c in compiled.citations] == compiled.rule.claims
        assert all(c.text_en == kb.claims[c.id].text_en and c.verdict == kb.claims[c.id].verdict
                   for c in compiled.citations)


def test_a_cloud_price_citing_an_unknown_source_names_its_line(checkout):
    path = checkout / "kb/gpus/l40s-48gb.yaml"
    text = path.read_text(encoding="utf-8")
    old = next(line for line in text.splitlines() if line.strip().startswith("source: apiev-coreweave"))
    _edit(path, old, old.replace("apiev-coreweave", "apiev-nowhere"))
    (problem,) = _problems(checkout)
    assert problem.startswith(f"kb/gpus/l40s-48gb.yaml:{_line_of(path, 'apiev-nowhere')}:")
    assert "E030 cloud_prices." in problem and "unknown source id 'apiev-nowhere" in problem


def test_libyaml_reads_every_yaml_file_of_the_repository_as_the_reference_loader_does(monkeypatch):
    from gpukb.knowledge import yamlpos

    repo = Path(__file__).resolve().parent.parent
    files = sorted(p for top in ("kb", "rules", "site", "tests") for p in (repo / top).rglob("*.yaml"))
    fast = [yamlpos.load_located(f, f.name) for f in files]
    monkeypatch.setattr(yamlpos, "CParser", None)
    for path, (doc, problems) in zip(files, fast, strict=True):
        reference, expected = yamlpos.load_located(path, path.name)
        assert problems == expected, path
        if reference is None:
            assert doc is None, path
        else:
            assert doc is not None and doc.data == reference.data and doc.positions == reference.positions, path
