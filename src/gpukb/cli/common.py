"""What every `gpukb` command shares: the consoles (the terminal's width, 80 columns when piped), the choices
its options take, the exit codes, and how an error is printed.

Exit codes: 0 an answer; 1 a check failed (lint, validate, schema --check) or the knowledge base does not load;
2 bad input (an option, a workload field, a file); 3 the input was valid but nothing meets it (no GPU fits, no
option meets the deadline or the latency targets, a probe ran out of memory).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, NoReturn

import typer
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
        err.print(clean(message("kb_invalid", count=len(error.problems)).text(lang)), markup=False, highlight=False)
    for problem in error.problems:
        err.print(clean(problem.text(lang)), markup=False, highlight=False)
    raise typer.Exit(FAILED)


def fail(error: Exception | Message | str, code: int, lang: Lang = "en",
         named: Callable[[str], str] | None = None) -> NoReturn:
    """`error: ...` on stderr in `lang` (an error with a Message is written in it), then exit `code`. In Chinese,
    `named` turns the field an error names into what the user typed (`gpus.0` -> --gpu)."""
    text = error.text(lang) if hasattr(error, "text") else str(error)
    field = getattr(error, "field", None)
    if lang == "zh" and named is not None and isinstance(field, str) and isinstance(getattr(error, "message", None), Message):
        text = with_field(named(field), error.message.text(lang), lang)
    err.print(clean(message("error", detail=text).text(lang)), markup=False, highlight=False)
    raise typer.Exit(code)


def cell(value: object) -> Text:
    """A table cell shown as the text it is: never read as rich markup, no control characters."""
    return Text(clean(value))


def split(values: list[str] | None) -> list[str]:
    """Repeated options, each possibly comma-separated: --model a,b --model c -> [a, b, c]."""
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]
