"""PolynomialCountSketch (TensorSketch): randfeat against scikit-learn, side by side.

Both libraries transform the same data with the same law (degree p count sketches combined by
FFT); randfeat is timed with its default ``n_threads`` (all CPUs) and with ``n_threads=1``,
scikit-learn's estimator has no thread parameter (NumPy/SciPy on the calling thread).  The
first row is the **default call**, ``PolynomialCountSketch()`` (degree 2, n_components 100), on
the target data (n = 10,000 rows, d = 784).  Fit is not timed (it only draws the hash tables);
each row checks that randfeat's output with scikit-learn's hash tables equals scikit-learn's
(max |difference| printed).

Timings (``_timing.py``): each callable timed in its own block of ``repeat`` calls after one
warm-up call, in two passes of opposite order (a drift of the machine's load hits both ends
alike), in one process; minimum and median per callable, ratios ``scikit-learn / randfeat``
(> 1: randfeat faster) of both.  The BLAS is limited to one thread (neither library uses it
here).  The machine this runs on may be shared: the load average is printed before and after.

Usage::

    python benchmarks/bench_sketch.py            # the table of benchmarks/README.md
    python benchmarks/bench_sketch.py --quick    # smaller rows, fewer repeats
"""

from __future__ import annotations

import argparse
import platform
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

# run from a source checkout without installing: use the in-place build of this tree
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import blocked_times, load_average  # noqa: E402 - benchmarks/_timing.py

# (label, n, d, n_components, degree, coef0, dtype, density) -- None density: dense
FULL = [
    ("default call", 10_000, 784, 100, 2, 0.0, "float64", None),
    ("target", 10_000, 784, 4096, 2, 0.0, "float64", None),
    ("target, float32", 10_000, 784, 4096, 2, 0.0, "float32", None),
    ("degree 3, coef0 1", 10_000, 784, 4096, 3, 1.0, "float64", None),
    ("sparse CSR 5 %", 10_000, 784, 4096, 2, 0.0, "float64", 0.05),
    ("small", 1_000, 50, 500, 2, 0.0, "float64", None),
    ("tiny", 20, 10, 64, 2, 0.0, "float64", None),
    ("one row", 1, 784, 4096, 2, 0.0, "float64", None),
]
QUICK = [
    ("default call", 2_000, 784, 100, 2, 0.0, "float64", None),
    ("target width", 2_000, 784, 4096, 2, 0.0, "float64", None),
    ("sparse CSR 5 %", 2_000, 784, 4096, 2, 0.0, "float64", 0.05),
    ("tiny", 20, 10, 64, 2, 0.0, "float64", None),
]


def _data(n, d, dtype, density, rng):
    X = rng.random((n, d)) / np.sqrt(d)
    if density is not None:
        X[rng.random((n, d)) > density] = 0.0
        return sp.csr_matrix(X.astype(dtype))
    return X.astype(dtype)


def _repeats(n, D, p, base):
    work = n * p * D
    return base if work < 1e7 else max(2, base // 2) if work < 5e7 else 2


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    import sklearn
    from sklearn.kernel_approximation import PolynomialCountSketch as SkPCS

    import randfeat
    from randfeat import PolynomialCountSketch

    cfg = randfeat.show_config(as_dict=True)
    print(f"# bench_sketch — randfeat {randfeat.__version__}, scikit-learn {sklearn.__version__}, "
          f"numpy {np.__version__}, Python {platform.python_version()}")
    print(f"CPU: {cfg['machine']['cpu']} ({cfg['machine']['usable_cpus']} usable CPUs); SIMD "
          f"{cfg['simd']['selected']}; OpenMP {'on' if cfg['openmp']['enabled'] else 'off'}")
    print(f"load average at the start: {load_average()}")
    rows = QUICK if args.quick else FULL
    rng = np.random.default_rng(0)
    header = ("| case | n x d | D, p | scikit-learn min / median (ms) | randfeat default "
              "min / median (ms) | ratio (min, median) | randfeat 1 thread min / median (ms) "
              "| ratio (min, median) | max abs diff |")
    print("\n" + header)
    print("|" + "|".join("---" for _ in range(header.count("|") - 1)) + "|")
    with threadpool_limits(1, user_api="blas"):
        for label, n, d, D, p, c0, dt, dens in rows:
            X = _data(n, d, dt, dens, rng)
            kw = dict(n_components=D, degree=p, coef0=c0, random_state=0)
            if label == "default call":
                kw = {}
            rf = PolynomialCountSketch(**kw).fit(X)
            rf1 = PolynomialCountSketch(**kw, n_threads=1).fit(X)
            sk = SkPCS(**kw).fit(X)
            # same hash tables: the outputs must agree (scikit-learn computes in float64)
            sk.indexHash_ = np.array(rf.index_hash_, dtype=np.int64)
            sk.bitHash_ = np.array(rf.bit_hash_, dtype=np.int64)
            diff = float(np.max(np.abs(np.asarray(sk.transform(X), dtype=np.float64)
                                       - rf.transform(X))))
            rep = _repeats(n, rf.n_components, rf.degree, args.repeat)
            calls = [(lambda est=est, X=X: est.transform(X)) for est in (sk, rf, rf1)]
            (a, am), (b, bm), (c, cm) = ((min(t), float(np.median(t)))
                                         for t in blocked_times(calls, rep))
            shape = f"{n} x {d}" + (f" ({dt})" if dt != "float64" else "") + (
                f", CSR {int(dens * 100)} %" if dens else "")
            print(f"| {label} | {shape} | {rf.n_components}, {rf.degree}"
                  + (f", c0 {c0:g}" if c0 else "") + f" | {a * 1e3:.3g} / {am * 1e3:.3g} | "
                  f"{b * 1e3:.3g} / {bm * 1e3:.3g} | {a / b:.2f}, {am / bm:.2f} | "
                  f"{c * 1e3:.3g} / {cm * 1e3:.3g} | {a / c:.2f}, {am / cm:.2f} | {diff:.1e} |",
                  flush=True)
    print(f"\nload average at the end: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
