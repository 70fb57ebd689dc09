"""The command line's own errors in the language asked: Click's usage errors (a bad choice, a value that is not
a number, a missing or unknown option) under `--lang zh`, and a workload field named as the flag that sets it.

Click parses the options before any command runs, so the language is read from the arguments themselves; the
English errors stay exactly as Click and Typer print them.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Any

from typer import Abort
from typer.core import TyperGroup

try:  # Typer 0.2x carries its own copy of Click; older ones use Click itself
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover
    from click.exceptions import ClickException  # type: ignore[assignment,no-redef]

from ..core.messages import message
from ..core.terminal import clean
from .common import err

# workload fields whose flag is not the field's own name: `gpus.0` was typed as --gpu
_FLAG_OF = {"gpus": "--gpu", "systems": "--system"}
_CHOICE = re.compile(r"'(?P<value>.*)' is not one of (?P<choices>.*?)\.?$")
_QUOTED = re.compile(r"'([^']*)'")
_NOT_A = re.compile(r"valid (?P<kind>number|integer|boolean)")
_KIND = {"number": "数字", "integer": "整数", "boolean": "布尔值（true 或 false）"}


def language(args: Sequence[str]) -> str:
    """The value of --lang among the arguments (the last one given), or en."""
    lang = "en"
    for i, arg in enumerate(args):
        if arg == "--lang" and i + 1 < len(args):
            lang = args[i + 1]
        elif arg.startswith("--lang="):
            lang = arg.split("=", 1)[1]
    return lang


def flag(field: str) -> str:
    """The flag a workload field is given by on the command line: `gpus.0` -> --gpu, `deadline_days` ->
    --deadline-days; `workload` (the whole ask) stays as it is."""
    head = field.split(".", 1)[0]
    if head == "workload" or not re.fullmatch(r"[a-z][a-z0-9_]*", head):
        return field
    return _FLAG_OF.get(head, "--" + head.replace("_", "-"))


def _typed(args: Sequence[str], option: str) -> str | None:
    """What the user gave `option` on the command line (its last occurrence)."""
    given = None
    for i, arg in enumerate(args):
        if arg == option and i + 1 < len(args):
            given = args[i + 1]
        elif arg.startswith(option + "="):
            given = arg.split("=", 1)[1]
    return given


def chinese(error: ClickException, args: Sequence[str] = ()) -> str:
    """A Click error as a Chinese sentence that names the option and the value as typed. Errors are told apart
    by their class name, which Click and Typer's copy of it share."""
    kind, text = type(error).__name__, error.message
    param = getattr(error, "param", None)
    option = str(param.opts[0]) if param is not None and getattr(param, "opts", None) else ""
    if kind == "NoSuchOption":
        near = "、".join(sorted(getattr(error, "possibilities", None) or ()))
        return f"没有 {getattr(error, 'option_name', '')} 这个选项" + (f"，是不是想用 {near}？" if near else "")
    if kind == "MissingParameter":
        return f"缺少选项 {option or getattr(error, 'param_hint', '')}"
    if kind == "BadOptionUsage" and "requires" in text:
        return f"选项 {getattr(error, 'option_name', '')} 后面需要一个值"
    if kind == "BadParameter" and option:
        choice = _CHOICE.search(text)
        if choice:
            choices = "、".join(_QUOTED.findall(choice["choices"]))
            return f"{option} 不接受“{choice['value']}”；可选值：{choices}"
        number = _NOT_A.search(text)
        if number:
            typed = _typed(args, option)
            return f"{option} 需要一个{_KIND[number['kind']]}" + (f"，而给出的是“{typed}”" if typed is not None else "")
        return f"{option} 的值无效：{text}"
    for pattern, zh in ((r"No such command '(.*)'\.", "没有 {0} 这个命令"),
                        (r"Got unexpected extra arguments? \((.*)\)", "多出了参数：{0}"),
                        (r"Got unexpected extra argument\(s\) \((.*)\)", "多出了参数：{0}"),
                        (r"Missing command\.", "缺少命令")):
        found = re.fullmatch(pattern, text)
        if found:
            return zh.format(*found.groups())
    return text


def show(error: ClickException, args: Sequence[str] = ()) -> None:
    """`错误：…` on stderr, then how to get help (a usage error names its command)."""
    err.print(clean(message("error", detail=chinese(error, args)).text("zh")), markup=False, highlight=False)
    ctx = getattr(error, "ctx", None)
    if ctx is not None:
        err.print(clean(f"用法：{ctx.get_usage().removeprefix('Usage: ')}"), markup=False, highlight=False)
        err.print(clean(f"运行 {ctx.command_path} --help 查看全部选项。"), markup=False, highlight=False)


class Group(TyperGroup):
    """The `gpukb` group: under --lang zh, Click's own errors are printed in Chinese (exit code 2, as Click's)."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        if not standalone_mode or language(argv) != "zh":
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except ClickException as error:
            show(error, argv)
            sys.exit(error.exit_code)
        except Abort:
            err.print("已中止。", markup=False, highlight=False)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)
