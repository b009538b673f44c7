"""dana-fig3: convergence probability and normalised final loss against n at d = 100.

Paper (000 §5.1, App. B; MATH.md §1.4(12)-(13), §5): d = 100, n in [2500, 3500], 25 runs per n,
p = p(n, 0.05); the probability of convergence falls from 1 to 0 around n = 3000 and the final
loss, relative to the initial one, is about 0.6 % beyond the threshold. The threshold is fitted
here by binomial maximum likelihood of a logistic curve with free slope (the authors' code fixes
the slope; that fit is reported as a variant).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

from shallowflow.fits import grid_sigmoid_threshold, logistic_threshold
from shallowflow.reproductions.base import Context, Reproduction, register
from shallowflow.reproductions.claims import Claim, interval_verdict
from shallowflow.reproductions.dana.convergence import convergence_grid, summarise
from shallowflow.theory.good_init import lemma5_bound

PRESETS = {
    "quick": {"d": 30, "n_min": 80, "n_max": 300, "n_step": 20, "runs": 10,
              "extend_min": 0, "extend_runs": 0, "variant_runs": 5, "seed": 0},
    # the paper's grid (25 runs per n in [2500, 3500]) plus an extension below it with fewer
    # runs, where this simulation finds the transition (report)
    "paper": {"d": 100, "n_min": 2500, "n_max": 3500, "n_step": 50, "runs": 25,
              "extend_min": 1500, "extend_runs": 10, "variant_runs": 10, "seed": 0},
}
PAPER_THRESHOLD = 3000.0  # at d = 100
PAPER_FINAL_LOSS = 0.006


def build(ctx: Context) -> list[Claim]:
    P = ctx.params
    main_ns = np.arange(P["n_min"], P["n_max"] + 1, P["n_step"])
    ext_ns = (np.arange(P["extend_min"], P["n_min"], P["n_step"])
              if P["extend_min"] and P["extend_runs"] else np.array([], int))
    plan = {"gaussian": [(main_ns, P["runs"], P["seed"]), (ext_ns, P["extend_runs"], P["seed"] + 3)],
            "uniform": [(np.concatenate([ext_ns, main_ns]), P["variant_runs"], P["seed"] + 7)]}
    grids: dict[str, list[xr.Dataset]] = {}
    for init, parts in plan.items():
        for k, (grid_ns, runs, seed) in enumerate(parts):
            if len(grid_ns) and runs > 0:
                g = convergence_grid(grid_ns, P["d"], None, runs, seed, init, ctx.show_progress)
                grids.setdefault(init, []).append(g)
                ctx.data(f"runs_{init}_{k}", g)
    ns = np.sort(np.concatenate([ext_ns, main_ns]))

    fits, tables = {}, {}
    for init, gs in grids.items():
        for rule in ("text", "code"):
            s = xr.concat([summarise(g, rule) for g in gs], dim="n").sortby("n")
            tables[init, rule] = s
            try:
                fits[init, rule] = logistic_threshold(s.n.values, s.successes.values,
                                                      s.trials.values)
            except ValueError:
                fits[init, rule] = None
    main, main_fit = tables["gaussian", "text"], fits["gaussian", "text"]

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    styles = {("gaussian", "text"): ("C0", "o", "-"), ("gaussian", "code"): ("C1", "s", "--"),
              ("uniform", "text"): ("C2", "^", ":"), ("uniform", "code"): ("C3", "v", ":")}
    nn = np.linspace(ns.min(), ns.max(), 400)
    for key, s in tables.items():
        c, m, ls = styles[key]
        label = f"w {key[0]}, rule {'C_y-/(2n)' if key[1] == 'text' else '1/(2n)'}"
        ax1.plot(s.n, s.probability, m, color=c, ms=4, label=label)
        if fits[key] is not None:
            ax1.plot(nn, fits[key].probability(nn), ls, color=c, lw=1)
        ax2.plot(s.n, 100 * s.normalised_final_loss, m + ls, color=c, ms=4, lw=1, label=label)
    if main_fit is not None:
        ax1.axvline(main_fit.threshold, color="k", lw=0.8)
        ax1.axvspan(*main_fit.interval, color="k", alpha=0.1)
    ax1.set_xlabel("n")
    ax1.set_ylabel("probability of convergence")
    ax1.legend(fontsize=7)
    ax2.set_xlabel("n")
    ax2.set_ylabel("final / initial loss (%), 0 if converged")
    ax2.axhline(100 * PAPER_FINAL_LOSS, color="k", lw=0.6, ls="--", label="paper: 0.6 %")
    ax2.legend(fontsize=7)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
    fig.suptitle(f"DPB Fig. 3: d = {P['d']}, p = p(n, 0.05), {P['runs']} runs per n "
                 "(float64, GD lr = 1 = one unit of flow time)", fontsize=10)
    ctx.figure("fig3_convergence", fig,
               "Left: fraction of runs reaching the loss threshold within t_inf, with the "
               "binomial maximum-likelihood logistic fits (lines) and the main fit's 95% profile "
               "interval (band). Right: mean normalised final loss (0 for converged runs).")

    claims = []
    if main_fit is None:
        claims.append(Claim(
            "transition_n", "Convergence probability drops from 1 to 0 near n = 3000 at d = 100",
            PAPER_THRESHOLD, f"no transition in n = {ns[0]}..{ns[-1]}: convergence fraction "
            f"{float(main.probability.mean()):.2f}", "not reproduced" if P["d"] == 100 else
            "inconclusive", None, "The logistic fit needs both converged and failed runs."))
    else:
        lo, hi = main_fit.interval
        if P["d"] == 100:
            verdict = interval_verdict(PAPER_THRESHOLD, (lo, hi), max_width=600)
            note = ""
        else:
            verdict = "inconclusive"
            note = (f"This preset runs d = {P['d']}; the paper's value is for d = 100 "
                    "(use --preset paper).")
        variants = {f"{i} init, {r} rule": (None if f is None else round(f.threshold, 1))
                    for (i, r), f in fits.items()}
        variants["DPB code's fixed-slope grid fit (gaussian, text rule)"] = round(
            grid_sigmoid_threshold(main.n.values, main.probability.values), 1)
        claims.append(Claim(
            "transition_n", "Convergence probability drops from 1 to 0 near n = 3000 at d = 100",
            PAPER_THRESHOLD, round(main_fit.threshold, 1), verdict, (round(lo, 1), round(hi, 1)),
            f"Logistic fit by binomial ML (free width {main_fit.width:.3g}); 95% profile "
            f"likelihood interval. {note}", variants))
    edge = main_fit.threshold if main_fit is not None else np.median(ns)
    runs_g = grids["gaussian"]
    vals = np.concatenate([
        xr.where(g.converged_text, 0.0, g.final_loss / g.initial_loss).where(g.n >= edge,
                                                                            drop=True).values.ravel()
        for g in runs_g if (g.n >= edge).any()] or [np.array([])])
    if len(vals):
        rng = np.random.default_rng(0)
        boot = [rng.choice(vals, len(vals)).mean() for _ in range(2000)]
        lo, hi = np.quantile(boot, [0.025, 0.975])
        mean = float(vals.mean())
        verdict = ("reproduced" if lo <= PAPER_FINAL_LOSS <= hi or abs(mean - PAPER_FINAL_LOSS) < 0.002
                   else "not reproduced")
        if P["d"] != 100:
            verdict = "inconclusive"
        claims.append(Claim(
            "final_loss_beyond_threshold",
            "Beyond the threshold the final loss is about 0.6% of the initial loss",
            PAPER_FINAL_LOSS, round(mean, 5), verdict, (round(float(lo), 5), round(float(hi), 5)),
            f"Mean of L_end/L(0) over all runs with n >= fitted threshold (converged runs count "
            f"0); 95% bootstrap interval over runs. d = {P['d']}.",
            {f"{i} init, {r} rule": round(float(t.normalised_final_loss.where(
                t.n >= edge).mean()), 5) for (i, r), t in tables.items()}))
    good = float(np.mean(np.concatenate([g.good_init.values.ravel() for g in runs_g])))
    bound = float(np.min(np.concatenate([lemma5_bound(g.n.values, g.p.values) for g in runs_g])))
    n_init = sum(g.good_init.size for g in runs_g)
    claims.append(Claim(
        "lemma5_bound", "P(every point has a correctly-signed active neuron) >= 1 - n (3/4)^p",
        round(bound, 4), round(good, 4),
        "reproduced" if good >= bound else "not reproduced", None,
        f"Fraction of the {n_init} Gaussian initialisations satisfying "
        "event I (MATH.md §1.4(5)) against the smallest bound over the grid."))
    rise = float(np.max(np.concatenate([g.max_rise.values.ravel() for g in runs_g])))
    gap = int(sum(int(g.text_rule_gap.sum()) for g in runs_g))
    p_all = np.concatenate([g.p.values for g in runs_g])
    ctx.section("Protocol", (
        f"Sphere data (x = rho u, rho ~ U[1,2]), labels eps U[1,2], a fresh data set and "
        f"initialisation per run; d = {P['d']}, n = {ns[0]}..{ns[-1]} step {P['n_step']}, "
        f"p = p(n, 0.05) = {int(p_all.min())}..{int(p_all.max())}; GD lr = 1, T = p for "
        f"t_inf = 1.5 (sqrt(np)/4) log(np) epochs, stopping at L < 1/(2n). Both rules are read "
        f"from the same runs (the text's threshold C_y^-/(2n) is the larger one, so a run "
        f"stopped at 1/(2n) passed it): text rule = smallest recorded loss below C_y^-/(2n); "
        f"{gap} run(s) went below it and ended above; the largest relative loss increase "
        f"between two records was {rise:.2g}. Variant: the authors' code's uniform first-layer "
        "initialisation, "
        f"{P['variant_runs']} runs per n. Extension below the paper's grid: n = "
        f"{P['extend_min']}..{P['n_min'] - P['n_step']} with {P['extend_runs']} runs per n "
        "(0: none)."))
    ctx.summary = (
        "Convergence probability of DPB's two-layer ReLU network on random sphere data as the "
        "number of points n grows at fixed dimension d (Figure 3 of the paper).")
    return claims


register(Reproduction("dana-fig3", "convergence probability and final loss against n",
                      "Dana, Pillaud-Vivien, Bach (000), Figure 3", build, PRESETS, __doc__ or ""))
