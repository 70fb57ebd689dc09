"""Writing files gpukb makes (JSON Schemas, probe entries, reports, the on-disk cache): the one way, safely.

The counterpart of safepath's reading. A file is written into one named folder, never through a link and
never anywhere else:
- the name is one plain component (no `/`, `..` or hidden control characters); the folder is opened
  without following a link in its last component, and with `within`, its real path must lie inside that
  folder (a `kb/schema` linked out of the checkout is refused);
- an existing link, FIFO, device or folder at the name is refused, never written through or replaced;
- the bytes go to a new temporary file in the same folder (O_EXCL, O_NOFOLLOW), flushed to disk, then
  put in place in one step: a rename where replacing is allowed, a hard link otherwise (which fails if
  the name exists, so an existing file is never replaced silently, not even by a racing process);
- temporaries carry their writer's process id, so the next write into the folder removes those whose
  writer is gone (a process killed before its rename).
Refusals are `RefusedWrite` (a `RefusedPath`) with the reason in words; the caller names the file.
"""

from __future__ import annotations

import errno
import io
import os
import re
import stat
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import BinaryIO, TextIO

from .safepath import RefusedPath, check_name, check_shown, inside, kind

_PREFIX = ".gpukb-tmp"
# .gpukb-tmp.<pid>.<random>: the writer's process id says whether it is orphaned; no suffix, so that no
# loader's *.yaml or *.json takes an orphan for a file of the folder
_TEMPORARY = re.compile(rf"^{re.escape(_PREFIX)}\.(\d+)\.[0-9a-f]{{8}}$")
STALE_SECONDS = 24 * 3600  # past this a temporary is stale whatever its pid says (the pid may be reused)
_DIRECTORY = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class RefusedWrite(RefusedPath):
    """A file gpukb will not write; `exists` is true where the only trouble is a regular file already there."""

    def __init__(self, reason: str, exists: bool = False):
        super().__init__(reason)
        self.exists = exists


def check_target(folder: Path, name: str, *, within: Path | None = None, replace: bool = False) -> None:
    """Refuse now what `write_file` would refuse later (a caller checks before a long run): a bad name, a
    folder out of `within` or that is not a folder, a link or non-file at the name, an existing file
    unless `replace`."""
    _check_name(name)
    check_folder(folder, within)
    try:
        info = os.lstat(folder / name)
    except FileNotFoundError:
        return
    except OSError as error:
        raise RefusedWrite(f"cannot look at it ({error.strerror or error})") from None
    _check_existing(info.st_mode, replace)


def write_file(folder: Path, name: str, data: bytes | str, *, within: Path | None = None, replace: bool = False,
               mode: int = 0o666) -> Path:
    """Write `data` (text as UTF-8) as `folder/name`, made with `mode` (less the umask); returns the path.
    Missing folders are made. Raises RefusedWrite; the file is then untouched and no temporary is left."""
    with writing(folder, name, within=within, replace=replace, mode=mode) as handle:
        handle.write(data.encode("utf-8") if isinstance(data, str) else data)
    return folder / name


@contextmanager
def writing(folder: Path, name: str, *, within: Path | None = None, replace: bool = False,
            mode: int = 0o666, commit_on_error: bool = False) -> Iterator[BinaryIO]:
    """A binary handle on a new temporary file in `folder`, put in place as `name` when the block ends (with
    `commit_on_error`, also when it raises: a stream of complete records keeps those written). The checks
    and refusals of `write_file`."""
    _check_name(name)
    check_folder(folder, within, create=True)
    try:
        descriptor = os.open(folder, _DIRECTORY)
    except OSError as error:
        raise RefusedWrite(_folder_reason(error)) from None
    try:
        clean_stale(descriptor)
        _check_existing_at(descriptor, name, replace)
        temporary = f"{_PREFIX}.{os.getpid()}.{os.urandom(4).hex()}"
        try:
            handle = os.open(temporary, _NEW, mode, dir_fd=descriptor)
        except OSError as error:
            raise RefusedWrite(f"cannot write in its folder ({error.strerror or error})") from None
        try:
            with os.fdopen(handle, "wb") as stream:
                failed = False
                try:
                    yield stream
                except BaseException:
                    failed = True
                    raise
                finally:
                    if not failed or commit_on_error:
                        stream.flush()
                        os.fsync(stream.fileno())
                        stream.close()
                        _put_in_place(descriptor, temporary, name, replace)
        finally:
            with suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=descriptor)
    except OSError as error:
        raise RefusedWrite(f"cannot write it ({error.strerror or error})") from None
    finally:
        os.close(descriptor)


def open_output(path: Path) -> TextIO:
    """A text file to stream records into, for an output file a user names (`--output`): written to a
    temporary beside it and put in place, replacing a regular file of that name, when closed (a sweep
    stopped halfway keeps the records it wrote). A link or anything but a regular file there is refused."""
    writer = writing(path.parent, path.name, replace=True, commit_on_error=True)
    return _Output(writer, writer.__enter__())


class _Output(io.TextIOWrapper):
    def __init__(self, writer: AbstractContextManager[BinaryIO], raw: BinaryIO):
        super().__init__(raw, encoding="utf-8")  # type: ignore[arg-type]
        self._writer: AbstractContextManager[BinaryIO] | None = writer

    def close(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            self.flush()
            writer.__exit__(None, None, None)  # closes the temporary and renames it into place
        with suppress(ValueError):
            super().close()


def clean_stale(folder: int | Path, also: re.Pattern[str] | None = None) -> list[str]:
    """Remove this user's temporaries in `folder` (a path or an open descriptor) whose writer has ended or
    that are older than STALE_SECONDS; returns their names. `also` matches a caller's older naming (its
    first group the writer's process id). Anything else is left alone."""
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    descriptor = folder if isinstance(folder, int) else None
    for name in names:
        match = _TEMPORARY.match(name) or (also.match(name) if also is not None else None)
        if match is None:
            continue
        try:
            info = os.lstat(name, dir_fd=descriptor) if descriptor is not None else os.lstat(Path(folder) / name)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
                continue
            if _running(int(match[1])) and time.time() - info.st_mtime < STALE_SECONDS:
                continue
            if descriptor is not None:
                os.unlink(name, dir_fd=descriptor)
            else:
                os.unlink(Path(folder) / name)
            removed.append(name)
        except OSError:
            continue
    return removed


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return pid > 0  # another user's process: alive, but its temporaries are not ours anyway
    return True


def _check_name(name: str) -> None:
    if not name or name in (".", "..") or "/" in name or "\\" in name:
        raise RefusedWrite(f"'{name}' is not a plain file name")
    check_name(name)
    check_shown(name)


def check_folder(folder: Path, within: Path | None = None, create: bool = False) -> None:
    """Refuse a folder that is a link, is not a folder or (with `within`) lies outside `within`; a missing
    one is made when `create`."""
    check_name(folder)
    if within is not None and not inside(folder, within):
        raise RefusedWrite(f"its folder {folder} leads out of {within} (a symbolic link?): gpukb writes only inside it")
    try:
        info: os.stat_result | None = os.lstat(folder)
    except FileNotFoundError:
        info = None
    except OSError as error:
        raise RefusedWrite(_folder_reason(error)) from None
    if info is None:
        if not create:
            return
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise RefusedWrite(_folder_reason(error)) from None
        if within is not None and not inside(folder, within):  # a link planted on the way while it was made
            raise RefusedWrite(f"its folder {folder} leads out of {within}: gpukb writes only inside it")
        return
    if stat.S_ISLNK(info.st_mode):
        raise RefusedWrite(f"its folder {folder} is a symbolic link: gpukb does not write through links")
    if not stat.S_ISDIR(info.st_mode):
        raise RefusedWrite(f"{folder} is {kind(info.st_mode)}, not a folder")


def _folder_reason(error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return "its folder is a symbolic link: gpukb does not write through links"
    if error.errno == errno.ENOTDIR:
        return "its folder is a file, not a folder"
    return f"cannot open its folder ({error.strerror or error})"


def _check_existing(mode: int, replace: bool) -> None:
    if stat.S_ISLNK(mode):
        raise RefusedWrite("it is a symbolic link: gpukb does not write through links; remove the link")
    if not stat.S_ISREG(mode):
        raise RefusedWrite(f"it is {kind(mode)}, not a regular file")
    if not replace:
        raise RefusedWrite("it exists already", exists=True)


def _check_existing_at(descriptor: int, name: str, replace: bool) -> None:
    try:
        info = os.lstat(name, dir_fd=descriptor)
    except FileNotFoundError:
        return
    _check_existing(info.st_mode, replace)


def _put_in_place(descriptor: int, temporary: str, name: str, replace: bool) -> None:
    if replace:
        _check_existing_at(descriptor, name, replace)  # once more, as late as can be: a link planted meanwhile
        os.rename(temporary, name, src_dir_fd=descriptor, dst_dir_fd=descriptor)
        return
    try:
        os.link(temporary, name, src_dir_fd=descriptor, dst_dir_fd=descriptor, follow_symlinks=False)
    except FileExistsError:
        raise RefusedWrite("it exists already", exists=True) from None
    except OSError as error:
        if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
            raise
        # a file system without hard links: the check just made, then a rename
        _check_existing_at(descriptor, name, replace)
        os.rename(temporary, name, src_dir_fd=descriptor, dst_dir_fd=descriptor)
