"""What every `gpukb` command shares: the consoles (the terminal's width, 80 columns when piped), the choices
its options take, the exit codes, and how an error is printed.

Exit codes: 0 an answer; 1 a check failed (lint, validate, schema --check) or the knowledge base does not load;
2 bad input (an option, a workload field, a file); 3 the input was valid but nothing meets it (no GPU fits, no
option meets the deadline or the latency targets, a probe ran out of memory).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from ..core.errors import KBError
from ..core.fmt import Lang
from ..core.messages import Message, message, with_field
from ..core.terminal import clean

out = Console(soft_wrap=True)  # the terminal's width; 80 columns (or $COLUMNS) when piped
err = Console(stderr=True, soft_wrap=True)

FAILED = 1  # exit code: a check failed, or the knowledge base does not load
BAD_INPUT = 2  # exit code: an option, a workload field or a file was refused; the message names it
NOTHING_FITS = 3  # exit code: the ask was valid, but no candidate GPU type can run it within its limits


class Task(StrEnum):
    pretrain = "pretrain"
    full_finetune = "full_finetune"
    lora = "lora"
    qlora = "qlora"
    inference = "inference"
    grpo = "grpo"
    ppo = "ppo"
    dpo = "dpo"


class Precision(StrEnum):
    fp32 = "fp32"
    bf16 = "bf16"
    fp16 = "fp16"
    fp8 = "fp8"
    int8 = "int8"
    int4 = "int4"


class Optim(StrEnum):
    adamw = "adamw"
    adamw_8bit = "adamw_8bit"
    sgd = "sgd"
    sgd_momentum = "sgd_momentum"
    adafactor = "adafactor"


class Offload(StrEnum):
    none = "none"
    optimizer = "optimizer"
    optimizer_params = "optimizer+params"


class Language(StrEnum):
    en = "en"
    zh = "zh"


class Format(StrEnum):  # the names of reporters.REPORTERS
    text = "text"
    github = "github"
    json = "json"


# the options several commands take, spelled once
LangOption = Annotated[Language, typer.Option(help="language of the text: en or zh")]
RootOption = Annotated[Path | None, typer.Option(help="a checkout holding kb/ and rules/")]


def fail_kb(error: KBError, lang: Lang = "en") -> NoReturn:
    """The knowledge base's problems on stderr, one a line, then exit 1."""
    if lang == "zh":  # a heading and each problem's kind in Chinese; the English stays one problem a line
        page(message("kb_invalid", count=len(error.problems)).text(lang), err)
    page("\n".join(problem.text(lang) for problem in error.problems), err)
    raise typer.Exit(FAILED)


def fail(error: Exception | Message | str, code: int, lang: Lang = "en",
         named: Callable[[str], str] | None = None) -> NoReturn:
    """`error: ...` on stderr in `lang` (an error with a Message is written in it), then exit `code`. In Chinese,
    `named` turns the field an error names into what the user typed (`gpus.0` -> --gpu)."""
    text = error.text(lang) if hasattr(error, "text") else str(error)
    field = getattr(error, "field", None)
    if lang == "zh" and named is not None and isinstance(field, str) and isinstance(getattr(error, "message", None), Message):
        text = with_field(named(field), error.message.text(lang), lang)
    page(message("error", detail=text).text(lang), err)
    raise typer.Exit(code)


def cell(value: object) -> Text:
    """A table cell shown as the text it is: never read as rich markup, no control characters."""
    return Text(clean(value))


# where a line's text starts after its indent: a list bullet, a trace step's number, or a short label
# such as "warning: " or "sources: "; wrapped lines continue under that text
_LEAD = re.compile(r"(?:- |\* |\[\d+\] |[^\s:：]{1,20}(?:: |：))")
# Units a line may break between. Rich and textwrap break only at spaces, and a Chinese sentence has none, so a
# line of it was cut wherever the width fell (inside a rule id) or left half empty. Here each CJK character is
# a unit, a run of other non-space characters (a word, an id, a number with its unit) another, and spaces
# separate; closing punctuation stays with what precedes it and opening punctuation with what follows.
_CJK = "\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f"
_UNIT = re.compile(f"[{_CJK}]|[^\\s{_CJK}]+| +")
_CLOSING = set("，。、；：！？）」』》〉】”’…%")
_OPENING = set("（「『《〈【“‘")


def _units(text: str) -> list[str]:
    units: list[str] = []
    glue = False  # the last unit opens: the next joins it
    for unit in _UNIT.findall(text):
        if units and not unit.isspace() and (glue or unit[0] in _CLOSING) and not units[-1].isspace():
            units[-1] += unit
        else:
            units.append(unit)
        glue = unit[-1] in _OPENING
    return units


def _fill(text: str, first: int, rest: int) -> list[str]:
    """`text` broken into lines of at most `first` cells, then `rest` cells; a unit wider than a line is folded."""
    lines, line, width = [], "", first
    for unit in _units(text):
        if unit.isspace():
            if line:
                line += unit
            continue
        if cell_len(line + unit) <= width:
            line += unit
            continue
        if line.strip():
            lines.append(line.rstrip())
            line, width = "", rest
        while cell_len(unit) > width:  # longer than a whole line: fold it
            cut = next(i for i in range(len(unit), 0, -1) if cell_len(unit[:i]) <= width)
            lines.append(unit[:cut])
            unit, width = unit[cut:], rest
        line = unit
    if line.strip() or not lines:
        lines.append(line.rstrip())
    return lines


def wrap(line: str, width: int) -> list[str]:
    """One line of text as the lines that fit `width` terminal cells (a CJK character takes two), broken at
    spaces and between CJK characters, each continuation indented under the text after the line's own indent
    and lead (see _LEAD), or two cells deeper than a line without a lead."""
    if cell_len(line) <= width:
        return [line.rstrip()]
    body = line.lstrip(" ")
    indent = len(line) - len(body)
    lead = _LEAD.match(body)
    head = line[:indent + (lead.end() if lead else 0)]
    hang = cell_len(head) if lead else indent + 2
    if hang > width // 2:  # a deep indent would leave too narrow a column: continue at the indent alone
        hang = min(indent, width // 2)
    parts = _fill(body[lead.end():] if lead else body, max(width - cell_len(head), 10), max(width - hang, 10))
    return [head + parts[0], *(" " * hang + part for part in parts[1:])]


def page(text: str, console: Console | None = None) -> None:
    """Lines of text (a trace, an entry, a report) printed to fit the terminal, each wrapped with its indent."""
    console = console or out
    for line in clean(text).split("\n"):
        for part in wrap(line, console.width):
            console.print(part, markup=False, highlight=False, soft_wrap=True)


def split(values: list[str] | None) -> list[str]:
    """Repeated options, each possibly comma-separated: --model a,b --model c -> [a, b, c]."""
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]
