"""Command line: ``python -m paper_figures TARGET [--quick] [--data-dir DIR] [--out DIR]``."""

from __future__ import annotations

import argparse
import ast
import importlib
import os
import sys
import time
from pathlib import Path

from paper_figures import TARGETS
from paper_figures._cache import cached


def _targets_epilog():
    """Each target with the first line of its module's docstring (read, not imported)."""
    here = Path(__file__).resolve().parent
    lines = ["targets ('all' runs them in this order):"]
    for t in TARGETS:
        try:
            doc = ast.get_docstring(ast.parse((here / f"{t}.py").read_text())) or ""
        except (OSError, SyntaxError):
            doc = ""
        lines.append(f"  {t:16s} {doc.splitlines()[0] if doc else ''}"[:120])
    lines += ["", "outputs in --out: <target>.md tables, <target>.png figures, _cache/ (reused "
              "by the next run)", "", "examples:",
              "  RANDFEAT_DATA=../shared/data python -m paper_figures all --quick",
              "  python -m paper_figures rr07_table1 --datasets cpu_act --data-dir ../shared/data"]
    return "\n".join(lines)


def build_parser():
    ap = argparse.ArgumentParser(
        prog="python -m paper_figures",
        description="Regenerate RR07 / FF13 / Yu et al. tables and figures (computation cached, "
                    "then rendered to markdown / PNG).  A progress bar per target, with the time "
                    "left, on a terminal.",
        epilog=_targets_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", choices=[*TARGETS, "all"], metavar="TARGET",
                    help="a target below, or 'all'")
    ap.add_argument("--quick", action="store_true",
                    help="subsampled smoke run of a few minutes (stated in every output)")
    ap.add_argument("--data-dir", default=None,
                    help="dataset folder (default: $RANDFEAT_DATA, else ~/randfeat_data)")
    ap.add_argument("--out", default="results/paper_figures",
                    help="output folder (default results/paper_figures)")
    ap.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    ap.add_argument("--reps", type=int, default=None,
                    help="repetitions per row for the noise estimate (default 3, quick 1)")
    ap.add_argument("--datasets", default=None,
                    help="comma-separated subset of dataset names (default: all at hand)")
    ap.add_argument("--refresh", action="store_true", help="ignore the cache and recompute")
    ap.add_argument("--render-only", action="store_true",
                    help="render from the per-row caches only; rows not computed yet are marked")
    ap.add_argument("--blas-threads", type=int, default=1,
                    help="BLAS/LAPACK threads (default 1: on a shared machine multi-threaded "
                         "LAPACK factorisations thrash; randfeat's own kernels use OpenMP)")
    return ap


def main(argv=None):
    args = build_parser().parse_args(argv)
    from randfeat.datasets import get_data_home
    args.data_dir = get_data_home(args.data_dir)
    from paper_figures import _cache
    _cache.ONLY_CACHED = bool(args.render_only)
    _cache.REFRESH = bool(args.refresh)
    args.datasets = [s.strip() for s in args.datasets.split(",")] if args.datasets else None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    targets = TARGETS if args.target == "all" else (args.target,)
    t_all = time.perf_counter()
    written = []
    from threadpoolctl import threadpool_limits
    limiter = threadpool_limits(limits=args.blas_threads, user_api="blas")
    from analysis.repro import progress
    for target in (progress(targets, desc="targets") if len(targets) > 1 else targets):
        mod = importlib.import_module(f"paper_figures.{target}")
        p = mod.params(args)
        t0 = time.perf_counter()
        compute = mod.compute
        if args.render_only and not getattr(mod, "NESTED_CACHE", False):
            compute = lambda _p: {"not_cached": True}  # noqa: E731 - nothing cached to assemble
        result = cached(out, target + ("_quick" if args.quick else ""), p, compute,
                        code_version=mod.CODE_VERSION, refresh=args.refresh,
                        log=lambda m: print(m, file=sys.stderr))
        if result.get("not_cached"):
            print(f"[{target}] not cached yet; nothing rendered (--render-only)", file=sys.stderr)
            continue
        paths = mod.render(result, p, out)
        written += paths
        print(f"[{target}] {time.perf_counter() - t0:.1f} s -> "
              + ", ".join(str(x) for x in paths), file=sys.stderr)
    limiter.restore_original_limits()
    print(f"done in {time.perf_counter() - t_all:.1f} s; outputs in {out}", file=sys.stderr)
    for pth in written:
        print(pth)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("MPLBACKEND", "Agg")
    sys.exit(main())
