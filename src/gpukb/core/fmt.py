"""How quantities read in every text gpukb prints: bytes, bandwidth, FLOP/s, ratios, durations, numbers.

One module so the command line, `Answer.explain`, `gpukb explain`, rule sentences and reports
print the same value the same way. Units are SI (GB = 1e9 bytes, GiB = 2^30 bytes).
"""

from __future__ import annotations

from typing import Literal

Lang = Literal["en", "zh"]

# Chinese text writes seconds and milliseconds as s and ms, as its tables and latency targets do: one
# notation for each unit; days and hours read as words
_DURATION_UNITS: dict[Lang, tuple[str, str, str, str]] = {  # days, hours, seconds, milliseconds
    "en": (" days", " h", " s", " ms"),
    "zh": (" 天", " 小时", " s", " ms"),
}



def in_lang(lang: Lang, en: str, zh: str) -> str:
    """A text in `lang`: its Chinese where it has one, else the English."""
    return (zh or en) if lang == "zh" else en

def gb(n: float) -> str:
    """Bytes in decimal gigabytes, the unit of the datasheets."""
    return f"{n / 1e9:,.1f} GB"


def gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB"


def bandwidth(n: float) -> str:
    return f"{n / 1e12:,.2f} TB/s" if n >= 1e12 else f"{n / 1e9:,.0f} GB/s"


def flops(n: float) -> str:
    return f"{n / 1e12:,.0f} TFLOPS"


def pct(fraction: float) -> str:
    return f"{100 * fraction:.0f}%"


def ratio(value: float) -> str:
    return f"{value:.2f}×"


def integer(value: float) -> str:
    return f"{round(value):,}"


def duration(seconds: float, lang: Lang = "en") -> str:
    days, hours, secs, ms = _DURATION_UNITS[lang]
    if seconds >= 86400:
        return f"{seconds / 86400:,.1f}{days}"
    if seconds >= 3600:
        return f"{seconds / 3600:,.1f}{hours}"
    if seconds >= 1:
        return f"{seconds:,.1f}{secs}"
    return f"{seconds * 1e3:,.2f}{ms}"


def number(value: object) -> str:
    """A computed value as a trace shows it: separators from 1,000 up, four significant digits below;
    booleans as YAML and JSON spell them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if not isinstance(value, int | float):
        return str(value)
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:,.4g}"


def plain(value: object) -> str:
    """A value in a rule sentence without a format: floats with separators from 1,000 up and four
    significant digits below; integers and text as they are."""
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:,.4g}"
    return str(value)
