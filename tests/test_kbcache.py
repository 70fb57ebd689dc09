"""The on-disk copy of the packaged knowledge base: same answers, and never read from where anyone
else could have written it."""

from __future__ import annotations

import importlib
import io
import os
import pickle
from pathlib import Path

import pytest

import gpukb
from gpukb.knowledge import kbcache

WORKLOAD = {"model": "llama-2-7b", "task": "lora", "gpus": ["a100-sxm-80gb", "l40s-48gb"]}


@pytest.fixture()
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.delenv("GPUKB_NO_CACHE", raising=False)
    monkeypatch.setenv("GPUKB_CACHE_DIR", str(where))
    return where


def test_a_copy_is_written_then_read_and_answers_the_same(folder: Path) -> None:
    root = gpukb.packaged_root()
    kb, fresh = kbcache.read(root)
    assert kb is None and fresh is not None
    loaded = gpukb.load_kb(root)
    kbcache.write(fresh, loaded)
    assert folder.stat().st_mode & 0o777 == 0o700 and fresh.stat().st_mode & 0o777 == 0o600
    cached, _ = kbcache.read(root)
    assert cached is not None and cached.content_hash == loaded.content_hash
    assert cached.ask(WORKLOAD).model_dump_json() == loaded.ask(WORKLOAD).model_dump_json()
    assert [c.key for c in cached.active_rules] == [c.key for c in loaded.active_rules]


def test_off_when_asked(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    monkeypatch.setenv("GPUKB_NO_CACHE", "1")
    assert kbcache.read(gpukb.packaged_root()) == (None, None)
    assert not folder.exists()


def test_a_folder_others_may_write_is_not_used(folder: Path) -> None:
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    assert kbcache.read(gpukb.packaged_root()) == (None, None)


def test_a_folder_that_is_a_link_is_not_used(folder: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    folder.symlink_to(target)
    assert kbcache.read(gpukb.packaged_root()) == (None, None)


@pytest.mark.parametrize("spoil", ["writable", "readable", "fifo"])
def test_a_file_others_may_use_or_that_is_not_a_file_is_neither_read_nor_replaced(folder: Path, spoil: str) -> None:
    root = gpukb.packaged_root()
    _, fresh = kbcache.read(root)
    assert fresh is not None
    kbcache.write(fresh, gpukb.load_kb(root))
    if spoil == "fifo":
        fresh.unlink()
        os.mkfifo(fresh, 0o600)  # opened without waiting for a writer
    else:
        fresh.chmod(0o666 if spoil == "writable" else 0o640)
    assert kbcache.read(root) == (None, None)


def test_a_planted_pickle_naming_other_code_is_refused(folder: Path) -> None:
    root = gpukb.packaged_root()
    _, fresh = kbcache.read(root)
    assert fresh is not None
    fd = os.open(fresh, os.O_WRONLY | os.O_CREAT, 0o600)
    with os.fdopen(fd, "wb") as handle:
        pickle.dump(os.getcwd, handle)  # a callable outside a knowledge base's classes
    kb, again = kbcache.read(root)
    assert kb is None and again == fresh  # treated as a stale copy: loaded from the files, then replaced


def test_a_changed_knowledge_base_misses(folder: Path, checkout: Path) -> None:
    before = kbcache.key(checkout)
    rule = next((checkout / "rules" / "requirements").glob("*.yaml"))
    rule.write_text(rule.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert kbcache.key(checkout) != before


def _globals_of(payload: bytes) -> set[tuple[str, str]]:
    """Every (module, name) a pickle asks the unpickler for."""
    named: set[tuple[str, str]] = set()

    class Recording(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> object:
            named.add((module, name))
            return super().find_class(module, name)

    Recording(io.BytesIO(payload)).load()
    return named


def test_the_allowlist_is_exactly_what_a_knowledge_base_pickles_as(kb: gpukb.KnowledgeBase) -> None:
    """Computed from the packaged knowledge base: a name missing would make every copy a miss, a name
    too many would be something a planted file could call. A new class in the knowledge base fails here
    with the pair to add to ALLOWED. Beyond them, ALLOWED holds every syntax class an expression may use
    (expr.SYNTAX_NODES), so that a rule with an operator the packaged rules do not use yet ('or', 'not')
    is cached too."""
    from gpukb.estimate.validation import bands_of
    from gpukb.language.expr import SYNTAX_NODES

    bands_of(kb)  # the copy is written with its error bands (packaged._load_packaged)
    named = _globals_of(pickle.dumps(kb, protocol=pickle.HIGHEST_PROTOCOL))
    syntax = {("ast", node.__name__) for node in SYNTAX_NODES}
    assert named | syntax == kbcache.ALLOWED, (f"missing: {sorted(named - kbcache.ALLOWED)}, "
                                               f"unused: {sorted(kbcache.ALLOWED - named - syntax)}")
    assert not any("." in name for _, name in kbcache.ALLOWED)
    functions = {(module, name) for module, name in kbcache.ALLOWED
                 if not isinstance(getattr(importlib.import_module(module), name), type)}
    assert functions == {("gpukb.language.expr", "_restore")}  # builds an Expr from a tree it interprets, never runs


def _genuine(folder: Path) -> tuple[Path, bytes]:
    root = gpukb.packaged_root()
    _, fresh = kbcache.read(root)
    assert fresh is not None
    kbcache.write(fresh, gpukb.load_kb(root))
    return fresh, (folder / "key").read_bytes()


def test_the_key_is_private_random_and_kept(folder: Path) -> None:
    _, secret = _genuine(folder)
    key_file = folder / "key"
    assert len(secret) == 32 and key_file.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in folder.iterdir() if p.name.startswith("key")] == ["key"]  # no temporary left
    cached, _ = kbcache.read(gpukb.packaged_root())
    assert cached is not None and key_file.read_bytes() == secret


@pytest.mark.parametrize("spoil", ["loose", "short", "link", "fifo"])
def test_a_key_that_is_not_private_turns_the_copy_off(folder: Path, tmp_path: Path, spoil: str) -> None:
    fresh, secret = _genuine(folder)
    key_file = folder / "key"
    if spoil == "loose":
        key_file.chmod(0o640)
    elif spoil == "short":
        key_file.write_bytes(secret[:16])
    else:
        key_file.unlink()
        if spoil == "link":
            (tmp_path / "mine").write_bytes(secret)
            (tmp_path / "mine").chmod(0o600)
            key_file.symlink_to(tmp_path / "mine")
        else:
            os.mkfifo(key_file, 0o600)  # opened without waiting for a writer
    assert kbcache.read(gpukb.packaged_root()) == (None, None)
    kbcache.write(fresh, gpukb.load_kb(gpukb.packaged_root()))
    assert kbcache.read(gpukb.packaged_root()) == (None, None)


def test_a_copy_with_a_wrong_mac_or_another_name_is_not_loaded(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = gpukb.packaged_root()
    fresh, _ = _genuine(folder)
    data = bytearray(fresh.read_bytes())
    data[0] ^= 1  # one bit of the MAC: the pickle is a genuine knowledge base, only the MAC refuses it
    fresh.write_bytes(bytes(data))
    assert kbcache.read(root) == (None, fresh)
    fresh, _ = _genuine(folder)
    other = fresh.with_name("kb-" + "0" * 64 + ".pickle")  # the MAC covers the name: no replaying a stale copy
    os.rename(fresh, other)
    monkeypatch.setattr(kbcache, "key", lambda _root: "0" * 64)
    assert kbcache.read(root) == (None, other)


def test_no_home_turns_the_copy_off(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GPUKB_NO_CACHE", "GPUKB_CACHE_DIR", "XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(os.path, "expanduser", lambda path: path)  # what a uid without a passwd entry gets
    assert kbcache.folder() is None
    assert kbcache.read(gpukb.packaged_root()) == (None, None)
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # the XDG spec: ignored unless absolute
    assert kbcache.folder() is None
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere/cache")
    assert kbcache.folder() == Path("/somewhere/cache/gpukb")


def test_every_operator_an_expression_may_use_survives_the_copy(folder: Path, checkout: Path) -> None:
    """A rule using 'or', 'not', a unary minus, '//' or '**' (none of which the packaged rules use) was a copy
    the unpickler refused: every load of such a knowledge base read its files again."""
    import yaml

    rule = checkout / "rules" / "requirements" / "adapters.yaml"
    data = yaml.safe_load(rule.read_text(encoding="utf-8"))
    data["then"][0]["compute"]["params"] = (f"({data['then'][0]['compute']['params']}) * (1 if (w.layers > 0 or not "
                                            "w.layers < 0) else -1) + (w.layers // 2) ** 2 - (w.layers // 2) ** 2")
    rule.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    first = gpukb.load_kb(checkout)  # from the files
    assert first.rules["req.adapters"].then[0].compute["params"].startswith("(")
    _, fresh = kbcache.read(checkout)
    assert fresh is not None
    kbcache.write(fresh, first)
    cached, again = kbcache.read(checkout)
    assert cached is not None and again is None  # read back from the copy, not refused as a stale one
    workload = {"model": "llama-2-7b", "task": "lora"}
    assert cached.ask(workload).model_dump_json() == first.ask(workload).model_dump_json()
