"""Opening files whose names come from a user or a repository: regular files only, names bounded.

A name is checked before anything is opened (no NUL byte, no component longer than the file system
holds, no path longer than Linux's PATH_MAX) and a file is opened only when `stat` says it is a
regular file, then non-blocking: a FIFO named config.json would otherwise wait forever for a writer,
and /dev/zero would never end. Refusals are `RefusedPath` with a reason in words; each caller turns
it into its own located error (ConfigError naming `model`, a KB problem naming the file, ...).
"""

from __future__ import annotations

import os
import stat
import unicodedata
from pathlib import Path

from .messages import Message, message

MAX_COMPONENT = 255  # bytes in one name: NAME_MAX of ext4, XFS, btrfs and tmpfs
MAX_PATH = 4096  # bytes in a whole path: PATH_MAX on Linux

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class RefusedPath(ValueError):
    """A path gpukb will not open; the message says why, without the path (the caller names it). The
    refusals a user meets most (no such file, not a file) carry a Message, in either language."""

    def __init__(self, reason: str | Message):
        self.message = reason
        super().__init__(str(reason))


def check_name(path: str | os.PathLike[str]) -> None:
    """Refuse a name no file can have, before the operating system is asked about it."""
    text = os.fspath(path)
    if "\0" in text:
        raise RefusedPath("the name holds a NUL byte")
    encoded = os.fsencode(text)
    if len(encoded) > MAX_PATH:
        raise RefusedPath(f"the path is {len(encoded):,} bytes long; at most {MAX_PATH:,}")
    longest = max(encoded.split(b"/"), key=len)
    if len(longest) > MAX_COMPONENT:
        raise RefusedPath(f"a name in the path is {len(longest):,} bytes long; at most {MAX_COMPONENT}")


def check_shown(path: str) -> None:
    """Refuse a name that would not print as itself: control characters (C0, C1), bidirectional and other
    format characters (U+202E, zero-width ones), line separators and undecodable bytes. A terminal or a
    copied command line would show another name than the one used."""
    for position, char in enumerate(path, start=1):
        if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            name = unicodedata.name(char, "a control character")
            raise RefusedPath(f"the name holds U+{ord(char):04X} ({name}) at character {position}, which a terminal "
                              "or a command line would not show as it is; rename it")


def kind(mode: int) -> str:
    """What a file that is not a regular file is, in words."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def is_dir(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a folder (following links); False for any name that cannot be one."""
    check_name(path)
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


def is_regular(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a regular file (following links); False for a refused name too."""
    try:
        check_name(path)
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, RefusedPath):
        return False


def read_bytes(path: str | os.PathLike[str], limit: int) -> bytes:
    """At most `limit` + 1 bytes of the regular file at `path` (one past the limit tells the caller it
    is too large). Links are followed; the caller decides whether their target may lie elsewhere."""
    check_name(path)
    check_shown(os.fspath(path))
    try:
        if not stat.S_ISREG(mode := os.stat(path).st_mode):
            raise RefusedPath(message("not_a_file", kind=kind(mode)))
        # O_NONBLOCK: should the name be swapped for a FIFO after the stat, opening still returns at once
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise RefusedPath(message("no_such_file")) from None
    except OSError as error:
        raise RefusedPath(f"cannot read it ({error.strerror or error})") from None
    try:
        if not stat.S_ISREG(mode := os.fstat(descriptor).st_mode):
            raise RefusedPath(message("not_a_file", kind=kind(mode)))
        chunks, left = [], limit + 1
        while left > 0 and (chunk := os.read(descriptor, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError as error:
        raise RefusedPath(f"cannot read it ({error.strerror or error})") from None
    finally:
        os.close(descriptor)


def read_text(path: str | os.PathLike[str], limit: int) -> str:
    """The UTF-8 text of a regular file of at most `limit` bytes."""
    data = read_bytes(path, limit)
    if len(data) > limit:
        raise RefusedPath(f"larger than {limit:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RefusedPath(f"not UTF-8 text (byte {error.start})") from None


def inside(path: Path, root: Path) -> bool:
    """Whether `path`, links resolved, lies within `root` (links resolved too)."""
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # a link loop
        return False
