"""Exercise checkers of Chapter 6 (LifeRank, BDMM).

* :func:`check_orthonormality_residual` -- ``||T^T T - I||_F``, against
  :func:`refimpl.solvers.orthonormality_error`;
* :func:`check_liferank_gradient` -- the gradients of LifeRank's objective
  in ``T`` and ``w``, against :class:`refimpl.losses.LifeRankObjective`;
* :func:`check_bdmm_step` -- one iteration of the damped multiplier method
  (MDMM) on LifeRank, against :func:`refimpl.solvers.bdmm`.

Derived in: book/06_liferank_bdmm.md#liferank
"""

from __future__ import annotations

import numpy as np

from ..losses import LifeRankObjective, PairwiseLogistic
from ..pairs import pair_difference_matrix
from ..solvers import bdmm, orthonormality_error
from ._harness import CheckResult, only_match, record, run_checker

__all__ = ["check_bdmm_step", "check_liferank_gradient",
           "check_orthonormality_residual"]

_RTOL, _ATOL = 1e-8, 1e-11


def _close(a, b, rtol=_RTOL, atol=_ATOL):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol,
                                                   atol=atol))


def _random_T(rng, n, k, kind):
    if kind == "orthonormal":
        return np.linalg.qr(rng.normal(size=(n, k)))[0]
    if kind == "near":
        Q = np.linalg.qr(rng.normal(size=(n, k)))[0]
        return Q + 0.1 * rng.normal(size=(n, k))
    return rng.normal(size=(n, k)) / np.sqrt(n)


# -- ||T^T T - I||_F ----------------------------------------------------------

def _residual_diagnose(fn):
    def diagnose(T):
        ref = orthonormality_error(T)
        record(T=T.copy(), expected=ref)
        got = fn(T.copy())
        record(got=got)
        if np.ndim(got) != 0:
            return (f"return one number, the Frobenius norm of T^T T - I, "
                    f"not an array of shape {np.shape(got)}")
        got = float(got)
        if np.isclose(got, ref, rtol=1e-10, atol=1e-12):
            return None
        n, k = T.shape
        G = T.T @ T
        R = G - np.eye(k)
        off = R - np.diag(np.diag(R))
        wrong = [
            ("you formed T T^T (d x d); the constraint is on the d~ x d~ "
             "Gram matrix T^T T of the columns",
             np.linalg.norm(T @ T.T - np.eye(n))),
            ("the identity is missing: that is ||T^T T||_F, not "
             "||T^T T - I||_F", np.linalg.norm(G)),
            ("wrong norm: you return the spectral norm (largest singular "
             "value); the book uses the Frobenius norm", np.linalg.norm(R, 2)),
            ("you return the squared Frobenius norm; take the square root",
             np.linalg.norm(R) ** 2),
            ("wrong norm: you return the largest entry of |T^T T - I|; the "
             "book uses the Frobenius norm", np.abs(R).max()),
            ("only the off-diagonal entries (the angles) are counted; the "
             "diagonal (the column norms) belongs to the residual too",
             np.linalg.norm(off)),
            ("only the diagonal (the column norms) is counted; the "
             "off-diagonal entries (the angles) belong to the residual too",
             np.linalg.norm(np.diag(R))),
            ("wrong norm: you return the nuclear norm (sum of singular "
             "values); the book uses the Frobenius norm, "
             "sqrt(sum of squared entries)", np.linalg.norm(R, "nuc")),
            ("wrong norm: you return the sum of |entries| of T^T T - I; the "
             "book uses the Frobenius norm, sqrt(sum of squared entries)",
             np.abs(R).sum()),
            ("you subtract norms: ||T^T T||_F - ||I||_F is not the norm of "
             "the difference T^T T - I", np.linalg.norm(G) - np.sqrt(k)),
        ]
        named = only_match(wrong, lambda value: np.isclose(
            got, value, rtol=1e-10, atol=1e-12))
        if named:
            return named
        return "your residual is not ||T^T T - I||_F"
    return diagnose


def check_orthonormality_residual(fn, *, max_examples=60) -> CheckResult:
    """Check ``fn(T)``, the violation ``||T^T T - I||_F`` of ``T^T T = I``.

    ``T`` is ``n x k`` with ``n >= k``.  Recognised mistakes: ``T T^T``
    instead of ``T^T T``, a missing identity, the spectral, nuclear,
    max-entry, sum-of-entries or squared norm instead of the Frobenius
    norm, a difference of norms, only the diagonal or only the
    off-diagonal part.

    Derived in: book/06_liferank_bdmm.md#liferank
    """
    from hypothesis import strategies as st

    rng = np.random.default_rng(6)
    adversarial = [_random_T(rng, 5, 3, "random"),
                   _random_T(rng, 6, 2, "orthonormal"),
                   _random_T(rng, 7, 3, "near")]
    strategy = st.tuples(st.integers(0, 2**32 - 1), st.integers(1, 4),
                         st.integers(0, 3),
                         st.sampled_from(["random", "near", "orthonormal"])
                         ).map(lambda c: _random_T(np.random.default_rng(
                             c[0]), c[1] + c[2], c[1], c[3]))
    return run_checker(_residual_diagnose(fn), adversarial=adversarial,
                       strategy=strategy, max_examples=max_examples,
                       what="your orthonormality residual", names=("T",))


# -- the gradient of F(T, w) -------------------------------------------------

def _instance(seed, n_features=4, k=2):
    """A small ranking problem: (X, y, qid), K, T, w, lam."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 7, size=3)
    qid = np.repeat(np.arange(3), sizes)
    y = np.concatenate([rng.permutation(np.arange(s) % 3) for s in sizes])
    X = rng.normal(size=(qid.size, n_features))
    K = pair_difference_matrix(X, y, qid)
    T = rng.normal(size=(n_features, k)) / np.sqrt(n_features)
    w = rng.normal(size=k)
    lam = float(rng.choice([0.05, 0.3, 1.0]))
    return X, y.astype(float), qid, K, T, w, lam


def _loss_grad_naive(K, v):
    return K.T @ (-1.0 / (1.0 + np.exp(K @ v))) / K.shape[0]


def _gradient_diagnose(fn):
    def diagnose(case):
        X, y, qid, K, T, w, lam = case
        obj = LifeRankObjective(PairwiseLogistic(X, y, qid), T.shape[1], lam)
        _, gT_ref, gw_ref = obj.value_and_grads(T, w)
        record(T=T.copy(), w=w.copy(), K=K.copy(), lam=lam,
               expected=(gT_ref, gw_ref))
        out = fn(T.copy(), w.copy(), K.copy(), lam)
        record(got=out)
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            return "return a pair (gradient in T, gradient in w)"
        gT, gw = (np.asarray(a, dtype=float) for a in out)
        if gT.shape == gw_ref.shape and gw.shape == gT_ref.shape:
            return ("you return (gradient in w, gradient in T); the order "
                    "is (gradient in T, gradient in w)")
        if gT.shape == gT_ref.T.shape and gT.shape != gT_ref.shape:
            return (f"your gradient in T has shape {gT.shape}, the "
                    f"transpose of T's {T.shape}: it is grad_l w^T, not "
                    "w grad_l^T")
        if gT.shape != gT_ref.shape or gw.shape != gw_ref.shape:
            return (f"shapes: gradient in T {gT.shape} (expected "
                    f"{T.shape}), in w {gw.shape} (expected {w.shape})")
        ok_T, ok_w = _close(gT, gT_ref), _close(gw, gw_ref)
        if ok_T and ok_w:
            return None
        p = K.shape[0]
        G = _loss_grad_naive(K, T @ w)
        Gs = K.T @ (-1.0 / (1.0 + np.exp(-(K @ (T @ w))))) / p
        cands = [
            ("missing factor 1/p: the loss is the mean over the p pairs, "
             "not the sum", p * np.outer(G, w), p * (T.T @ G) + lam * w),
            ("wrong sign: your loss gradient is the negative of the "
             "correct one", -np.outer(G, w), -(T.T @ G) + lam * w),
            ("the l2 term lam w is missing from the gradient in w",
             np.outer(G, w), T.T @ G),
            ("the l2 term's gradient is lam w, not lam w / 2 or 2 lam w",
             np.outer(G, w), T.T @ G + lam * w / 2),
            ("the l2 term's gradient is lam w, not lam w / 2 or 2 lam w",
             np.outer(G, w), T.T @ G + 2 * lam * w),
            ("the l2 term lam w belongs to the gradient in w only (F "
             "penalises w, not T)", np.outer(G, w) + lam * T,
             T.T @ G + lam * w),
            ("wrong logistic derivative: d/dx log(1 + e^(-x)) = -1/(1 + "
             "e^x), you used -1/(1 + e^(-x))", np.outer(Gs, w),
             T.T @ Gs + lam * w),
            ("the gradient in T is grad_l w^T: the factor w is missing",
             np.outer(G, np.ones_like(w)), T.T @ G + lam * w),
        ]
        named = only_match(((m, (cT, cw)) for m, cT, cw in cands),
                           lambda c: _close(gT, c[0]) and _close(gw, c[1]))
        if named:
            return named
        if ok_w:
            i, j = np.unravel_index(np.argmax(np.abs(gT - gT_ref)), T.shape)
            return ("the gradient in w is right; the gradient in T differs "
                    f"(first at [{i}, {j}])")
        if ok_T:
            return "the gradient in T is right; the gradient in w differs"
        return "both gradients differ from refimpl's LifeRankObjective"
    return diagnose


def check_liferank_gradient(fn, *, max_examples=40) -> CheckResult:
    """Check ``fn(T, w, K, lam) -> (grad_T, grad_w)`` of LifeRank's ``F``.

    ``F(T, w) = (1/p) sum_r log(1 + exp(-(K T w)_r)) + (lam/2) ||w||^2``,
    ``K`` the ``p x n`` matrix of pair differences ``x_i - x_j`` (``y_i >
    y_j``).  Reference:
    :meth:`refimpl.losses.LifeRankObjective.value_and_grads`.  Recognised
    mistakes: a missing ``1/p``, the sign, the ``lam w`` term missing or
    misplaced or mis-scaled, the logistic derivative, a transposed or
    ``w``-less gradient in ``T``.

    Derived in: book/06_liferank_bdmm.md#liferank
    """
    from hypothesis import strategies as st

    adversarial = [_instance(0), _instance(1, n_features=5, k=3),
                   _instance(2, n_features=3, k=1)]
    strategy = st.tuples(st.integers(0, 10**6), st.integers(2, 6),
                         st.integers(1, 3)).map(
        lambda c: _instance(c[0], n_features=c[1], k=min(c[2], c[1])))
    return run_checker(_gradient_diagnose(fn), adversarial=adversarial,
                       strategy=strategy, max_examples=max_examples,
                       what="your LifeRank gradient")


# -- one damped multiplier step -----------------------------------------------

def _constraint(T):
    """h(T) in the paper's signs: t_i^T t_j off the diagonal, 1 - t_i^T t_i."""
    C = T.T @ T
    np.fill_diagonal(C, 1.0 - np.diag(C))
    return C


def _M(U):
    M = U + U.T
    np.fill_diagonal(M, -2.0 * np.diag(U))
    return M


def _step(T, w, A, grad_loss, lam, lr, mu, *, ascent=True, new_c=True,
          damp=1.0, sequential=False, flipped=False, gram=False,
          sym_M=False, l2=1.0, gram_A=False):
    """One (possibly wrong) MDMM step; the keyword arguments plant mistakes."""
    def c_of(T_):
        if gram:              # T^T T - I: the diagonal in the other sign
            return T_.T @ T_ - np.eye(T_.shape[1])
        return -_constraint(T_) if flipped else _constraint(T_)

    def M_of(U):
        return U + U.T if sym_M else _M(U)
    G = grad_loss(T @ w)
    gw = T.T @ G + l2 * lam * w
    w_new = w - lr * gw
    if sequential:            # the paper's listing read as Gauss-Seidel
        G = grad_loss(T @ w_new)
        gT = np.outer(G, w_new) + T @ M_of(A + damp * mu * c_of(T))
    else:
        gT = np.outer(G, w) + T @ M_of(A + damp * mu * c_of(T))
    T_new = T - lr * gT
    c = c_of(T_new) if new_c else c_of(T)
    if gram_A:                # T^T T - I in the multiplier step only
        c = T_new.T @ T_new - np.eye(T_new.shape[1])
    A_new = A + lr * c if ascent else A - lr * c
    return T_new, w_new, A_new


def _step_case(seed, n_features=4, k=2):
    X, y, qid, K, T, w, lam = _instance(seed, n_features, k)
    rng = np.random.default_rng(seed + 1)
    A = rng.normal(size=(k, k))
    lr = float(rng.choice([0.05, 0.1, 0.3]))
    mu = float(rng.choice([0.5, 1.0, 2.0]))
    return X, y, qid, K, T, w, A, lam, lr, mu


def _bdmm_diagnose(fn):
    def diagnose(case):
        X, y, qid, K, T, w, A, lam, lr, mu = case
        k = T.shape[1]
        obj = LifeRankObjective(PairwiseLogistic(X, y, qid), k, lam)
        res = bdmm(obj, obj.pack(T, w), A.ravel(), lr=lr, damping=mu,
                   max_iter=1, tol=0.0, constraint_tol=0.0, warn=False)
        T_ref, w_ref = (a.copy() for a in obj.unpack(res.w))
        A_ref = res.multipliers.reshape(k, k)

        def grad_loss(v):
            return _loss_grad_naive(K, np.asarray(v, dtype=float))

        record(T=T.copy(), w=w.copy(), alpha=A.copy(),
               grad_loss="v -> K^T (-1/(1 + exp(K v))) / p", K=K.copy(),
               lam=lam, lr=lr, c=mu, expected=(T_ref, w_ref, A_ref))
        out = fn(T.copy(), w.copy(), A.copy(), grad_loss, lam, lr, mu)
        record(got=out)
        if not (isinstance(out, (tuple, list)) and len(out) == 3):
            return "return a triple (T_new, w_new, alpha_new)"
        got = [np.asarray(a, dtype=float) for a in out]
        if [g.shape for g in got] != [T.shape, w.shape, A.shape]:
            return (f"shapes {[g.shape for g in got]}; expected T "
                    f"{T.shape}, w {w.shape}, alpha {A.shape}")
        if all(_close(g, r) for g, r in zip(got, (T_ref, w_ref, A_ref))):
            return None
        wrong = [
            ("wrong sign of the multiplier update: BDMM ascends in the "
             "multipliers, alpha <- alpha + lr h(T), it does not descend",
             dict(ascent=False)),
            ("the multiplier step uses the constraint at the old T; the "
             "book's (alternating) order evaluates h at the new T",
             dict(new_c=False)),
            ("the damping term is missing: the T-step's multipliers are "
             "alpha + c h(T), not alpha alone", dict(damp=0.0)),
            ("the damping term has the wrong factor: the gradient of "
             "(c/2)||h||^2 adds c h (not c h / 2 or 2 c h) to the "
             "multipliers", dict(damp=0.5)),
            ("the damping term has the wrong factor: the gradient of "
             "(c/2)||h||^2 adds c h (not c h / 2 or 2 c h) to the "
             "multipliers", dict(damp=2.0)),
            ("you updated w first and used the new w in the T-step (the "
             "paper's listing read in sequence); the book's step takes T "
             "and w jointly from the same point", dict(sequential=True)),
            ("the diagonal constraints have the wrong sign: in the paper's "
             "signs h_ii = 1 - t_i^T t_i (and h_ij = t_i^T t_j off it)",
             dict(flipped=True)),
            ("you use h = T^T T - I: in the paper's signs the diagonal "
             "entries are h_ii = 1 - t_i^T t_i (the off-diagonal t_i^T t_j "
             "agree)", dict(gram=True)),
            ("the multiplier step uses T^T T - I: in the paper's signs "
             "the diagonal entries are h_ii = 1 - t_i^T t_i, as in the "
             "T-step", dict(gram_A=True)),
            ("the constraint part of the T-gradient is T Lam(U) with Lam(U) = "
             "U + U^T off the diagonal but Lam_ll = -2 U_ll on it (the paper's sign "
             "of the diagonal constraints); you used U + U^T everywhere",
             dict(sym_M=True)),
            ("the w-step misses the l2 term: the gradient in w is "
             "T^T grad_loss + lam w", dict(l2=0.0)),
        ]
        named = only_match(
            ((m, _step(T, w, A, grad_loss, lam, lr, mu, **kw))
             for m, kw in wrong),
            lambda cand: all(_close(g, c) for g, c in zip(got, cand)))
        if named:
            return named
        names = ("T_new", "w_new", "alpha_new")
        bad = [nm for nm, g, r in zip(names, got, (T_ref, w_ref, A_ref))
               if not _close(g, r)]
        return (f"{', '.join(bad)} differ{'s' if len(bad) == 1 else ''} "
                "from refimpl.solvers.bdmm's step")
    return diagnose


def check_bdmm_step(fn, *, max_examples=40) -> CheckResult:
    """Check one damped multiplier (MDMM) step on LifeRank.

    ``fn(T, w, alpha, grad_loss, lam, lr, c) -> (T_new, w_new, alpha_new)``
    where ``grad_loss(v)`` is the gradient of the mean pairwise logistic
    loss at ``v = T w`` and ``alpha`` holds the multipliers in the paper's
    signs (``h_ij = t_i^T t_j`` off the diagonal, ``h_ii = 1 - t_i^T t_i``)
    and ``c`` is the penalty weight.  The step is the book's: ``(T, w)``
    jointly down the gradient of ``L + (c/2)||h||^2``, then ``alpha <-
    alpha + lr h(T_new)``.  Reference:
    :func:`refimpl.solvers.bdmm` with ``max_iter=1``.  Recognised mistakes:
    the sign of the multiplier step, ``h`` at the old ``T``, a missing or
    mis-scaled damping term, ``w`` updated first (the sequential order),
    the sign convention of the diagonal constraints (also ``h = T^T T -
    I`` and ``Lam = U + U^T`` on the diagonal), a missing ``lam w``.

    Derived in: book/06_liferank_bdmm.md#liferank
    """
    from hypothesis import strategies as st

    adversarial = [_step_case(0), _step_case(3, n_features=5, k=3)]
    strategy = st.tuples(st.integers(0, 10**6), st.integers(2, 6),
                         st.integers(1, 3)).map(
        lambda c: _step_case(c[0], n_features=c[1], k=min(c[2], c[1])))
    return run_checker(_bdmm_diagnose(fn), adversarial=adversarial,
                       strategy=strategy, max_examples=max_examples,
                       what="your BDMM step")
