"""An option's predicted numbers with their error bands, as the command line and the site print them:
"20,900 tokens/s (17,700–24,800, 80% of 11 measured runs)". Three significant digits: the bands say
the numbers are not worth more."""

from __future__ import annotations

from ..core.fmt import Lang
from .answer import ErrorBand, Option


def _sig(value: float) -> str:
    """Three significant digits with separators: 20,852.5 -> 20,900; 0.4612 -> 0.461."""
    rounded = float(f"{value:.3g}")
    return f"{rounded:,.0f}" if abs(rounded) >= 100 else f"{rounded:,.3g}"


_ZH_UNITS = {" days": " 天", " h": " 小时"}  # seconds stay s, as every Chinese duration does (core.fmt)


def _unit(field: str, value: float) -> tuple[float, str, str]:
    """(divisor, prefix, suffix) in which a field's value and its band read, chosen by the value's size."""
    if field == "time_to_train_s":
        return next(((d, "", u) for d, u in ((86400, " days"), (3600, " h")) if value >= d), (1, "", " s"))
    if field == "energy_kwh":
        return (1000, "", " MWh") if value >= 1000 else (1, "", " kWh")
    if field == "co2_kg":
        return (1000, "", " t") if value >= 1000 else (1, "", " kg")
    return {"tokens_per_s": (1, "", " tokens/s"), "mfu": (0.01, "", "%"), "cost_usd": (1, "$", ""),
            "ttft_s": (1e-3, "", " ms"), "tpot_s": (1e-3, "", " ms"), "usd_per_million_tokens": (1, "$", ""),
            "per_gpu_bytes": (1e9, "", " GB"), "count": (1, "", "")}[field]


# field -> its name in English and Chinese
SHOWN: dict[str, tuple[str, str]] = {
    "tokens_per_s": ("tokens/s", "吞吐（tokens/s）"), "mfu": ("MFU", "MFU"), "time_to_train_s": ("time to train", "训练用时"),
    "cost_usd": ("cost", "成本"), "energy_kwh": ("energy", "能耗"), "co2_kg": ("CO₂", "CO₂"), "ttft_s": ("TTFT", "首 token 时延"),
    "tpot_s": ("time per output token", "每个输出 token 用时"), "usd_per_million_tokens": ("$/M tokens", "每百万 token 美元"),
    "per_gpu_bytes": ("memory per GPU", "每卡显存"), "count": ("GPUs", "GPU 数"),
}


def shown(field: str, value: float, lang: Lang = "en") -> str:
    """A predicted value of an option field in the unit its size reads best in: '1,240 MWh', '455 t'."""
    divisor, prefix, suffix = _unit(field, value)
    suffix = _ZH_UNITS.get(suffix, suffix) if lang == "zh" else suffix
    return f"{prefix}{_sig(value / divisor)}{suffix}"


def banded(field: str, value: float, band: ErrorBand, lang: Lang = "en") -> str:
    """One predicted value with its band, or with the number of runs that were too few for one."""
    divisor, prefix, _ = _unit(field, value)
    shown_value = shown(field, value, lang)
    if band.low is None or band.high is None:
        if lang == "zh":
            return f"{shown_value}（仅 {band.points} 次实测运行，不足以给出误差范围）"
        return f"{shown_value} (only {band.points} measured runs: too few for a band)"
    spread = f"{prefix}{_sig(band.low / divisor)}–{prefix}{_sig(band.high / divisor)}"
    if lang == "zh":
        return f"{shown_value}（{spread}，{band.points} 次实测运行的 {band.coverage:.0%}）"
    return f"{shown_value} ({spread}, {band.coverage:.0%} of {band.points} measured runs)"


def lines(option: Option, lang: Lang = "en") -> list[str]:
    """'name: value (low–high, 80% of n measured runs)' for every banded number of the option."""
    out = []
    for field, band in option.bands.items():
        value = getattr(option, field)
        if value is not None and field in SHOWN:
            out.append(f"{SHOWN[field][lang == 'zh']}{'：' if lang == 'zh' else ': '}{banded(field, value, band, lang)}")
    return out
