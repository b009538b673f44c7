"""Order parameters of a student against its teacher on the population, recorded inside the
compiled loop (docs/math.md §11.9). With the covariance Sigma = L L^T (L = I without one), the
student's rows w_j (p, d), the teacher's neurons v_k (k, d) and output weights b_k:

    overlap           R_jk = <w_j, v_k>_Sigma = (W Sigma V^T)_jk            (p, k)
    student_overlap   Q_ji = <w_j, w_i>_Sigma = (W Sigma W^T)_ji            (p, p)
    overlap_cos       R_jk / (|w_j|_Sigma |v_k|_Sigma)   (0 where a vector is 0)
    teacher_distance  the distance to the nearest embedded teacher, up to permutation:

        z_j = kappa |a_j| w_j, s_j = sign a_j (the effective neurons: a_j sigma(<w_j, x>) =
        s_j sigma(<z_j, x>) / kappa for the ReLU, invariant under a_j -> a_j / c, w_j -> c w_j),
        t_k = |b_k| v_k, sign b_k;
        D^2 = min over matchings of sum_{j matched to k} C_jk + sum_{j unmatched} |z_j|^2
                                    + sum_{k unmatched} |t_k|^2,
        C_jk = |z_j - t_k|^2 if s_j = sign b_k, else |z_j|^2 + |t_k|^2,

the optimal assignment of a (p + k) square cost matrix (student rows and k absent rows against
teacher columns and p silent columns). D = 0 exactly on the set G_emb of embedded teachers: each
teacher neuron carried by one student neuron, every other student neuron silent (a_j w_j = 0).
For p > k this is not every global minimum: a teacher neuron split among several student
neurons along its direction (z_j = c_j t_k, c_j > 0, sum c_j = 1) and pairs whose linear parts
cancel are global minima too, at which D > 0 (the loss, 0 there, is their distance in function
space). Euclidean in the parameters (not Sigma's metric).

The functions take plain arrays in the engine layout (a (R, p), Wt (d, R, p)); the registry
entries are in :mod:`shallowflow.dynamics.probes`. The assignment runs on the host
(:func:`shallowflow.analysis.assignment.min_cost`, through a callback at record points only).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from shallowflow.analysis.assignment import min_cost
from shallowflow.model.arccos_kernel import cosines
from shallowflow.model.inputs import PopulationInputs
from shallowflow.model.population import whiten


def _rows(Wt: Array) -> Array:
    """The student's rows (R, p, d) from the engine layout (d, R, p)."""
    return jnp.transpose(Wt, (1, 2, 0))


def overlap(Wt: Array, teacher: PopulationInputs) -> Array:
    """R = W Sigma V^T per run, (R, p, k)."""
    Ws = whiten(_rows(Wt), teacher.chol)
    Vs = whiten(jnp.asarray(teacher.V, Wt.dtype), teacher.chol)
    return jnp.einsum("rjd,kd->rjk", Ws, Vs)


def student_overlap(Wt: Array, teacher: PopulationInputs) -> Array:
    """Q = W Sigma W^T per run, (R, p, p)."""
    Ws = whiten(_rows(Wt), teacher.chol)
    return jnp.einsum("rjd,rid->rji", Ws, Ws)


def overlap_cos(Wt: Array, teacher: PopulationInputs) -> Array:
    """cos_Sigma(w_j, v_k) per run, (R, p, k); 0 where w_j or v_k is 0."""
    Ws = whiten(_rows(Wt), teacher.chol)
    Vs = whiten(jnp.asarray(teacher.V, Wt.dtype), teacher.chol)
    return cosines(Ws, jnp.broadcast_to(Vs, (Ws.shape[0], *Vs.shape)))[2]


def distance_cost(a: Array, W: Array, b: Array, V: Array, kappa: float) -> Array:
    """The (p + k) square cost matrices (..., p + k, p + k) of :func:`teacher_distance` (module
    docstring) for students a (..., p), W (..., p, d) and the teacher b (k,), V (k, d); works on
    numpy and JAX arrays alike."""
    xp = jnp if isinstance(a, jax.Array) or isinstance(W, jax.Array) else np
    z = kappa * xp.abs(a)[..., None] * W  # (..., p, d)
    t = xp.abs(b)[:, None] * V  # (k, d)
    zz, tt = xp.sum(z * z, axis=-1), xp.sum(t * t, axis=-1)
    both = zz[..., :, None] + tt
    same = xp.sign(a)[..., :, None] == xp.sign(b)
    diff = xp.sum((z[..., :, None, :] - t) ** 2, axis=-1)
    matched = xp.where(same, diff, both)  # (..., p, k)
    p, k = matched.shape[-2], matched.shape[-1]
    batch = matched.shape[:-2]
    silent = xp.broadcast_to(zz[..., :, None], (*batch, p, p))
    absent = xp.broadcast_to(tt, (*batch, k, k))  # absent row, teacher column k: |t_k|^2
    top = xp.concatenate([matched, silent], axis=-1)
    bottom = xp.concatenate([absent, xp.zeros((*batch, k, p), matched.dtype)], axis=-1)
    return xp.concatenate([top, bottom], axis=-2)


def teacher_distance_of(a: np.ndarray, W: np.ndarray, b: np.ndarray, V: np.ndarray,
                        kappa: float = 1.0) -> np.ndarray:
    """The distance D (...) of students a (..., p), W (..., p, d) to the embedded teachers
    G_emb (module docstring), on the host."""
    cost = distance_cost(np.asarray(a, np.float64), np.asarray(W, np.float64),
                         np.asarray(b, np.float64), np.asarray(V, np.float64), kappa)
    return np.sqrt(np.maximum(min_cost(cost), 0.0))


def teacher_distance(a: Array, Wt: Array, teacher: PopulationInputs, kappa: float) -> Array:
    """D per run (R,) inside the compiled loop: the cost matrices built there, the assignment
    solved on the host (a callback at each record point)."""
    cost = distance_cost(a, _rows(Wt), jnp.asarray(teacher.b, a.dtype),
                         jnp.asarray(teacher.V, a.dtype), kappa)

    def host(c: np.ndarray) -> np.ndarray:
        return min_cost(np.asarray(c)).astype(c.dtype)

    total = jax.pure_callback(host, jax.ShapeDtypeStruct(cost.shape[:-2], cost.dtype), cost,
                              vmap_method="expand_dims")
    return jnp.sqrt(jnp.maximum(total, 0.0))
