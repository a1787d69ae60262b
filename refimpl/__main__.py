"""Command line: ``python -m refimpl run ...``, ``methods`` and ``warm``.

Derived in: book/10_running_experiments.md#run-cli
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap

from .exceptions import DataError, DatasetNotFoundError

_EPILOG = textwrap.dedent("""\
    examples:
      python -m refimpl run --dataset MQ2008 --methods all --folds 1-5 --out results/
      python -m refimpl run --dataset MQ2008 --methods fenchelrank,ranksvm \\
          --grid fenchelrank:r=4,8,16 --folds 1 --n-jobs 2 --out results/
      python -m refimpl run --dataset synthetic:200 --methods all --reduced --folds 1
      python -m refimpl run --dataset MQ2008 --methods all --backend dask \\
          --scheduler tcp://10.0.0.1:8786 --out results/
      python -m refimpl run --dataset MSLR-WEB10K --methods ranksvm \\
          --normalize query --folds 1 --out results/

    Each method is cross-validated with the grid and the validation metric of
    its paper (python -m refimpl methods lists them).  Finished fits are cached
    under <out>/<dataset>/cache/ and re-used by a re-run with the same data
    (file contents), fold, method, parameters and refimpl source code; a cache
    entry that does not check out is reported and fitted again.  Grid values
    are checked against each parameter's range before any fit.  Ctrl-C or
    SIGTERM stops the worker processes too; finished fits stay cached.  The
    folders under --out are created and tried before the first fit: an --out
    that cannot hold the results is an error (exit status 2) at once.

    --normalize query rescales each feature to [0, 1] within each query
    (LETOR's QueryLevelNorm: LETOR 4.0's files already are, MSLR's are
    raw); --normalize standard uses the training split's mean and standard
    deviation for all three splits.  A normalised run writes to
    <out>/<dataset>-normalize-<how>/ and has its own cache.
    """)
_NON_FINITE = {"nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity",
               "+infinity", "-infinity"}


def _parse_value(text):
    """A grid value: a JSON number, true/false/null, NaN or infinity, else a string.

    ``nan`` and ``inf`` are read as the floats they spell, so that the range
    check rejects them as non-finite numbers (not as strings).
    """
    if text.lower() in _NON_FINITE:
        return float(text)
    try:
        return json.loads(text)
    except ValueError:
        return text


def _parse_grid(items):
    """``["fenchelrank:r=4,8", ...]`` -> ``{"fenchelrank": {"r": [4, 8]}}``.

    The values are checked against the parameters' ranges later, by
    :func:`refimpl.experiments.config.validate_config`; here an item that
    does not parse, an empty value and a parameter given twice are errors.
    """
    grids = {}
    for item in items or []:
        try:
            head, values = item.split("=", 1)
            method, param = head.split(":", 1)
        except ValueError:
            raise DataError(
                f"--grid takes METHOD:PARAM=V1,V2,...; got {item!r}"
            ) from None
        method, param = method.strip(), param.strip()
        if not method or not param:
            raise DataError(f"--grid takes METHOD:PARAM=V1,V2,...; got {item!r}")
        parsed = []
        for v in values.split(","):
            v = v.strip()
            if not v:
                raise DataError(
                    f"--grid {item!r}: empty value; give V1,V2,... without "
                    "empty entries"
                )
            parsed.append(_parse_value(v))
        if param in grids.get(method, {}):
            raise DataError(
                f"--grid gives {method}:{param} twice; list all its values in "
                "one item"
            )
        grids.setdefault(method, {})[param] = parsed
    return grids


def build_parser():
    """The argument parser of ``python -m refimpl``.

    Derived in: book/10_running_experiments.md#run-cli
    """
    parser = argparse.ArgumentParser(
        prog="python -m refimpl",
        description="Sparse Learning to Rank: reproduce the papers' experiments.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser(
        "run", help="cross-validate methods on a data set and write tidy results",
        description="Cross-validate methods on the folds of a data set: fit every "
                    "grid point on the training split, select by the paper's "
                    "validation metric, report test metrics, sparsity and time.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("--dataset", required=True,
                   help="LETOR data set under the LETOR root (e.g. MQ2008), or "
                        "synthetic[:QUERIES[:SEED]] for the seeded synthetic data")
    r.add_argument("--methods", required=True,
                   help="comma-separated method names, or 'all' "
                        "(see 'python -m refimpl methods')")
    r.add_argument("--folds", default="1-5",
                   help="folds to run: 1-5 (default), 1,3 or 2")
    r.add_argument("--out", default=None,
                   help="results directory; tables go to OUT/<dataset>/ and the "
                        "cache to OUT/<dataset>/cache/ (default: write nothing)")
    r.add_argument("--letor-home", default=None,
                   help="directory holding the LETOR data sets "
                        "(default: the LETOR_HOME environment variable)")
    r.add_argument("--grid", action="append", metavar="METHOD:PARAM=V1,V2",
                   help="replace one parameter's grid (repeatable), e.g. "
                        "fenchelrank:r=4,8,16")
    r.add_argument("--reduced", action="store_true",
                   help="use each method's small smoke-test grid")
    r.add_argument("--select-by", default=None, metavar="METRIC",
                   help="validation metric for every method instead of each "
                        "paper's (NDCG@1..10, P@1..10, MAP, MeanNDCG, "
                        "PairwiseAccuracy)")
    r.add_argument("--n-jobs", type=int, default=1,
                   help="parallel workers; -1 = all cores / all dask workers "
                        "(default 1)")
    r.add_argument("--backend", default="loky",
                   choices=("loky", "threading", "sequential", "dask"),
                   help="joblib back-end (default loky: worker processes); "
                        "dask runs on a dask.distributed cluster")
    r.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="with --backend dask: address of a running scheduler, "
                        "e.g. tcp://10.0.0.1:8786 (default: a LocalCluster "
                        "of N-JOBS single-threaded worker processes)")
    r.add_argument("--normalize", default="none",
                   choices=("none", "query", "standard"),
                   help="feature normalisation of every fold: none (default, "
                        "the features as in the files), query (LETOR's "
                        "QueryLevelNorm: min-max within each query) or "
                        "standard (z-scores with the training split's mean "
                        "and standard deviation)")
    r.add_argument("--refit", action="store_true",
                   help="ignore the cache and fit every task again")
    r.add_argument("--quiet", action="store_true",
                   help="no progress bar and no summary table")
    m = sub.add_parser("methods", help="list the registered methods, their grids "
                                       "and selection metrics")
    m.add_argument("--verbose", action="store_true",
                   help="also print the grids and where they come from")
    wm = sub.add_parser(
        "warm", help="compile the numba kernels into numba's cache now, so "
                     "that the first fit loads them (Binder's postBuild runs it)")
    wm.add_argument("--estimators", default=None,
                    help="comma-separated estimator names (default: all of "
                         "refimpl.warm.WARM_FITS)")
    return parser


def _print_methods(verbose):
    from .experiments import METHODS

    w = max(len(name) for name in METHODS)      # the column fits every name
    for method in METHODS.values():
        kind = "linear" if method.linear else "non-linear"
        print(f"{method.name:{w}s} {kind:10s} select by {method.selection_metric:9s}"
              f" {method.description}")
        if verbose:
            print(f"{'':{w}s} grid: {dict(method.grid)}")
            print(f"{'':{w}s} fixed: {dict(method.fixed)}")
            print(textwrap.fill("parameters: " + ", ".join(method.constraints),
                                initial_indent=" " * (w + 1),
                                subsequent_indent=" " * (w + 13), width=88))
            print(textwrap.fill(method.grid_source, initial_indent=" " * (w + 1),
                                subsequent_indent=" " * (w + 1), width=88))


def _print_summary(result):
    w = max([len("method")] + [len(s["method"]) + 1 for s in result.summary])
    print(f"{'method':{w}s}{'NDCG@1':>8s}{'NDCG@3':>8s}{'NDCG@5':>8s}"
          f"{'NDCG@10':>8s}{'MAP':>8s}{'sparsity':>9s}{'time s':>8s}")
    for s in result.summary:
        print(f"{s['method']:{w}s}" + "".join(
            f"{s[f'test_{m}_mean']:8.4f}" for m in
            ("NDCG@1", "NDCG@3", "NDCG@5", "NDCG@10", "MAP"))
            + f"{s['sparsity_mean']:9.3f}{s['fit_time_mean']:8.2f}")
    print(f"{result.n_fitted} fitted, {result.n_cached} from cache, "
          f"{result.n_failed} failed, {result.wall_time:.1f} s"
          + (f"; tables in {result.out_dir}" if result.out_dir else ""))


def main(argv=None):
    """Entry point; returns the exit status.

    SIGTERM unwinds the command (``SystemExit`` with status 143) instead of
    killing the process outright, so the worker processes end with it;
    Ctrl-C (SIGINT) returns 130 after the workers are stopped.

    Derived in: book/10_running_experiments.md#run-cli
    """
    args = build_parser().parse_args(argv)
    if args.command == "methods":
        _print_methods(args.verbose)
        return 0
    if args.command == "warm":
        return _warm_command(args)
    from .experiments.interrupts import sigterm_unwinds

    with sigterm_unwinds():
        return _run_command(args)


def _warm_command(args):
    from .warm import warm_up

    names = None if args.estimators is None else [
        n.strip() for n in args.estimators.split(",")]
    try:
        seconds = warm_up(names)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"compiled or loaded in {sum(seconds.values()):.1f} s")
    return 0


def _connect(client_class, address):
    """A ``dask.distributed`` client of the scheduler at ``address``.

    An address that does not parse or a scheduler that does not answer
    (within dask's connect timeout, ``distributed.comm.timeouts.connect``)
    is a :class:`DataError` naming the address.
    """
    try:
        return client_class(address)
    # OSError: refused, unreachable, timed out; ValueError: no such scheme
    # or port; TypeError: an address dask cannot read
    except (OSError, ValueError, TypeError) as err:
        raise DataError(
            f"--scheduler {address!r}: cannot connect to a dask scheduler "
            f"there ({type(err).__name__}: {str(err)[:200]}); start one "
            "(dask scheduler) or leave --scheduler out for a local cluster"
        ) from None


def _run_command(args):
    from .experiments import ExperimentConfig, run, validate_config

    try:
        config = ExperimentConfig(
            dataset=args.dataset, methods=args.methods, folds=args.folds,
            out=args.out, letor_home=args.letor_home,
            grids=_parse_grid(args.grid), reduced=args.reduced,
            select_by=args.select_by, n_jobs=args.n_jobs, backend=args.backend,
            cache=not args.refit, progress=not args.quiet,
            normalize=None if args.normalize == "none" else args.normalize)
        validate_config(config)
        if args.backend == "dask":
            from distributed import Client, LocalCluster

            if args.scheduler:
                with _connect(Client, args.scheduler):
                    result = run(config)
            else:
                n = args.n_jobs if args.n_jobs > 0 else None
                with LocalCluster(n_workers=n, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
                        Client(cluster):
                    result = run(config)
        else:
            result = run(config)
        if not args.quiet:
            _print_summary(result)
        for row in result.tasks:
            if row["status"] != "ok":
                print(f"failed: {row['method']} fold {row['fold']} {row['params']}: "
                      f"{row['error']}", file=sys.stderr)
    except (DataError, DatasetNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # run() has stopped the workers; what finished is in the cache
        print("interrupted: worker processes stopped; finished fits are cached "
              "(with --out)", file=sys.stderr)
        return 130
    return 1 if result.n_failed else 0


if __name__ == "__main__":
    sys.exit(main())
