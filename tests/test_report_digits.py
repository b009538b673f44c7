"""A report never rounds a band or an interval so that its two different ends print as one
number (issue 34), and checks are reported apart from the counted claims."""

from __future__ import annotations

import re

import pytest

from shallowflow.reproductions.claims import Claim, Source, printed, threshold
from shallowflow.reproductions.report import claims_table, digits, render


def _numbers(cell: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", cell)]


@pytest.mark.parametrize("lo, hi", [(0.175043, 0.175044), (1.0, 1.0 + 1e-12), (-3e-7, -2.9999e-7),
                                    (2000.0, 4500.0), (123456.7, 123456.8)])
def test_a_band_whose_ends_differ_never_prints_them_equal(lo, hi):
    c = Claim("x", "a claim", [lo, hi], (lo + hi) / 2, "reproduced", interval=(lo, hi),
              source=printed("Table 1"))
    row = claims_table([c]).splitlines()[-1]
    cells = row.split("|")
    reference, interval = _numbers(cells[2]), _numbers(cells[5])
    assert reference[0] != reference[1] and interval[0] != interval[1]
    # and the printed numbers round back to the true ends to within their printed precision
    assert reference[0] <= reference[1]


def test_an_equal_pair_prints_with_the_default_digits():
    assert digits([0.5, 0.5]) == 4
    assert digits([1.0, 1.0 + 1e-12]) > 4


def test_measured_is_shown_with_the_digits_that_tell_it_from_the_reference():
    c = Claim("x", "s", 0.175043, 0.1750431, "reproduced", source=printed("eq. (3)"))
    cells = claims_table([c]).splitlines()[-1].split("|")
    assert _numbers(cells[2]) != _numbers(cells[4])


def test_checks_are_reported_apart_and_sources_are_named():
    claims = [Claim("a", "counted", 1.0, 1.0, "reproduced", source=printed("Fig. 2")),
              Claim("b", "by construction", 1.0, 1.0, "reproduced", role="check",
                    source=threshold("the project's rule"))]
    text = render("T", "s", [], claims, [], "quick", {}, "float64")
    counted, checks = text.split("## Checks")
    assert "**a**" in counted and "**b**" not in counted and "**b**" in checks
    assert "Reference (printed): Fig. 2" in text and "Reference (threshold)" in text


def test_a_source_must_name_a_known_kind_and_say_where():
    with pytest.raises(ValueError):
        Source("paper", "Fig. 1")
    with pytest.raises(ValueError):
        Source("printed", " ")
    with pytest.raises(ValueError):
        Claim("a", "s", 1, 1, "reproduced", role="counted", source=printed("Fig. 1"))
    with pytest.raises(TypeError):  # every claim says where its reference comes from
        Claim("a", "s", 1, 1, "reproduced")  # type: ignore[call-arg]
