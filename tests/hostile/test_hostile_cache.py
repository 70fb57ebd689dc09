"""Planted copies of the knowledge base (kbcache): a file in the cache folder that names code to call,
or that this user's gpukb did not write, is never unpickled, and the ask answers from the files.

Each gadget is first shown to run code when unpickled plainly, so its refusal is what the test sees.
Every load runs in a child process with a time limit."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest
from child import run_child

import gpukb
from gpukb.knowledge import kbcache

# An ask that cannot use the copy reads kb/ and derives the error bands from every measurement before it answers:
# 1.44-1.49 s of CPU time on this project's 2-core machine when idle (2026-12-06), and 2.07 s once under a full
# parallel test run, past the 2 s every other child is held to. A hang or a gadget's loop is still caught.
COLD_ASK = 4.0
ASK = ["-c", "from gpukb.cli import app; app()", "ask", "--model", "llama-2-7b", "--task", "lora", "--gpu", "l4-24gb"]
# prints: no copy loaded, a fresh one to be written, how many names the unpickler was asked for
READ = ["-c", "from gpukb import packaged_root\nfrom gpukb.knowledge import kbcache\n"
              "asked = []\n"
              "find = kbcache._Unpickler.find_class\n"
              "kbcache._Unpickler.find_class = lambda self, *name: asked.append(name) or find(self, *name)\n"
              "kb, fresh = kbcache.read(packaged_root())\n"
              "print(kb is None, fresh is not None, len(asked))"]

# (module, name, arguments): each makes the file `{marker}` when called
GADGETS = {
    "pathlib + os.system": ("pathlib", "os.system", ("touch {marker}",)),  # a dotted name in an allowed module
    "pydantic.networks + builtins.exec": ("pydantic.networks", "_dataclasses.builtins.exec", ("open({marker!r}, 'w')",)),
    "gpukb.knowledge.versions._git": ("gpukb.knowledge.versions", "_git", ("{folder}", "-c", "alias.x=!touch {marker}", "x")),
    "builtins.eval": ("builtins", "eval", ("open({marker!r}, 'w')",)),
    "builtins.exec": ("builtins", "exec", ("open({marker!r}, 'w')",)),
    "os.system": ("os", "system", ("touch {marker}",)),
}


def _text(value: str) -> bytes:
    data = value.encode()
    return b"X" + struct.pack("<I", len(data)) + data  # BINUNICODE


def gadget(case: str, marker: Path) -> bytes:
    """A protocol 4 pickle that calls the case's function (looked up by STACK_GLOBAL) on its arguments."""
    module, name, arguments = GADGETS[case]
    filled = [a.format(marker=str(marker), folder=str(marker.parent)) for a in arguments]
    return (b"\x80\x04" + _text(module) + _text(name) + b"\x93"  # PROTO 4, STACK_GLOBAL
            + b"(" + b"".join(_text(a) for a in filled) + b"tR.")  # MARK, args, TUPLE, REDUCE, STOP


def _needs(case: str) -> None:
    if "git" in case and shutil.which("git") is None:
        pytest.skip("git is not installed")


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    child = {k: v for k, v in os.environ.items() if not k.startswith("GPUKB_")}
    return {**child, "GPUKB_CACHE_DIR": str(tmp_path / "cache")}


def _plant(env: dict[str, str], payload: bytes, mac: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`payload` as the copy the next ask reads, with a MAC made with the user's key or forged."""
    monkeypatch.delenv("GPUKB_NO_CACHE")
    monkeypatch.setenv("GPUKB_CACHE_DIR", env["GPUKB_CACHE_DIR"])
    _, path = kbcache.read(gpukb.packaged_root())  # makes the folder and the key, names the file
    assert path is not None
    secret = (path.parent / "key").read_bytes()
    tag = kbcache._mac(secret, path, payload) if mac == "valid" else os.urandom(32)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(tag + payload)
    return path


@pytest.mark.parametrize("case", GADGETS)
def test_each_gadget_runs_code_when_unpickled_plainly(case: str, tmp_path: Path) -> None:
    _needs(case)
    marker = tmp_path / "ran"
    (tmp_path / "gadget").write_bytes(gadget(case, marker))
    done = run_child(["-c", "import pickle; pickle.loads(open('gadget', 'rb').read())"], tmp_path)
    assert marker.exists(), done.stderr


@pytest.mark.parametrize("mac", ["forged", "valid"])
@pytest.mark.parametrize("case", GADGETS)
def test_a_planted_gadget_never_runs(case: str, mac: str, tmp_path: Path, env: dict[str, str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Forged: refused by the MAC, before the unpickler sees a byte. Valid (the key was stolen or
    restored with the folder): refused by the allowlist, which resolves no dotted name."""
    _needs(case)
    marker = tmp_path / "ran"
    _plant(env, gadget(case, marker), mac, monkeypatch)
    done = run_child(READ, tmp_path, env)
    assert done.returncode == 0, done.stderr
    loaded, fresh, asked = done.stdout.split()
    assert (loaded, fresh) == ("True", "True")  # no copy: loaded from the files and written afresh
    assert (asked == "0") == (mac == "forged")
    assert not marker.exists()


def test_the_ask_answers_past_a_planted_copy_and_replaces_it(tmp_path: Path, env: dict[str, str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "ran"
    path = _plant(env, gadget("pathlib + os.system", marker), "valid", monkeypatch)
    done = run_child(ASK, tmp_path, env, cpu_seconds=COLD_ASK)
    assert done.returncode == 0 and "l4-24gb" in done.stdout, done.stderr
    assert not marker.exists() and "Traceback" not in done.stderr
    cached, fresh = kbcache.read(gpukb.packaged_root())
    assert cached is not None and fresh is None  # the planted file was replaced by a genuine copy
    assert path.exists()


def test_the_ask_answers_without_a_home(tmp_path: Path) -> None:
    """HOME unset and a uid with no passwd entry (what expanduser then sees is simulated): no copy, an answer."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUKB_", "XDG_")) and k != "HOME"}
    no_passwd = ("import pwd\n"
                 "def missing(uid): raise KeyError(f'getpwuid(): uid not found: {uid}')\n"
                 "pwd.getpwuid = missing\n"
                 "from gpukb.cli import app; app()\n")
    done = run_child(["-c", no_passwd, *ASK[2:]], tmp_path, env, cpu_seconds=COLD_ASK)
    assert done.returncode == 0 and "l4-24gb" in done.stdout, done.stderr
    assert "Traceback" not in done.stderr
