"""Where each town-* claim's reference comes from (:class:`~shallowflow.reproductions.claims.
Source`): the paper's words (paper 003: Town, Boursier, Lewis, Englert, Lazić), quoted, or how
the project derived the value (mostly Algorithm 1, the paper's limit process, run on the
simulated problem); the project's own thresholds are named as such. The text copy of the paper
drops inline mathematics; a bracket [...] restores it. The audit of these claims is
docs/claims/town.md.
"""

from __future__ import annotations

from shallowflow.reproductions.claims import derived, printed, qualitative, threshold

# town-fig1 (Figure 1, App. A.1)
ONE_NEURON_PER_JUMP = derived(
    "The jump sequence j_1, j_2, ... of Algorithm 1 (docs/math.md §3.4) run on this problem's "
    "data, initial signs and directions; one neuron per drop is the paper's §1: 'the loss "
    "alternates between long idle plateaus and abrupt decreases, each corresponding to the "
    "activation of a new neuron'. A neuron counts as grown at half its final norm, and a drop "
    "owns the neurons growing between the midpoints of neighbouring drops (the project's "
    "measurement).")
JUMP_TIMES = derived(
    "τ_k of Algorithm 1 (docs/math.md §3.4) for this problem, c_L = 2/n (MSE, docs/math.md "
    "§3.1); Theorem 2: 'as the initialization scale tends to [0], the accelerated flow converges "
    "to [the limit process] ... where [they] are respectively the limit process and jump times "
    "defined in algorithm 1'. The 2 % tolerance at the smallest λ is the project's threshold "
    "(symmetric: a relative error).")
PLATEAUS = derived(
    "L(θ^(k)) = (1/n) Σ_{i unfitted} y_i² of Algorithm 1's k-th saddle (docs/math.md §3.4), in "
    "App. A.1's MSE; the 1 % tolerance is the project's threshold (symmetric: a relative "
    "deviation).")
FITTED = derived(
    "Σ_{k' ≤ k} |S_k'|, the points fitted by Algorithm 1's k-th saddle (docs/math.md §3.4); the "
    "50 % rule is App. A.1's: 'we consider a data point fitted when the output of the network "
    "for that point is at least 50% of the corresponding label'.")

# town-fig3 (Figure 3, App. A.2)
PIECEWISE_LINEAR = qualitative(
    "App. A.2 (Figure 3): 'Therefore, the logarithms of the neuron norms are piecewise linear "
    "curves with decreasing slopes'. R² >= 0.999 of the straight-line fits and a rise of at most "
    "2 % of max β between consecutive slopes are the project's thresholds.")
SLOPES = derived(
    "β_j^(k) = c_L (Σ_{i ∈ A_j ∩ U_k} y_i²)^{1/2} of Algorithm 1 (docs/math.md §3.2, §3.4); "
    "App. A.2: 'The slopes of these linear segments as well as the jump times are predicted by "
    "algorithm 1. Specifically, between jump times [τ_k] and [τ_{k+1}], the slope for neuron [j] "
    "is proportional to [||D_j^(k)||]'. The tolerances (2 % relative where β > 0, 0.02 max β "
    "where β = 0) are the project's thresholds, symmetric.")

# town-fig4 (Figure 4, App. A.2)
JUMP_DIRECTION = derived(
    "D_j^(0)/||D_j^(0)|| of Algorithm 1, eq. (9) (docs/math.md §3.4); App. A.2 (Figure 4): 'The "
    "neurons orient themselves in the directions predicted by algorithm 1 and their norm starts "
    "to increase exponentially'. cos >= 0.99 is the project's threshold, one-sided because the "
    "reference 1 is the largest cosine.")
ALONE = qualitative(
    "App. A.2 (Figure 4): 'Just before time [τ_1], one neuron has a significant norm while the "
    "remaining neurons have norms that are still much smaller'. Read at 1.02 τ_1 (GD's jump lags "
    "τ_1 by O(1/log(1/λ))): at least half the final norm, the others at most 1e-3 (the "
    "project's thresholds).")
REALIGNMENT = qualitative(
    "App. A.2 (Figure 4): 'Just after time [τ_1], the neuron directions predicted by algorithm 1 "
    "change and the neurons that did not fit any data yet turn quickly towards their new "
    "predicted directions'. cos >= 0.99 with Algorithm 1's D_j^(1) is the project's threshold "
    "(one-sided: 1 is the largest cosine).")

# town-fig5 (Figure 5, App. A.2, Theorem 3)
NORM_SLOPE = printed(
    "App. A.2 (Figure 5): 'In the plot, both axes are logarithmic. The straight lines of slope "
    "about [1/2] therefore indicate that both squared norms grow proportional to [√n]' (the "
    "value is in the figure's text; the text copy drops it, and eq. (15), ||θ*||² = "
    "2(||y_+|| + ||y_-||), grows like √n). The band 1/2 +- 0.05 ('about') and the largest "
    "deciding interval width 0.3 are the project's thresholds, symmetric.")
CONSTANT_FACTOR = qualitative(
    "App. A.2 (Figure 5): '... and that the achieved squared norm is only by a constant factor "
    "larger than the optimal one'; Theorem 3. One-sided (bounded above): the ratio's log-log "
    "slope must stay below 0.1 (the project's threshold) and every ratio >= 1 (true of any "
    "interpolator).")
INTERPOLATION = qualitative(
    "App. A.2 (Figure 5): 'The choice of [m] ensures that there are a sufficient number of "
    "neurons to ensure interpolation in a typical training run' (the width formula is illegible; "
    "here m = ceil(log(n/δ)/log(4/3)), docs/math.md §3.5). All runs (reproduced) and 80 % "
    "(partly) are the project's thresholds.")
LIMIT_APPROACH = qualitative(
    "Theorem 2: 'as the initialization scale tends to [0], the accelerated flow converges to "
    "[the limit process]'; §5 names θ_∞ 'the limiting parameters', of squared norm eq. (15)'s "
    "2 Σ_k ||D_{j_k}^(k-1)||. 80 % of the initialisations closer at the smaller λ is the "
    "project's threshold.")

# town-fig6 (Figure 6, App. A.2)
SMALL_INIT = qualitative(
    "App. A.2 (Figure 6): 'We observe that with small initialization, the square norm of the "
    "trained network approaches the theoretical optimum as the width of the network increases'. "
    "Read as a ratio to ||θ*||² decreasing in m: the bootstrap interval of its log-log slope "
    "below 0.")
HE_INIT = qualitative(
    "App. A.2 (Figure 6): 'This is in contrast to the uniform He initialization, for which the "
    "square [ℓ2]-norm of the trained network keeps increasing'. Read as a ratio increasing in m: "
    "the interval of its log-log slope above 0.")
RUNS_INTERPOLATE = threshold(
    "A precondition of the figure, not a sentence of the paper: App. A.2 trains 'for one million "
    "epochs but stopped earlier if the loss reaches [a threshold]' and compares the trained "
    "network's norm with the minimum-norm interpolator, which is meaningful for interpolators "
    "only. All runs (reproduced), at least half (partly).")

# town-convergence (Theorem 2; not a figure)
RATE = derived(
    "Theorem 2 gives convergence as λ -> 0 but no rate; the phases of its proof around a jump "
    "last O(1) in flow time, i.e. O(1/log(1/λ)) in accelerated time (docs/math.md §3.4 'Finite "
    "λ and finite step'): a log-log slope of −1 against log(1/λ). The band [−1.3, −0.7] (or a "
    "bootstrap interval containing −1) is the project's threshold, symmetric: the error is of "
    "that order, not only bounded by it.")
STEP_BIAS = derived(
    "Not in the paper (GD lr 0.01 throughout): GD is the Euler scheme of the flow and moves each "
    "jump by about lr β/2 (relative) whatever λ (docs/math.md §3.4 'Finite λ and finite step'), "
    "so the coarse step's error at the smallest λ is the larger.")
FINAL_WEIGHTS = derived(
    "Theorem 2 and §5's θ_∞, 'the limiting parameters': the final network tends to Algorithm "
    "1's last saddle as λ -> 0. The rate, O(1/log(1/λ)) or faster, is the project's bound from "
    "the proof's O(1)-flow-time phases (docs/math.md §3.4): one-sided, the slope's interval below "
    "−0.7 (the upper edge of the jump-time band).")
HAND = derived(
    "docs/math.md §3.6: Algorithm 1 worked by hand for X = I_4, y = (3, 4, 1, 2), s = (+1, +1) "
    "and the given directions, square loss (c_L = 1/4): τ = (0.8, 0.949342). The 1 % tolerance "
    "on GD's jump times at the smallest λ is the project's threshold (symmetric).")
