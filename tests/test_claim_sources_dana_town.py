"""Every claim of the dana-* and town-* reproductions says where its reference comes from
(issue 34): judged on the small synthetic Datasets of the judge tests (no training), each Claim
has a Source of a known kind with a non-empty ``where``; a printed or qualitative source quotes
the paper or names its figure, equation, theorem or section; a derived one names how (a
docs/math.md section or Algorithm 1); and the consistency checks are exactly the audited ones
(docs/claims/dana.md, docs/claims/town.md)."""

from __future__ import annotations

import numpy as np
import pytest

from shallowflow.reproductions.claims import ROLES, SOURCES
from shallowflow.reproductions.dana import fig2, fig3, fig4, fig5, fig6
from shallowflow.reproductions.town import fig1
from shallowflow.reproductions.town import fig3 as town3
from shallowflow.reproductions.town import fig4 as town4
from shallowflow.reproductions.town import fig5 as town5
from shallowflow.reproductions.town import fig6 as town6
from shallowflow.reproductions.town import limit_convergence as convergence
from test_judge_dana_fig26 import P2, PAPER6, fig2_ds, fig6_ds
from test_judge_dana_threshold import PAPER_GRID, fig3_data, params, scan_data, synthetic_grid
from test_judge_town_interp import P5, P6, fig5_ds, power_norms, trend
from test_judge_town_interp import fig6_ds as town6_ds
from test_judge_town_saddle import P0, P1, P3, P4, PC, conv_ds, fig1_ds, fig3_ds, fig4_ds


def judged() -> dict[str, list]:
    """Every judge of the two papers on a synthetic Dataset (a scan also on too few
    thresholds, the other way its claim is built)."""
    return {
        "dana-fig2": fig2.judge(fig2_ds(), P2),
        "dana-fig3": fig3.judge(fig3_data(("gaussian", synthetic_grid(PAPER_GRID, 3000, 100, 25))),
                                params("dana-fig3", "paper", ["d=100"])),
        "dana-fig4": fig4.SCAN.judge(scan_data([20, 30, 40], [110, 160, 210]), params("dana-fig4"))
        + fig4.SCAN.judge(scan_data([20, 30], [110, 160]), params("dana-fig4")),
        "dana-fig5": fig5.SCAN.judge(scan_data([15, 30, 60], [116, 164, 232]), params("dana-fig5")),
        "dana-fig6": fig6.judge(fig6_ds(uniform=True), PAPER6),
        "town-fig1": fig1.judge(fig1_ds([[0.1, 0.1], [0.0, 0.0]], [[0.0] * 3] * 2), P1),
        "town-fig3": town3.judge(fig3_ds([0.0] * 3), P3),
        "town-fig4": town4.judge(fig4_ds(), P4),
        "town-fig5": town5.judge(fig5_ds(power_norms(0.5, lams=2)), P5),
        "town-fig6": town6.judge(town6_ds(trend(-0.2), trend(0.2)), P6),
        "town-convergence": convergence.judge(conv_ds([-1.0] * 3, [-2.0] * 3), PC),
    }


CLAIMS = judged()
CHECKS = {("dana-fig3", "lemma5_bound"), ("dana-fig6", "theorem1_rate"),
          ("dana-fig6", "lemma7_bracket"), ("town-fig6", "runs_interpolate"),
          ("town-convergence", "gd_step_bias")}
PAPER_PLACES = ("'", "Figure", "eq.", "Theorem", "Lemma", "App.", "§")


@pytest.mark.parametrize("name", sorted(CLAIMS))
def test_every_claim_has_a_source(name):
    for c in CLAIMS[name]:
        assert c.source is not None, c.id
        assert c.source.kind in SOURCES and c.source.where.strip(), c.id
        assert c.role in ROLES
        where = c.source.where
        if c.source.kind in ("printed", "qualitative"):
            assert any(place in where for place in PAPER_PLACES), (c.id, where)
        if c.source.kind == "derived":
            assert "docs/math.md §" in where or "Algorithm 1" in where, (c.id, where)


def test_the_checks_are_the_audited_ones():
    roles = {(name, c.id): c.role for name, claims in CLAIMS.items() for c in claims}
    assert {key for key, role in roles.items() if role == "check"} == CHECKS


def test_no_derived_or_threshold_value_is_called_the_papers():
    """Issue 34's wording rule: a statement or note never calls a derived or threshold
    reference 'the paper's value'."""
    for claims in CLAIMS.values():
        for c in claims:
            if c.source.kind in ("derived", "threshold"):
                text = f"{c.statement} {c.notes}".lower()
                assert "paper's value" not in text and "paper value" not in text, c.id


def test_plateau_times_read_each_interval_at_a_fraction():
    """fig1's plateau reading point: the fraction ``at`` of the way from τ_k to τ_(k+1) (τ_0 = 0),
    and 1.1 τ_K for the last plateau, against the limit process's jump times by hand."""
    tau = np.asarray(P0.tau)
    starts = np.concatenate([[0.0], tau])
    for at in (0.25, 0.5, 0.75):
        expected = [starts[k] + at * (starts[k + 1] - starts[k]) for k in range(len(tau))]
        np.testing.assert_allclose(fig1.plateau_times(P0, at), [*expected, 1.1 * tau[-1]])
