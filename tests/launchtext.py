"""Reading `gpukb ask --launch`'s block back: the comment and the command, as a script would paste them."""

from __future__ import annotations


def launch_block(stdout: str) -> tuple[str, str]:
    """The comment naming the option and the command line, each joined back onto one line (the command's
    continuations are shell line-continuations, so a shell reads the same words)."""
    block = stdout.split("\nLaunch (", 1)[1].splitlines()[1:]
    comment = "# " + " ".join(line.removeprefix("# ") for line in block if line.startswith("#"))
    command = " ".join(line.strip().removesuffix("\\").strip() for line in block if not line.startswith("#"))
    return comment, command
