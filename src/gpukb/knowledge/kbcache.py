"""A private on-disk copy of the loaded packaged knowledge base, so a command starts without parsing YAML.

Loading kb/ and rules/ (parsing, validating, compiling 120 files) is most of a cold `gpukb ask`;
unpickling the result takes a seventh of that. A pickle can run code when loaded, so a copy is
unpickled only if it proves it was written with this user's key, and even then it can build nothing
but a knowledge base:
- the folder is $GPUKB_CACHE_DIR, else $XDG_CACHE_HOME/gpukb, else ~/.cache/gpukb (an
  XDG_CACHE_HOME or home that is not an absolute path, or no home at all, turns the copy off); it is
  used only if it is a real folder (not a link) owned by this user that no one else may enter or write;
- a file there is read only if it is a regular file (opened without following links or waiting on
  a FIFO) owned by this user that no one else may read or write; files are written as new 0600
  files, then put in place in one step (core.safewrite: a rename, or a link for the key), so no reader
  sees half a file; a temporary whose writer was killed before its rename is removed on the next start;
- `key` is 32 random bytes made once per folder; each copy starts with an HMAC-SHA256, under that
  key, of its name and its pickle, checked (hmac.compare_digest) before a byte is unpickled: a
  file written without the key (planted by anything that cannot read the folder's key, or a copy
  renamed to another copy's name) is never unpickled;
- the name is a sha256 of every file under kb/ and rules/ (path and bytes), of gpukb's own source
  and of the Python and pydantic versions: any change to the knowledge or the code misses;
- unpickling resolves only the exact (module, name) pairs in ALLOWED, the classes and the one
  function a knowledge base is pickled as (tests/test_kbcache.py checks the list is exactly those),
  and never a dotted name: a file made with the key (a home directory restored whole, key and
  all) still cannot call anything else.
Anything unexpected (a foreign owner, loose permissions, a wrong HMAC, a read or unpickling error)
means "no copy": the knowledge base is loaded from its files. GPUKB_NO_CACHE=1 turns the copy off.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib
import io
import os
import pickle
import platform
import re
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import safewrite
from ..language.expr import SYNTAX_NODES

if TYPE_CHECKING:
    from .kb import KnowledgeBase

# What a pickled KnowledgeBase names, and nothing else. `ast`: rule expressions are kept as their
# checked syntax trees (expr.Expr, restored by expr._restore), plain data classes.
ALLOWED: frozenset[tuple[str, str]] = frozenset({
    *(("ast", node.__name__) for node in SYNTAX_NODES),  # the classes the expression checker lets through
    ("datetime", "date"),
    # the error bands derived once from the measurements and kept with the knowledge base (kb.derived)
    *(("gpukb.answer.bands", name) for name in ("Band", "Bands", "Calibration")),
    ("gpukb.knowledge.citations", "CitedClaim"),
    ("gpukb.language.expr", "_restore"),
    ("gpukb.knowledge.kb", "KnowledgeBase"),
    ("gpukb.core.positions", "Located"),
    *(("gpukb.knowledge.rules", name) for name in ("CompiledOutput", "CompiledRule", "Expect", "Output", "Pattern", "Rule",
                                         "RuleTest")),
    *(("gpukb.knowledge.schema", name) for name in (
        "Claim", "CloudPrice", "Dtype", "Figure", "Framework", "FrameworkTerm", "Gpu", "Interconnect", "Manifest",
        "Measurement", "Model", "Moe", "NodePrice", "Optimizer", "Policy", "Price", "Rhetoric", "Scheduler", "SchedulerTier",
        "Source", "System", "Term", "TrainingBytes", "TrainingLayout")),
    ("pathlib", "PosixPath"),
    ("pydantic.networks", "HttpUrl"),
    ("pydantic_core._pydantic_core", "Url"),
})
_SOURCE = Path(__file__).resolve().parents[1]  # src/gpukb: the whole package
_KEY_BYTES = 32
_MAC_BYTES = hashlib.sha256().digest_size
# O_NONBLOCK: opening a FIFO must not wait for a writer (regular files ignore it)
# the temporaries of gpukb before core.safewrite (<name>.<pid>.<random>), removed like its own
_OLD_TEMPORARY = re.compile(r"^(?:kb-[0-9a-f]{64}\.pickle|key)\.(\d+)\.[0-9a-f]{8}$")
_OPEN = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def folder() -> Path | None:
    """The cache folder, or None when the copy is off."""
    if os.environ.get("GPUKB_NO_CACHE"):
        return None
    if os.environ.get("GPUKB_CACHE_DIR"):
        return Path(os.environ["GPUKB_CACHE_DIR"])
    # the XDG spec: a relative XDG_CACHE_HOME is ignored. No home (HOME unset and a uid with no
    # passwd entry leaves "~" unexpanded) or a relative one means no copy, not an error.
    for base in (os.environ.get("XDG_CACHE_HOME", ""), os.path.join(os.path.expanduser("~"), ".cache")):
        if os.path.isabs(base):
            return Path(base) / "gpukb"
    return None


def _private_folder(path: Path, create: bool) -> bool:
    """Whether `path` is a folder only this user controls (created so, when asked and missing)."""
    try:
        if create and not os.path.lexists(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.mkdir(mode=0o700)
        info = os.lstat(path)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def _read_private(path: Path) -> bytes | None:
    """The bytes of `path` if it is a regular file of this user's that nobody else may read or write;
    None if it is not; FileNotFoundError if there is none."""
    descriptor = os.open(path, _OPEN)
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            return None
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            return handle.read()
    finally:
        os.close(descriptor)


def _secret(where: Path) -> bytes | None:
    """This user's key for the copies in `where`, made on first use; None if it cannot be trusted."""
    path = where / "key"
    try:
        try:
            secret = _read_private(path)
        except FileNotFoundError:
            try:  # never replaces: of two processes making one, the first wins
                safewrite.write_file(where, path.name, os.urandom(_KEY_BYTES), mode=0o600)
            except safewrite.RefusedWrite as refused:
                if not refused.exists:
                    return None
            secret = _read_private(path)
    except OSError:
        return None
    return secret if secret is not None and len(secret) == _KEY_BYTES else None


def _mac(secret: bytes, path: Path, payload: bytes | memoryview) -> bytes:
    """The HMAC of a copy: its name too, so a genuine copy renamed to another key's name is refused."""
    mac = hmac.new(secret, path.name.encode() + b"\0", hashlib.sha256)
    mac.update(payload)
    return mac.digest()


def key(root: Path) -> str:
    """sha256 of what a loaded knowledge base depends on: its files, gpukb's code, the versions."""
    import pydantic

    digest = hashlib.sha256(f"{sys.version}\0{platform.machine()}\0{pydantic.VERSION}\0{root}\0".encode())
    for top, base in (("kb", root), ("rules", root), ("gpukb", _SOURCE.parent)):
        for path in sorted((base / top).rglob("*")):
            if path.is_file() and not (top == "gpukb" and path.suffix != ".py"):
                digest.update(path.relative_to(base).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        # Resolved here, not by pickle's find_class, which would follow a dotted name attribute by
        # attribute (`pathlib` + `os.system`) and map Python 2 module names.
        if (module, name) not in ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not part of a knowledge base")
        return getattr(importlib.import_module(module), name)


def read(root: Path) -> tuple[KnowledgeBase | None, Path | None]:
    """(the cached knowledge base or None, the path a fresh one should be written to or None)."""
    where = folder()
    if where is None or not _private_folder(where, create=True):
        return None, None
    safewrite.clean_stale(where, also=_OLD_TEMPORARY)  # copies a killed process left before its rename
    secret = _secret(where)
    if secret is None:
        return None, None  # a copy could not be checked, so none is read or written
    try:
        path = where / f"kb-{key(root)}.pickle"
    except OSError:
        return None, None
    try:
        data = _read_private(path)
    except OSError:
        return None, path
    if data is None:
        return None, None  # not ours to trust, nor to replace
    payload = memoryview(data)[_MAC_BYTES:]
    if len(data) <= _MAC_BYTES or not hmac.compare_digest(data[:_MAC_BYTES], _mac(secret, path, payload)):
        return None, path  # not written by this user's gpukb with this key: never unpickled, replaced
    try:
        loaded = _Unpickler(io.BytesIO(payload)).load()
    except Exception:  # a copy from code that pickled differently: load from the files, write a fresh one
        return None, path
    from .kb import KnowledgeBase

    return (loaded, None) if isinstance(loaded, KnowledgeBase) else (None, path)


def write(path: Path, kb: KnowledgeBase) -> None:
    """Store `kb` at `path` as a new private file, renamed into place (readers never see half a file)."""
    try:
        secret = _secret(path.parent)
        if secret is None:
            return
        payload = pickle.dumps(kb, protocol=pickle.HIGHEST_PROTOCOL)
        safewrite.write_file(path.parent, path.name, _mac(secret, path, payload) + payload, replace=True, mode=0o600)
        for stale in path.parent.glob("kb-*.pickle"):  # copies for other code or knowledge: never read again
            if stale != path and stale.lstat().st_uid == os.getuid():
                stale.unlink()
    except Exception:  # a full disk or a read-only home: the copy is an optimisation, never a failure
        pass
