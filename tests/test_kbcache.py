"""The on-disk copy of the packaged knowledge base: same answers, and never read from where anyone
else could have written it."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

import gpukb
from gpukb import kbcache

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


def test_a_file_others_may_write_is_neither_read_nor_replaced(folder: Path) -> None:
    root = gpukb.packaged_root()
    _, fresh = kbcache.read(root)
    assert fresh is not None
    kbcache.write(fresh, gpukb.load_kb(root))
    fresh.chmod(0o666)
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
