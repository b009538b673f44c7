"""Initialisation schemes: pure functions ``key -> Network`` (docs/math.md §1.2, §2.2, §3.1, §3.7, §4.1).

Every scheme takes a ``jax.random`` key, the width p and the input dimension d (bias coordinate
included) and returns a :class:`~shallowflow.model.network.Network`. ``scale`` is the paper's lambda (BF,
TBLEL) or alpha / epsilon (MMV); ``width_scaling`` divides it by sqrt(p) (BF eq.3, TBLEL App. A).

| scheme          | hidden w_j                               | output a_j                           |
|-----------------|------------------------------------------|--------------------------------------|
| dpb (gaussian)  | N(0, I/d)                                | eps_j (||w_j|| + E_j), E_j ~ Exp(1)  |
| dpb (uniform)   | U(-1/sqrt d, 1/sqrt d) entries (code)    | same                                 |
| dpb, scale c    | c w_j, drawn as above (c = 1: the paper) | drawn from the unscaled w_j          |
| balanced        | s * uniform direction (norm exactly s)   | eps_j ||w_j||                        |
| balanced_gauss. | N(0, s^2 I)                              | eps_j ||w_j||                        |
| gaussian        | N(0, s^2 I)                              | N(0, s^2)  (unbalanced; MMV's small) |
| dominated       | U([-s, s]) entries                       | eps_j s sqrt(d)                      |
| group           | in the span of its own group (orthog.)   | s_j ||w_j||                          |
| pytorch         | U(-1/sqrt d, 1/sqrt d) entries           | U(-1/sqrt p, 1/sqrt p)               |
| xavier          | N(0, I/d)                                | 1 (output "ones") or N(0, 1/p)       |

with eps_j Rademacher and s = scale (/ sqrt(p) when ``width_scaling``).
"""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
from jax import Array

from shallowflow.model.network import Network


def _rademacher(key: Array, shape: tuple[int, ...], dtype: jnp.dtype) -> Array:
    return jax.random.rademacher(key, shape).astype(dtype)


def _effective_scale(scale: float, p: int, width_scaling: bool) -> float:
    return scale / p**0.5 if width_scaling else scale


def dpb(
    key: Array,
    p: int,
    d: int,
    first_layer: Literal["gaussian", "uniform"] = "gaussian",
    first_layer_scale: float = 1.0,
    dtype: jnp.dtype = jnp.float64,
) -> Network:
    """DPB (docs/math.md §1.2): paper w ~ N(0, I/d), or code U(-1/sqrt d, 1/sqrt d) entries;
    a_j = eps_j (||w_j|| + E_j) with E_j ~ Exp(1), so |a_j| - ||w_j|| ~ Exp(1) (Assumption 1).
    Then W <- c W with c = ``first_layer_scale`` (a unchanged; the authors' later Experiment-2
    protocol takes c = 0.01, so |a_j| - ||w_j|| >= Exp(1) there)."""
    kw, ks, ke = jax.random.split(key, 3)
    if first_layer == "gaussian":
        W = jax.random.normal(kw, (p, d), dtype) / jnp.sqrt(d)
    elif first_layer == "uniform":
        bound = 1.0 / jnp.sqrt(d)
        W = jax.random.uniform(kw, (p, d), dtype, -bound, bound)
    else:
        raise ValueError(f"first_layer: must be 'gaussian' or 'uniform', got {first_layer!r}")
    a = _rademacher(ks, (p,), dtype) * (
        jnp.linalg.norm(W, axis=1) + jax.random.exponential(ke, (p,), dtype)
    )
    if first_layer_scale != 1.0:  # c = 1 adds no operation: the paper's numbers bit for bit
        W = first_layer_scale * W
    return Network(a, W)


def balanced(
    key: Array,
    p: int,
    d: int,
    scale: float,
    width_scaling: bool = False,
    radial: Literal["fixed", "gaussian"] = "fixed",
    dtype: jnp.dtype = jnp.float64,
) -> Network:
    """Balanced start a_j = eps_j ||w_j|| (docs/math.md §3.1 Assumption 3, §2.2 'balanced').

    ``radial="fixed"``: w_j = s * u_j with u_j uniform on the sphere, so ||w_j|| = |a_j| = s (TBLEL).
    ``radial="gaussian"``: w_j ~ N(0, s^2 I) (BF code, and MMV's eps W_0 with s = eps/sqrt(d)).
    """
    s = _effective_scale(scale, p, width_scaling)
    kw, ks = jax.random.split(key)
    G = jax.random.normal(kw, (p, d), dtype)
    if radial == "fixed":
        W = s * G / jnp.linalg.norm(G, axis=1, keepdims=True)
    elif radial == "gaussian":
        W = s * G
    else:
        raise ValueError(f"radial: must be 'fixed' or 'gaussian', got {radial!r}")
    return Network(_rademacher(ks, (p,), dtype) * jnp.linalg.norm(W, axis=1), W)


def gaussian(
    key: Array, p: int, d: int, scale: float, width_scaling: bool = False,
    dtype: jnp.dtype = jnp.float64,
) -> Network:
    """Unbalanced Gaussian: w_j ~ N(0, s^2 I), a_j ~ N(0, s^2) independent (BF §2.2, MMV §4.1)."""
    s = _effective_scale(scale, p, width_scaling)
    kw, ka = jax.random.split(key)
    return Network(s * jax.random.normal(ka, (p,), dtype), s * jax.random.normal(kw, (p, d), dtype))


def dominated(
    key: Array, p: int, d: int, scale: float, width_scaling: bool = False,
    dtype: jnp.dtype = jnp.float64,
) -> Network:
    """Dominated start: w entries U([-s, s]), a_j = eps_j s sqrt(d), so |a_j| >= ||w_j|| (§2.2)."""
    s = _effective_scale(scale, p, width_scaling)
    kw, ks = jax.random.split(key)
    W = jax.random.uniform(kw, (p, d), dtype, -s, s)
    return Network(_rademacher(ks, (p,), dtype) * s * jnp.sqrt(d), W)


def pytorch(key: Array, p: int, d: int, dtype: jnp.dtype = jnp.float64) -> Network:
    """PyTorch's nn.Linear default (He-uniform, a = sqrt 5): W entries U(-1/sqrt d, 1/sqrt d),
    a entries U(-1/sqrt p, 1/sqrt p) (TBLEL Fig. 6, docs/math.md §3.7)."""
    kw, ka = jax.random.split(key)
    bw, ba = 1.0 / jnp.sqrt(d), 1.0 / jnp.sqrt(p)
    return Network(
        jax.random.uniform(ka, (p,), dtype, -ba, ba),
        jax.random.uniform(kw, (p, d), dtype, -bw, bw),
    )


def xavier(key: Array, p: int, d: int, output: Literal["ones", "gaussian"] = "ones",
           dtype: jnp.dtype = jnp.float64) -> Network:
    """Xavier (Glorot) normal start of the landscape papers (Safran and Shamir 2018; docs/math.md
    §11.8): w_ij ~ N(0, 1/d) entries; a_j = 1 (``output="ones"``, the output weights the
    Safran-Shamir objective fixes) or a_j ~ N(0, 1/p)."""
    kw, ka = jax.random.split(key)
    W = jax.random.normal(kw, (p, d), dtype) / jnp.sqrt(d)
    if output == "ones":
        return Network(jnp.ones((p,), dtype), W)
    if output == "gaussian":
        return Network(jax.random.normal(ka, (p,), dtype) / jnp.sqrt(p), W)
    raise ValueError(f"output: must be 'ones' or 'gaussian', got {output!r}")


def group(
    key: Array,
    X: Array,
    y: Array,
    p: int,
    scale: float = 1.0,
    direction: Literal["random", "aligned"] = "random",
) -> Network:
    """Group initialisation (DPB §4.1 eq.9, docs/math.md §1.2) for orthogonal inputs.

    The n points split into p consecutive groups of k = n/p. Neuron j is
    w_j = c_j sum_{i in group j} u_ij x_i / ||x_i||^2 with u_ij > 0, so <w_j, x_i> = c_j u_ij > 0 on
    its group and 0 elsewhere (inactive forever, sigma'(0) = 0). ``direction="random"`` draws
    u_ij ~ |N(0, 1)|; ``"aligned"`` takes u_ij = |y_i| (w_j parallel to D_j, c_0 = 1 in §1.5 for
    orthonormal x). c_j sets ||w_j|| = scale (N_0 = scale^2), and a_j = s_j ||w_j|| with s_j the
    common sign of the group's labels. Callers check divisibility and sign consistency.
    """
    n, _ = X.shape
    k = n // p
    if direction == "random":
        u = jnp.abs(jax.random.normal(key, (n,), X.dtype))
    elif direction == "aligned":
        u = jnp.abs(y)
    else:
        raise ValueError(f"direction: must be 'random' or 'aligned', got {direction!r}")
    coeff = (u / jnp.sum(X * X, axis=1)).reshape(p, k)
    W = jnp.einsum("jk,jkd->jd", coeff, X.reshape(p, k, -1))
    W = scale * W / jnp.linalg.norm(W, axis=1, keepdims=True)
    signs = jnp.sign(y.reshape(p, k)[:, 0])
    return Network(signs * jnp.linalg.norm(W, axis=1), W)
