"""Where each safran-minima claim's reference comes from (:class:`~shallowflow.reproductions.claims.
Source`): the papers' words, quoted from their abstracts, and the minimum printed with the code of
Safran, Yehudai and Shamir (COLT 2021). The audit of these claims is docs/claims/safran.md.
"""

from __future__ import annotations

from shallowflow.reproductions.claims import printed

INCREASING = (
    "Safran and Shamir (ICML 2018), abstract: 'we conduct experiments which show that the "
    "probability of hitting such local minima is quite high, and increasing with the network "
    "size'. Their experiments take n = k, Xavier starts and GD at step 5/k.")
LOCAL_MINIMA = (
    "Safran and Shamir (ICML 2018), abstract: 'the problem can still have spurious local minima "
    "once 6 <= k <= 20'; the points GD reaches are verified to be local minima by the positive "
    "definiteness of the Hessian there (their computer-assisted proof). The tolerance on "
    "eig_min is the project's (docs/math.md §9.6).")
EASIER = (
    "Safran, Yehudai and Shamir (COLT 2021), abstract: 'For the non-global minima, we prove that "
    "adding even just a single neuron will turn a non-global minimum into a saddle point ... "
    "These results provide a possible explanation for why recovering a global minimum becomes "
    "significantly easier when we over-parameterize, even if the amount of over-parameterization "
    "is very moderate.'")
CONVEXITY = (
    "Safran, Yehudai and Shamir (COLT 2021), abstract: 'We prove that while the objective is "
    "strongly convex around the global minima when the teacher and student networks possess the "
    "same number of neurons, it is not even locally convex after any amount of "
    "over-parameterization.'")
ORACLE = printed(
    "The k = 7 spurious minimum published with the code of Safran, Yehudai and Shamir (COLT "
    "2021), quoted in docs/math.md §11.7: F = 0.0232027 and smallest Hessian eigenvalue "
    "0.014059 (the point itself is tests/test_population_oracle.py's). Tolerances 5e-7 on F "
    "and 5e-6 on eig_min: the printed digits.")
ORACLE_LOSS = 0.0232027
ORACLE_EIG_MIN = 0.014059

