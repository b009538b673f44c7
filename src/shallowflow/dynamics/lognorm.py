"""Log-norm parametrisation for tiny initialisations (docs/math.md §0.3, §3.2).

Each neuron is stored as w_j = exp(rho_j) u_j with ||u_j|| = 1 and a_j = s_j exp(alpha_j). The
plain GD step w' = w - eta T a v, a' = a - eta T <w, v> (v_j = kappa sum_i g_i sigma'(z_ij) x_i;
dL/da_j = <w_j, v_j> because sigma(z) = sigma'(z) z) is, exactly,

    q_j    = u_j - eta T s_j exp(alpha_j - rho_j) v_j
    rho_j' = rho_j + log ||q_j||,        u_j' = q_j / ||q_j||
    f_j    = 1 - eta T r s_j exp(rho_j - alpha_j) <u_j, v_j>
    alpha_j' = alpha_j + log |f_j|,      s_j' = s_j sign(f_j)

with r the second layer's relative rate (the plain step a' = a - eta T r <w, v> = a f; 1: plain
GD, 0: frozen; docs/math.md §4.5).

Only the ratio exp(alpha - rho) = |a|/||w|| enters, so nothing underflows at lambda = 1e-300 or
exp(-1000); the map is plain GD to rounding ("free" balance). With ``tied`` balance alpha = rho
and s are kept (a_j = s_j ||w_j|| exactly): the same first-layer step with the second layer on
the balanced manifold, which gradient flow preserves (docs/math.md §0.3), an O(eta) different
scheme. The output uses a_j sigma(<w_j, x>) = s_j exp(alpha_j + rho_j) sigma(<u_j, x>), which
rounds to 0 harmlessly while the network is negligible.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
from jax import Array

from shallowflow.dynamics.parametrisation import PlainView, log_shift
from shallowflow.model.network import BatchGradient


class LogNormCoordinates(NamedTuple):
    U: Array  # unit directions (d, R, p)
    rho: Array  # log ||w_j||, (R, p)
    alpha: Array  # log |a_j|, (R, p)
    s: Array  # sign of a_j, (R, p)


class LogNorm:
    """The :class:`~shallowflow.dynamics.parametrisation.Parametrisation` in log-norm
    coordinates (see the module docstring)."""

    name = "lognorm"
    tied_balance = True
    log_final = True
    dead_stay_put = False  # u / ||u|| with ||u|| = 1 to rounding moves u and rho by rounding

    def initial(self, a: Array, Wt: Array, log_lambda: Array | None, tied: bool) -> LogNormCoordinates:
        """Log-norm coordinates of lambda (a, Wt): u = w/||w||, rho = log ||w|| + log lambda,
        alpha = log |a| + log lambda, s = sign(a); ``tied``: alpha = rho."""
        norm = jnp.sqrt(jnp.sum(Wt**2, axis=0))
        shift = log_shift(a, log_lambda)[:, None]
        params = LogNormCoordinates(Wt / norm[None], jnp.log(norm) + shift,
                               jnp.log(jnp.abs(a)) + shift, jnp.sign(a))
        return params._replace(alpha=params.rho) if tied else params

    def weights(self, params: LogNormCoordinates) -> tuple[Array, Array]:
        """Effective (a, Wt) for the forward pass: a_eff = s exp(alpha + rho) with directions U,
        so a_eff sigma(<u, x>) = a sigma(<w, x>); the gradient is then taken with respect to U."""
        return params.s * jnp.exp(params.alpha + params.rho), params.U

    def update(self, params: LogNormCoordinates, bg: BatchGradient, rate: float, kappa: float,
               rate_a: float, tied: bool) -> LogNormCoordinates:
        """The GD step of size rate = eta T in log-norm coordinates, the second layer's at
        rate_a * rate (see the module docstring; ``rate_a`` is ignored when ``tied``). ``bg`` is
        the gradient at (a_eff, U): v = kappa M and <u_j, v_j> = bg.grad_a."""
        v = kappa * bg.M
        q = params.U - (rate * params.s * jnp.exp(params.alpha - params.rho))[None] * v
        q_norm = jnp.sqrt(jnp.sum(q**2, axis=0))
        rho = params.rho + jnp.log(q_norm)
        U = q / q_norm[None]
        if tied:
            return LogNormCoordinates(U, rho, rho, params.s)
        if rate_a == 0:
            return LogNormCoordinates(U, rho, params.alpha, params.s)
        f = 1.0 - (rate * rate_a) * params.s * jnp.exp(params.rho - params.alpha) * bg.grad_a
        return LogNormCoordinates(U, rho, params.alpha + jnp.log(jnp.abs(f)), params.s * jnp.sign(f))

    def view(self, params: LogNormCoordinates, bg: BatchGradient | None, perp_sq: Array,
             log_perp_sq: Array, kappa: float, rate_a: float) -> PlainView:
        """a = s exp(alpha), Wt = exp(rho) U, log ||w_j|| = logaddexp(2 rho, log ||w_perp||^2) / 2
        (exact when ||w_j||^2 underflows), log |a_j| = alpha, and ||grad L||^2 =
        sum_j exp(2 alpha_j) kappa^2 ||M_j||^2 (+ r exp(2 rho_j) <u_j, v_j>^2 when the second
        layer trains at rate r = ``rate_a``: dL/da_j = <w_j, v_j>)."""
        p = params
        a, Wt = p.s * jnp.exp(p.alpha), jnp.exp(p.rho)[None] * p.U
        log_w = 0.5 * jnp.logaddexp(2 * p.rho, log_perp_sq)
        grad_norm_sq = None
        if bg is not None:
            g2 = jnp.exp(2 * p.alpha) * kappa**2 * jnp.sum(bg.M**2, axis=0)
            if rate_a != 0:
                ga2 = jnp.exp(2 * p.rho) * bg.grad_a**2
                g2 = g2 + (ga2 if rate_a == 1 else rate_a * ga2)
            grad_norm_sq = jnp.sum(g2, axis=1)
        return PlainView(a, Wt, log_w, p.alpha, grad_norm_sq)


LOGNORM = LogNorm()
