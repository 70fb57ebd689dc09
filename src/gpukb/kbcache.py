"""A private on-disk copy of the loaded packaged knowledge base, so a command starts without parsing YAML.

Loading kb/ and rules/ (parsing, validating, compiling 120 files) is most of a cold `gpukb ask`;
unpickling the result takes a seventh of that. A pickle can run code when loaded, so the copy is
only ever read from where nobody but this user can have written it:
- the folder is $GPUKB_CACHE_DIR, else $XDG_CACHE_HOME/gpukb, else ~/.cache/gpukb; it is used only
  if it is a real folder (not a link) owned by this user that no one else may enter or write;
- a file is read only if it is a regular file (opened without following links) owned by this user
  and writable by no one else; it is written as a new 0600 file, then renamed into place;
- the name is a sha256 of every file under kb/ and rules/ (path and bytes), of gpukb's own source
  and of the Python and pydantic versions: any change to the knowledge or the code misses;
- unpickling admits only the classes a knowledge base is made of (gpukb's, pydantic's, pathlib,
  datetime, ast), so even a planted file could not name anything else.
Anything unexpected (a foreign owner, loose permissions, a read or unpickling error) means "no
copy": the knowledge base is loaded from its files. GPUKB_NO_CACHE=1 turns the copy off.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import platform
import stat
import sys
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .kb import KnowledgeBase

# `ast`: rule expressions are kept as their checked syntax trees (expr.Expr), plain data classes
_ALLOWED_MODULES = frozenset({"ast", "datetime", "pathlib", "pydantic.networks", "pydantic_core._pydantic_core"})
_SOURCE = Path(__file__).resolve().parent


def folder() -> Path | None:
    """The cache folder, or None when the copy is off."""
    if os.environ.get("GPUKB_NO_CACHE"):
        return None
    if os.environ.get("GPUKB_CACHE_DIR"):
        return Path(os.environ["GPUKB_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpukb"


def _private_folder(path: Path, create: bool) -> bool:
    """Whether `path` is a folder only this user controls (created so, when asked and missing)."""
    try:
        if create and not os.path.lexists(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.mkdir(mode=0o700)
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


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
        if module.startswith("gpukb.") or module in _ALLOWED_MODULES:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not part of a knowledge base")


def read(root: Path) -> tuple[KnowledgeBase | None, Path | None]:
    """(the cached knowledge base or None, the path a fresh one should be written to or None)."""
    where = folder()
    if where is None or not _private_folder(where, create=True):
        return None, None
    try:
        path = where / f"kb-{key(root)}.pickle"
    except OSError:
        return None, None
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None, path
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
            return None, None  # not ours to trust, nor to replace
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            data = handle.read()
        loaded = _Unpickler(io.BytesIO(data)).load()
    except Exception:  # a damaged or stale copy: load from the files and write a fresh one
        return None, path
    finally:
        os.close(descriptor)
    from .kb import KnowledgeBase

    return (loaded, None) if isinstance(loaded, KnowledgeBase) else (None, path)


def write(path: Path, kb: KnowledgeBase) -> None:
    """Store `kb` at `path` as a new private file, renamed into place (readers never see half a file)."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.{os.urandom(4).hex()}")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            pickle.dump(kb, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, path)
        for stale in path.parent.glob("kb-*.pickle"):  # copies for other code or knowledge: never read again
            if stale != path and stale.lstat().st_uid == os.getuid():
                stale.unlink()
    except Exception:  # a full disk or a read-only home: the copy is an optimisation, never a failure
        with suppress(OSError):
            os.unlink(temporary)
