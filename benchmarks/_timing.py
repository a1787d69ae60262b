"""Side-by-side timing helpers: ratios measured in one run, never absolute targets."""

import time

import numpy as np


def best_time(fn, repeat=7, number=None, min_time=0.05):
    """Best-of-`repeat` seconds per call, calibrating `number` so a run lasts >= min_time."""
    fn()  # warm-up (JIT compile, caches)
    if number is None:
        number = 1
        while True:
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            if time.perf_counter() - t0 >= min_time:
                break
            number *= 2
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return float(np.min(times))


def interleaved(fns, rounds=5, **kw):
    """Time several callables in alternation so machine noise hits them alike."""
    best = {name: np.inf for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            best[name] = min(best[name], best_time(fn, repeat=3, **kw))
    return best
