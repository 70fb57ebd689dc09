"""`--launch`: the command line of the framework the answer was planned for, for its first option, printed after
the answer and folded to the terminal's width with shell continuations, so it still pastes as one command."""

from __future__ import annotations

import shlex
import textwrap
from typing import Any

from ..core.fmt import Lang
from ..core.messages import message
from ..core.terminal import clean
from .common import BAD_INPUT, fail, out

TRAINING_TASKS = ("pretrain", "full_finetune", "lora", "qlora", "grpo", "ppo", "dpo")


def check(answer: Any, lang: Lang) -> str | None:
    """The first option's command for the answer's framework; exits 2 where the framework has none (a training
    task, a serving stack gpukb writes no line for, a setting the engine lacks); None where nothing fits."""
    from ..answer.launch import ENGINES, missing

    w = answer.workload
    if w.task != "inference":
        fail(message("launch_failed", why=message("launch_training", framework=w.framework)), BAD_INPUT, lang)
    if w.framework not in ENGINES:
        fail(message("launch_failed", why=message("launch_no_engine", framework=w.framework, engines=list(ENGINES))),
             BAD_INPUT, lang)
    best = answer.best
    if best is None:  # the answer says why nothing fits, and the command exits 3
        return None
    command = (best.launch or {}).get(w.framework)
    if command is None:
        fail(message("launch_failed", why=missing(w.framework, w)), BAD_INPUT, lang)
    return command


def fold(command: str, width: int, indent: int = 4) -> list[str]:
    """A command line as lines of at most `width` columns where its words allow: each continued line ends in
    ` \\` and the next is indented; an option stays on the line of its value; each `&&` starts a line."""
    lines: list[str] = []
    parts = command.split(" && ")  # shlex.join quotes a literal "&&", so these are the commands' own joins
    for n, part in enumerate(parts):
        groups: list[str] = []
        for word in shlex.split(part):
            if groups and groups[-1].startswith("-") and " " not in groups[-1] and not word.startswith("-"):
                groups[-1] += " " + shlex.quote(word)  # an option and its value
            else:
                groups.append(shlex.quote(word))
        line = (" " * indent + "&& " if n else "") + groups[0]
        for group in groups[1:]:
            if len(line) + 1 + len(group) + 2 > width:
                lines.append(line + " \\")
                line = " " * indent + group
            else:
                line += " " + group
        lines.append(line + (" \\" if n < len(parts) - 1 else ""))
    return lines


def print_launch(answer: Any, command: str, kb: Any, lang: Lang) -> None:
    """The comment naming the option (GPU type, count, layout), then the folded command."""
    from ..answer.launch import option_comment

    best = answer.best
    head = (f"启动命令（{answer.workload.framework}，第一个方案）：" if lang == "zh"
            else f"Launch ({answer.workload.framework}, the first option):")
    out.print(head, markup=False, highlight=False)
    comment = option_comment(best.gpu, best.count, best.strategy, kb.gpus[best.gpu].devices)
    for line in textwrap.wrap(clean(comment).removeprefix("# "), max(20, out.width - 2)):
        out.print("# " + line, markup=False, highlight=False, soft_wrap=True)
    for line in fold(clean(command), out.width):
        out.print(line, markup=False, highlight=False, soft_wrap=True)
