"""randfeat's scikit-learn-compatible maps against scikit-learn's, side by side: Nystroem,
AdditiveChi2Sampler, SkewedChi2Sampler and RandomFourierFeatures / RBFSampler.

For each pair the first row is the **default call** of both estimators (``Nystroem()``,
``RBFSampler()``, ...: each library's own defaults, which may differ -- randfeat's Gaussian has
``sigma=1``, scikit-learn's ``gamma=1/d`` for Nystroem and ``gamma=1`` for RBFSampler), then
matched rows at the target size (n = 20,000 rows, d = 16 and 64, n_components = 1000) with
the same kernel.  ``fit`` and ``transform`` are timed separately; randfeat with its default
``n_threads`` (all CPUs) and with ``n_threads=1``; scikit-learn has no thread parameter in these
estimators (its BLAS keeps its own threads, as randfeat's does; both are printed).

Timings (``_timing.py``): each callable timed in its own block of ``repeat`` calls after one
warm-up call, in two passes of opposite order (a drift of the machine's load hits both ends
alike), in one process; minimum and median per callable, ratios ``scikit-learn / randfeat``
(> 1: randfeat faster).  The machine may be shared: the load average is printed before and
after.

The last column checks that both compute the same map: with randfeat's random draws copied
into scikit-learn's estimator (RBFSampler, SkewedChi2Sampler: the frequencies and phases;
Nystroem: scikit-learn fitted on randfeat's landmarks, compared through Z Z^T on 200 rows,
which does not depend on the basis of the features), the maximum absolute difference of the
outputs; AdditiveChi2Sampler is deterministic and compared directly.  "--" where the two maps
differ by design (the default calls; randfeat's default paired cos/sin features).

Usage::

    python benchmarks/bench_sklearn_maps.py            # n = 20,000; a few minutes
    python benchmarks/bench_sklearn_maps.py --quick    # small sizes, < 30 s
    python benchmarks/bench_sklearn_maps.py --only nystroem rff --repeat 5
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

# run from a source checkout without installing: use the in-place build of this tree
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import blocked_times, load_average  # noqa: E402 - benchmarks/_timing.py

SECTIONS = ("nystroem", "additive_chi2", "skewed_chi2", "rff")

# (label, n, d, n_components or None for the defaults, variant)
FULL = {
    "nystroem": [("default call", 20_000, 32, None, None),
                 ("rbf, gamma 1/d", 20_000, 16, 1000, None),
                 ("rbf, gamma 1/d", 20_000, 64, 1000, None),
                 ("rbf, gamma 1/d, float32", 20_000, 64, 1000, "float32")],
    "additive_chi2": [("default call", 20_000, 64, None, None),
                      ("sample_steps 3", 20_000, 64, None, "steps3"),
                      ("CSR 10 %", 20_000, 64, None, "sparse")],
    "skewed_chi2": [("default call", 20_000, 32, None, None),
                    ("skewedness 1", 20_000, 16, 1000, None),
                    ("skewedness 1", 20_000, 64, 1000, None)],
    "rff": [("default call", 20_000, 32, None, None),
            ("phase features", 20_000, 16, 1000, "phase"),
            ("phase features", 20_000, 64, 1000, "phase"),
            ("phase, float32", 20_000, 64, 1000, "phase32"),
            ("randfeat paired (default features)", 20_000, 64, 1000, "paired")],
}
QUICK = {
    "nystroem": [("default call", 2_000, 32, None, None),
                 ("rbf, gamma 1/d", 2_000, 64, 200, None)],
    "additive_chi2": [("default call", 2_000, 64, None, None),
                      ("CSR 10 %", 2_000, 64, None, "sparse")],
    "skewed_chi2": [("default call", 2_000, 32, None, None),
                    ("skewedness 1", 2_000, 64, 200, None)],
    "rff": [("default call", 2_000, 32, None, None),
            ("phase features", 2_000, 64, 200, "phase"),
            ("randfeat paired (default features)", 2_000, 64, 200, "paired")],
}


def _data(n, d, variant, rng):
    """Histogram-like rows (uniform on [0, 1), nonnegative: valid for every map)."""
    X = rng.random((n, d))
    if variant == "sparse":
        X[rng.random((n, d)) > 0.10] = 0.0
        return sp.csr_matrix(X)
    if variant in ("float32", "phase32"):
        return X.astype(np.float32)
    return X


def _dense(A):
    return np.asarray(A.toarray() if sp.issparse(A) else A, dtype=np.float64)


def _pair(section, n, d, D, variant, X):
    """(randfeat factory(**kw), scikit-learn estimator, check(rf, sk) -> str)."""
    from sklearn import kernel_approximation as ska

    import randfeat

    def nodiff(rf, sk):
        return "--"
    if section == "nystroem":
        if D is None:
            return (lambda **kw: randfeat.Nystroem(**kw)), ska.Nystroem(), nodiff
        g = 1.0 / d

        def check(rf, sk):
            idx = rf.component_indices_
            ref = ska.Nystroem(gamma=g, n_components=len(idx), random_state=0).fit(X[idx])
            rows = X[:200]
            a, b = _dense(rf.transform(rows)), _dense(ref.transform(rows))
            return f"{np.max(np.abs(a @ a.T - b @ b.T)):.1e} (ZZ')"
        return ((lambda **kw: randfeat.Nystroem(D, gamma=g, random_state=0, **kw)),
                ska.Nystroem(gamma=g, n_components=D, random_state=0), check)
    if section == "additive_chi2":
        kw = {"sample_steps": 3} if variant == "steps3" else {}

        def check(rf, sk):
            return f"{np.max(np.abs(_dense(rf.transform(X)) - _dense(sk.transform(X)))):.1e}"
        return ((lambda **k: randfeat.AdditiveChi2Sampler(**kw, **k)),
                ska.AdditiveChi2Sampler(**kw), check)
    if section == "skewed_chi2":
        if D is None:
            return (lambda **kw: randfeat.SkewedChi2Sampler(**kw)), ska.SkewedChi2Sampler(), \
                nodiff

        def check(rf, sk):
            ref = ska.SkewedChi2Sampler(skewedness=1.0, n_components=D).fit(X)
            ref.random_weights_ = np.array(rf.frequencies_.T, dtype=np.float64)
            ref.random_offset_ = np.array(rf.offsets_, dtype=np.float64)
            return f"{np.max(np.abs(_dense(rf.transform(X)) - _dense(ref.transform(X)))):.1e}"
        return ((lambda **kw: randfeat.SkewedChi2Sampler(D, skewedness=1.0, random_state=0,
                                                         **kw)),
                ska.SkewedChi2Sampler(skewedness=1.0, n_components=D, random_state=0), check)
    # rff
    if D is None:
        return (lambda **kw: randfeat.RandomFourierFeatures(**kw)), ska.RBFSampler(), nodiff
    g = 1.0 / d
    sigma = 1.0 / math.sqrt(2.0 * g)
    feats = "paired" if variant == "paired" else "phase"

    def check(rf, sk):
        if feats == "paired":
            return "--"
        ref = ska.RBFSampler(gamma=g, n_components=D).fit(X)
        ref.random_weights_ = np.array(rf.frequencies_.T, dtype=np.float64)
        ref.random_offset_ = np.array(rf.offsets_, dtype=np.float64)
        return f"{np.max(np.abs(_dense(rf.transform(X)) - _dense(ref.transform(X)))):.1e}"
    return ((lambda **kw: randfeat.RandomFourierFeatures(D, sigma=sigma, features=feats,
                                                         random_state=0, **kw)),
            ska.RBFSampler(gamma=g, n_components=D, random_state=0), check)


def _ms(t):
    return f"{t * 1e3:.3g}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, one repeat (< 30 s)")
    ap.add_argument("--repeat", type=int, default=None,
                    help="timed calls per block (two blocks per callable); default 3, quick 1")
    ap.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    ap.add_argument("--blas-threads", type=int, default=None,
                    help="limit the BLAS of both libraries to this many threads (default: the "
                         "BLAS's own setting, what a user gets)")
    args = ap.parse_args(argv)
    repeat = args.repeat or (1 if args.quick else 3)
    import sklearn
    from threadpoolctl import threadpool_info, threadpool_limits

    import randfeat

    cfg = randfeat.show_config(as_dict=True)
    print(f"# bench_sklearn_maps — randfeat {randfeat.__version__}, scikit-learn "
          f"{sklearn.__version__}, numpy {np.__version__}, Python {platform.python_version()}")
    print(f"CPU: {cfg['machine']['cpu']} ({cfg['machine']['usable_cpus']} usable CPUs); SIMD "
          f"{cfg['simd']['selected']}; OpenMP {'on' if cfg['openmp']['enabled'] else 'off'}")
    blas = [f"{p.get('internal_api')} {p.get('version')} ({p.get('num_threads')} threads)"
            for p in threadpool_info() if p.get("user_api") == "blas"]
    print(f"BLAS: {', '.join(blas) or 'n/a'}; {repeat} timed call(s) per block, 2 blocks")
    print(f"load average at the start: {load_average()}")
    if args.blas_threads is not None:
        with threadpool_limits(args.blas_threads, user_api="blas"):
            print(f"BLAS limited to {args.blas_threads} thread(s) for the whole run")
            return _run(args, repeat)
    return _run(args, repeat)


def _run(args, repeat):
    table = QUICK if args.quick else FULL
    rng = np.random.default_rng(0)
    header = ("| case | n x d | n_components | fit (ms, min): scikit-learn / randfeat / "
              "randfeat 1 thread | fit ratio | transform scikit-learn min / median (ms) | "
              "transform randfeat min / median (ms) | ratio (min, median) | transform randfeat "
              "1 thread min / median (ms) | ratio (min, median) | same map: max abs diff |")
    for section in args.only:
        print(f"\n## {section}\n")
        print(header)
        print("|" + "|".join("---" for _ in range(header.count("|") - 1)) + "|")
        for label, n, d, D, variant in table[section]:
            X = _data(n, d, variant, rng)
            make, sk, check = _pair(section, n, d, D, variant, X)
            rf, rf1 = make(), make(n_threads=1)
            fits = [(lambda e=e, X=X: e.fit(X)) for e in (sk, rf, rf1)]
            fa, fb, fc = (min(t) for t in blocked_times(fits, repeat))
            trs = [(lambda e=e, X=X: e.transform(X)) for e in (sk, rf, rf1)]
            (a, am), (b, bm), (c, cm) = ((min(t), float(np.median(t)))
                                         for t in blocked_times(trs, repeat))
            diff = check(rf, sk)
            ws, wr = (e.transform(X[:1]).shape[1] for e in (sk, rf))
            width = f"{ws}" if ws == wr else f"{ws} / {wr}"
            shape = f"{n} x {d}" + (" (float32)" if variant in ("float32", "phase32") else "") \
                + (", CSR 10 %" if variant == "sparse" else "")
            print(f"| {label} | {shape} | {width} | {_ms(fa)} / {_ms(fb)} / {_ms(fc)} | "
                  f"{fa / fb:.2f} | {_ms(a)} / {_ms(am)} | {_ms(b)} / {_ms(bm)} | "
                  f"{a / b:.2f}, {am / bm:.2f} | {_ms(c)} / {_ms(cm)} | {a / c:.2f}, "
                  f"{am / cm:.2f} | {diff} |", flush=True)
    print(f"\nload average at the end: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
