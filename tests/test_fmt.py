"""One way to print a quantity: the command line, answers and the site share gpukb.core.fmt."""

import pytest

import gpukb
from gpukb.core import fmt
from gpukb.site import text as site_text


@pytest.mark.parametrize(("value", "expected"), [
    (True, "true"), (False, "false"), (1234.5, "1,234"), (0.012345, "0.01235"), (7, "7"), ("ZeRO", "ZeRO"),
    (float("inf"), "inf"),
])
def test_number_prints_values_as_a_trace_shows_them(value, expected):
    assert fmt.number(value) == expected


@pytest.mark.parametrize(("seconds", "lang", "expected"), [
    (0.0123, "en", "12.30 ms"), (0.0123, "zh", "12.30 ms"), (90.0, "zh", "90.0 s"), (90.0, "en", "90.0 s"),
    (7200.0, "zh", "2.0 小时"), (3 * 86400.0, "en", "3.0 days"),
])
def test_durations_read_the_same_in_both_languages(seconds, lang, expected):
    assert fmt.duration(seconds, lang) == expected


def test_the_site_has_no_formatters_of_its_own():
    # a second copy drifted before: the site printed sub-second durations as "0.0 s"
    assert not {"number", "gb", "duration"} & set(vars(site_text))


def test_the_strategy_is_described_by_the_option_in_either_language():
    option = gpukb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["a100-sxm-80gb"], "gpu_count": 8,
                        "placement": "all"}).options[0]
    s = option.strategy
    assert s.describe("en").startswith(f"data parallel {s.data_parallel}, tensor parallel {s.tensor_parallel}")
    assert s.describe("zh").startswith(f"数据并行 {s.data_parallel}，张量并行 {s.tensor_parallel}")
    assert s.tag().startswith(f"dp{s.data_parallel}")
