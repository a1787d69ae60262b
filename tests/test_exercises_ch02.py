"""Chapter 2's exercise checkers: accept a right answer, name planted bugs."""

import numpy as np
import pytest

from refimpl.exercises import (check_conjugate_squared_hinge,
                               check_project_l1_ball, check_soft_threshold,
                               squared_hinge_conjugate)
from refimpl.penalties import L1
from refimpl.solvers.subgradient import project_l1_ball
from test_exercises_ch01 import assert_diagnosed

# -- soft-thresholding -------------------------------------------------------


def soft_ok(v, t):
    return np.sign(v) * np.maximum(np.abs(v) - t, 0)


def soft_loop(v, t):
    out = np.zeros_like(v)
    for j, x in enumerate(v):
        if x > t:
            out[j] = x - t
        elif x < -t:
            out[j] = x + t
    return out


@pytest.mark.parametrize("fn", [soft_ok, lambda v, t: L1(1.0).prox(v, t),
                                lambda v, t: v - np.clip(v, -t, t),
                                soft_loop],
                         ids=["naive", "refimpl", "moreau", "loop"])
def test_soft_threshold_accepts_reference(fn):
    res = check_soft_threshold(fn)
    assert res.passed, res.message
    assert "agrees" in res.message


SOFT_BUGS = {
    "half": (lambda v, t: soft_ok(v, t / 2), "t/2"),
    "double": (lambda v, t: soft_ok(v, 2 * t), "2t"),
    "no_sign": (lambda v, t: np.maximum(np.abs(v) - t, 0), "sign lost"),
    "no_clip": (lambda v, t: np.sign(v) * (np.abs(v) - t), "no clipping"),
    "hard": (lambda v, t: np.where(np.abs(v) > t, v, 0.0), "hard thresh"),
    "shift": (lambda v, t: v - t, "subtract t from every entry"),
    "ignore_t": (lambda v, t: soft_ok(v, 1.0), "ignore t"),
    "box": (lambda v, t: np.clip(v, -t, t), "projection clip(v, -t, t)"),
}


@pytest.mark.parametrize("name", sorted(SOFT_BUGS))
def test_soft_threshold_names_the_bug(name):
    fn, words = SOFT_BUGS[name]
    assert_diagnosed(check_soft_threshold(fn), words)


def test_soft_threshold_in_place_and_exceptions():
    def in_place(v, t):
        v -= np.clip(v, -t, t)
        return v

    res = check_soft_threshold(in_place)
    assert not res.passed and "in place" in res.message

    def raises(v, t):
        raise ValueError("boom")

    res = check_soft_threshold(raises)
    assert not res.passed and "ValueError" in res.message


# -- projection onto the l1 ball ---------------------------------------------


def project_ok(v, r):
    """Bisection on the threshold: independent of the sort-based rule."""
    if np.abs(v).sum() <= r:
        return v.copy()
    lo, hi = 0.0, np.abs(v).max()
    for _ in range(200):
        mid = (lo + hi) / 2
        if np.maximum(np.abs(v) - mid, 0).sum() > r:
            lo = mid
        else:
            hi = mid
    return np.sign(v) * np.maximum(np.abs(v) - hi, 0)


def project_michelot(v, r):
    """Michelot's active-set iteration: drop the entries below the mean
    excess until none is left; no sort."""
    if np.abs(v).sum() <= r:
        return v.copy()
    a = np.abs(v)
    active = np.ones(len(v), bool)
    while True:
        theta = (a[active].sum() - r) / active.sum()
        keep = active & (a > theta)
        if keep.sum() == active.sum():
            return np.sign(v) * np.maximum(a - theta, 0)
        active = keep


@pytest.mark.parametrize("fn", [project_ok, project_l1_ball,
                                project_michelot],
                         ids=["bisection", "refimpl", "michelot"])
def test_project_l1_ball_accepts_reference(fn):
    res = check_project_l1_ball(fn)
    assert res.passed, res.message


def _off_by_one(delta, first=False, ascending=False):
    def proj(v, r):
        if np.abs(v).sum() <= r:
            return v.copy()
        u = np.sort(np.abs(v)) if ascending else np.sort(np.abs(v))[::-1]
        k = np.arange(1, len(u) + 1)
        theta = (np.cumsum(u) - r) / k
        rho = int(np.flatnonzero(u - theta > 0)[0 if first else -1]) + 1
        rho = min(max(rho + delta, 1), len(u))
        return np.sign(v) * np.maximum(np.abs(v) - theta[rho - 1], 0)
    return proj


L1_BUGS = {
    "scale": (lambda v, r: v * r / max(np.abs(v).sum(), r),
              "scaling instead of projecting"),
    "always_scale": (lambda v, r: v * r / np.abs(v).sum(), "unchanged"),
    "no_sign": (lambda v, r: np.abs(project_l1_ball(v, r)), "sign lost"),
    "neg": (lambda v, r: -project_l1_ball(v, r), "wrong sign"),
    "rho_minus": (_off_by_one(-1), "off by one"),
    "rho_plus": (_off_by_one(+1), "off by one"),
    "clip": (lambda v, r: np.clip(v, -r / len(v), r / len(v)),
             "inside the ball"),
    "first": (_off_by_one(0, first=True), "the first k"),
    "ascending": (_off_by_one(0, ascending=True), "sorted increasingly"),
}


@pytest.mark.parametrize("name", sorted(L1_BUGS))
def test_project_l1_ball_names_the_bug(name):
    fn, words = L1_BUGS[name]
    assert_diagnosed(check_project_l1_ball(fn), words)


def test_project_l1_ball_outside():
    res = check_project_l1_ball(
        lambda v, r: v if np.abs(v).sum() <= 2 * r else project_l1_ball(v, r))
    assert not res.passed and "outside the ball" in res.message


# -- conjugate of the squared hinge ------------------------------------------


def test_squared_hinge_conjugate_is_the_supremum():
    z = np.linspace(-30, 30, 600_001)
    h = np.maximum(0, 1 - z) ** 2
    s = np.linspace(-6, 0, 25)
    grid = np.array([np.max(si * z - h) for si in s])
    assert np.allclose(grid, squared_hinge_conjugate(s), atol=1e-8)
    assert np.all(np.isinf(squared_hinge_conjugate([1e-3, 0.5, 4.0])))


def conj_ok(s):
    return s + s * s / 4 if s <= 0 else np.inf


def conj_from_maximiser(s):
    """Evaluate s z - h(z) at the maximiser z = 1 + s/2."""
    if s > 0:
        return float("inf")
    z = 1 + s / 2
    return s * z - max(0.0, 1 - z) ** 2


def test_conjugate_accepts_reference():
    for fn in (conj_ok, squared_hinge_conjugate, conj_from_maximiser):
        res = check_conjugate_squared_hinge(fn)
        assert res.passed, res.message


CONJ_BUGS = {
    "no_domain": (lambda s: s + s * s / 4, "domain missing"),
    "flipped": (lambda s: s + s * s / 4 if s >= 0 else np.inf, "wrong side"),
    "half": (lambda s: s + s * s / 2 if s <= 0 else np.inf, "factor"),
    "quad_sign": (lambda s: s - s * s / 4 if s <= 0 else np.inf,
                  "sign of the quadratic"),
    "lin_sign": (lambda s: -s + s * s / 4 if s <= 0 else np.inf,
                 "sign of the linear"),
    "no_linear": (lambda s: s * s / 4 if s <= 0 else np.inf,
                  "missing the linear term"),
    "boundary": (lambda s: s + s * s / 4 if s < 0 else np.inf,
                 "domain boundary"),
    "argmax": (lambda s: 1 + s / 2 if s <= 0 else np.inf, "maximiser"),
}


@pytest.mark.parametrize("name", sorted(CONJ_BUGS))
def test_conjugate_names_the_bug(name):
    fn, words = CONJ_BUGS[name]
    assert_diagnosed(check_conjugate_squared_hinge(fn), words)
