"""The mutation check (tools/mutations.py) stays runnable: each mutation still finds its snippet."""

import importlib.util
import shlex
import sys

from kbfiles import REPO

spec = importlib.util.spec_from_file_location("mutations", REPO / "tools" / "mutations.py")
assert spec and spec.loader
mutations = importlib.util.module_from_spec(spec)
sys.modules["mutations"] = mutations  # dataclasses look their module up there
spec.loader.exec_module(mutations)


def test_each_mutation_changes_exactly_one_place_and_names_existing_tests():
    ids = [m.id for m in mutations.MUTATIONS]
    assert len(ids) == len(set(ids))
    for m in mutations.MUTATIONS:
        text = (REPO / m.file).read_text(encoding="utf-8")
        assert text.count(m.old) == 1, f"{m.id}: the snippet is no longer in {m.file} exactly once"
        assert m.old != m.new
        files = [t for t in m.tests if t.startswith("tests/")]
        assert files and all((REPO / t).is_file() for t in files), f"{m.id}: {shlex.join(m.tests)}"
