"""The (leaky) ReLU kernel of Gaussian inputs and its gradient in closed form (docs/math.md §11.1–§11.4).

For x ~ N(0, I_d) and u, v in R^d at angle theta (cos theta = c = <u, v> / (|u| |v|)):

    K(u, v)        = E[relu(<u, x>) relu(<v, x>)] = |u| |v| J(c) / (2 pi),
    J(c)           = sin theta + (pi - theta) cos theta = sqrt(1 - c^2) + (pi - arccos c) c,
    K(u, u)        = |u|^2 / 2,
    grad_u K(u, v) = (|v| sin theta u / |u| + (pi - theta) v) / (2 pi),

the arc-cosine kernel of degree 1 (docs/math.md §11.1, §11.2). For the leaky ReLU
sigma_alpha(z) = max(z, alpha z) = alpha z + (1 - alpha) relu(z), with E[<u, x> relu(<v, x>)] =
<u, v> / 2 (docs/math.md §11.4):

    K_alpha(u, v) = alpha <u, v> + (1 - alpha)^2 K(u, v),
    grad_u K_alpha(u, v) = alpha v + (1 - alpha)^2 grad_u K(u, v).

**Scale.** K is |u| |v| times a function of the angle alone and grad_u K does not depend on |u|:
both are computed from the directions u / |u| and the norms, so a caller may pass unit directions
and carry the norms in the output weights (the log-norm coordinates, docs/math.md §11.5).

**Angles near 0 and pi.** J is taken as a function of c with c clipped to [-1, 1] (rounding can
put a cosine just outside). Its derivative dJ/dc = pi - theta is finite everywhere, including
c = +-1, so :func:`angle_profile` carries it as a custom derivative instead of differentiating
sqrt(1 - c^2) and arccos c separately (each infinite at c = +-1). Its own derivative,
d(pi - theta)/dc = 1 / sin theta, is floored at sin theta >= sqrt(eps) (:data:`SIN_FLOOR`),
below which c no longer resolves theta: second derivatives (jax.hessian) stay finite at parallel
and antiparallel pairs, where K is twice continuously differentiable (the factor 1 / sin theta
always meets sin^2 theta; docs/math.md §11.3).

**Zero vectors.** K(0, v) = K(u, 0) = 0. At u = 0, K(., v) is not differentiable; the code
returns grad_u K(0, v) = 0, the sigma'(0) = 0 convention of docs/math.md §0.3: <0, x> = 0 for
every x, so E[sigma'(<u, x>) x sigma(<v, x>)] = 0 (both terms, and the leaky term alpha v too),
as the finite-data engine gives a zero neuron a zero gradient. Autodiff of :func:`kernel_matrix`
at a zero vector is not defined (nan).

Arrays carry any leading batch axes (runs): U (..., p, d), V (..., k, d); float64 throughout in
the project's use (any float dtype works).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import Array


def _sin_floor(dtype: jnp.dtype) -> float:
    """sqrt(eps) of ``dtype``: below this sine, a cosine of that precision no longer resolves theta."""
    return float(jnp.finfo(dtype).eps) ** 0.5


SIN_FLOOR = _sin_floor(jnp.float64)
"""The floor of sin theta in the second derivative of J (float64; float32 uses its own sqrt(eps))."""


_PI, _PIO2_HI, _PIO2_LO = 3.14159265358979311600e+00, 1.57079632679489655800e+00, 6.12323399573676603587e-17
_PS = (1.66666666666666657415e-01, -3.25565818622400915405e-01, 2.01212532134862925881e-01,
       -4.00555345006794114027e-02, 7.91534994289814532176e-04, 3.47933107596021167570e-05)
_QS = (-2.40339491173441421878e+00, 2.02094576023350569471e+00, -6.88283971605453293030e-01,
       7.70381505559019352791e-02)


def arccos(x: Array) -> Array:
    """arccos x for x in [-1, 1], float64 to 1 ulp of numpy's: fdlibm's e_acos.c (Sun
    Microsystems 1993) written in array operations, one rational approximation R(z) of
    (arcsin sqrt z - sqrt z) / sqrt z^3 for every branch (z = x^2 where |x| < 1/2, else (1 -
    |x|) / 2 with arccos x = 2 arcsin sqrt z, or pi minus it for x < 0), then a select.
    XLA's own float64 arccos on the CPU costs about 60 ns an element, this about 5 (bench/
    bench_population.py): the kernel's angles are most of a population step. Other dtypes go
    to jnp.arccos."""
    if x.dtype != jnp.float64:
        return jnp.arccos(x)
    ax = jnp.abs(x)
    small = ax < 0.5
    z = jnp.where(small, x * x, (1.0 - ax) * 0.5)
    p = z * (_PS[0] + z * (_PS[1] + z * (_PS[2] + z * (_PS[3] + z * (_PS[4] + z * _PS[5])))))
    r = p / (1.0 + z * (_QS[0] + z * (_QS[1] + z * (_QS[2] + z * _QS[3]))))
    s = jnp.sqrt(z)
    middle = _PIO2_HI - (x - (_PIO2_LO - x * r))
    negative = _PI - 2.0 * (s + (r * s - _PIO2_LO))
    high = jax.lax.bitcast_convert_type(  # s with its low 32 bits cleared (fdlibm's df)
        jax.lax.bitcast_convert_type(s, jnp.int64) & jnp.int64(-(1 << 32)), jnp.float64)
    c = (z - high * high) / jnp.where(s > 0, s + high, 1.0)
    positive = 2.0 * (high + (r * s + c))
    return jnp.where(small, middle, jnp.where(x < 0, negative, positive))


@jax.custom_jvp
def angle(c: Array) -> Array:
    """theta = arccos(c), c clipped to [-1, 1] (:func:`arccos`); derivative -1 / max(sin
    theta, sqrt(eps))."""
    return arccos(jnp.clip(c, -1.0, 1.0))


@angle.defjvp
def _angle_jvp(primals: tuple[Array], tangents: tuple[Array]) -> tuple[Array, Array]:
    (c,), (dc,) = primals, tangents
    cc = jnp.clip(c, -1.0, 1.0)
    sine = jnp.sqrt((1.0 - cc) * (1.0 + cc))
    return angle(c), -dc / jnp.maximum(sine, _sin_floor(cc.dtype))


@jax.custom_jvp
def angle_profile(c: Array) -> Array:
    """J(c) = sin theta + (pi - theta) cos theta, theta = arccos(c), c clipped to [-1, 1]
    (docs/math.md §11.1); dJ/dc = pi - theta, finite at c = +-1 (J(1) = pi, J(-1) = 0)."""
    cc = jnp.clip(c, -1.0, 1.0)
    return jnp.sqrt((1.0 - cc) * (1.0 + cc)) + (math.pi - angle(cc)) * cc


@angle_profile.defjvp
def _angle_profile_jvp(primals: tuple[Array], tangents: tuple[Array]) -> tuple[Array, Array]:
    (c,), (dc,) = primals, tangents
    return angle_profile(c), (math.pi - angle(c)) * dc


def _norms(U: Array) -> tuple[Array, Array]:
    """Row norms |u| (..., p) and directions u / |u| (0 for a zero row)."""
    norm = jnp.sqrt(jnp.sum(U * U, axis=-1))
    safe = jnp.where(norm > 0, norm, jnp.ones_like(norm))
    return norm, jnp.where((norm > 0)[..., None], U / safe[..., None], jnp.zeros_like(U))


def cosines(U: Array, V: Array) -> tuple[Array, Array, Array]:
    """(|u_j| (..., p), |v_k| (..., k), cos theta_jk (..., p, k)); a zero row has cosine 0."""
    nu, Uh = _norms(U)
    nv, Vh = _norms(V)
    return nu, nv, jnp.einsum("...jd,...kd->...jk", Uh, Vh)


def kernel_matrix(U: Array, V: Array, leak: float = 0.0) -> Array:
    """K_alpha(u_j, v_k) for every row u_j of U (..., p, d) and v_k of V (..., k, d): (..., p, k).

    K = |u| |v| J(cos theta) / (2 pi) (ReLU, ``leak`` = alpha = 0), K_alpha = alpha <u, v> +
    (1 - alpha)^2 K (docs/math.md §11.1, §11.4). Differentiable (jax.grad, jax.hessian) wherever
    no row is zero.
    """
    nu, nv, c = cosines(U, V)
    K = nu[..., :, None] * nv[..., None, :] * angle_profile(c) / (2.0 * math.pi)
    if leak == 0.0:
        return K
    return leak * jnp.einsum("...jd,...kd->...jk", U, V) + (1.0 - leak) ** 2 * K


def self_kernel(U: Array, leak: float = 0.0) -> Array:
    """K_alpha(u_j, u_j) = (1 + alpha^2) |u_j|^2 / 2 for every row (..., p) (docs/math.md §11.1, §11.4)."""
    return 0.5 * (1.0 + leak**2) * jnp.sum(U * U, axis=-1)


def kernel_and_pullback(U: Array, V: Array, weights: Array, leak: float = 0.0
                        ) -> tuple[Array, Array]:
    """(K_alpha(u_j, v_k) (..., p, k), sum_k weights_jk grad_u K_alpha(u_j, v_k) (..., p, d)) for
    every row u_j of U (..., p, d) and v_k of V (..., k, d), from one matrix of cosines and one
    of angles (``weights`` broadcastable to (..., p, k)). With

        K(u, v)        = |u| |v| (sin theta + (pi - theta) cos theta) / (2 pi),
        grad_u K(u, v) = (|v| sin theta u / |u| + (pi - theta) v) / (2 pi)

    the sum is one matrix product over k plus a rescaled direction (docs/math.md §11.1, §11.2),
    O(p k d). A zero row u_j gets K = 0 and a zero pull (sigma'(0) = 0, module docstring). Near
    theta = 0 the rounding of cos theta moves theta by delta but the pull only by delta |cos
    theta u/|u| - v/|v|| |v| = delta sin theta |v|, so it is accurate to rounding even where
    theta itself is not. Not for autodiff (:func:`kernel_matrix` is)."""
    nu, Uh = _norms(U)
    nv, Vh = _norms(V)
    cc = jnp.clip(jnp.einsum("...jd,...kd->...jk", Uh, Vh), -1.0, 1.0)
    sine = jnp.sqrt((1.0 - cc) * (1.0 + cc))
    rest = math.pi - arccos(cc)  # pi - theta
    K = nu[..., :, None] * nv[..., None, :] * (sine + rest * cc) / (2.0 * math.pi)
    weights = jnp.broadcast_to(weights, cc.shape)
    radial = jnp.sum(weights * nv[..., None, :] * sine, axis=-1)
    M = (radial[..., None] * Uh
         + jnp.einsum("...jk,...kd->...jd", weights * rest, V)) / (2.0 * math.pi)
    if leak != 0.0:
        K = leak * jnp.einsum("...jd,...kd->...jk", U, V) + (1.0 - leak) ** 2 * K
        M = leak * jnp.einsum("...jk,...kd->...jd", weights, V) + (1.0 - leak) ** 2 * M
    return K, jnp.where((nu > 0)[..., None], M, jnp.zeros_like(M))


def kernel_pullback(U: Array, V: Array, weights: Array, leak: float = 0.0) -> Array:
    """sum_k weights_jk grad_u K_alpha(u_j, v_k) for every row u_j of U: (..., p, d) (the pull
    of :func:`kernel_and_pullback`)."""
    return kernel_and_pullback(U, V, weights, leak)[1]
