"""``python -m randfeat``: what randfeat is, how it was built, a correctness check, a timing table.

Runs in a few seconds.  The full benchmark is ``python benchmarks/bench_fwht.py`` (see
``benchmarks/README.md``); set ``RANDFEAT_BENCH_FFHT_LIB`` to a built FFHT shared library to
include FFHT here too.
"""

from __future__ import annotations

import argparse
import platform
import sys

import numpy as np
import scipy.linalg

import randfeat
from randfeat._fwht_bench import build_peers, cpu_name, fmt_ns, time_case
from randfeat._lib import _fwht
from randfeat._validation import effective_n_cpus

ABOUT = """\
randfeat {version} -- random features for kernel approximation: random Fourier and random
binning features (Rahimi & Recht, NIPS 2007) and Fastfood (Le, Sarlos & Smola, ICML 2013), as
Cython kernels behind scikit-learn transformers, with empirical checks of the papers' claims.
Fastfood multiplies by Hadamard matrices; randfeat.fwht is its fast Walsh-Hadamard transform."""


def check_against_scipy(log_sizes=(0, 1, 4, 7, 10, 12)):
    """Compare fwht with scipy.linalg.hadamard(d) @ v; return (rows of text, all ok)."""
    rng = np.random.default_rng(0)
    lines, ok = [], True
    for dt, tol in ((np.float32, 1e-5), (np.float64, 1e-13)):
        errs = []
        for k in log_sizes:
            d = 1 << k
            x = rng.standard_normal((4, d))
            ref = x @ scipy.linalg.hadamard(d).T
            y = randfeat.fwht(x.astype(dt))
            err = float(np.abs(y - ref).max() / (np.sqrt(d) * np.abs(x).max()))
            errs.append(err)
            ok &= err <= tol * (k + 1)
        lines.append(f"  {np.dtype(dt).name:8s} d = " + ", ".join(f"2^{k}" for k in log_sizes)
                     + f": max relative error {max(errs):.1e} "
                     + ("OK" if max(errs) <= tol * (max(log_sizes) + 1) else "FAILED"))
    return lines, ok


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m randfeat", description=__doc__.split("\n")[0])
    ap.add_argument("--log-sizes", type=int, nargs="+", default=[10, 13, 16],
                    help="log2 of the FWHT lengths to time (default 10 13 16)")
    ap.add_argument("--batch-mib", type=float, default=8, help="batch size per timing (8)")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved repetitions (3)")
    args = ap.parse_args(argv)

    print(ABOUT.format(version=randfeat.__version__))
    print()
    print(f"machine    {platform.machine()}, {cpu_name()}, {effective_n_cpus()} usable CPUs")
    print(f"FWHT ISA   {_fwht.isa()} (chosen at run time; RANDFEAT_FWHT_ISA=scalar|avx2|avx512 "
          "caps it)")
    print(f"OpenMP     {'enabled' if _fwht.openmp_enabled() else 'disabled (one thread)'}")
    print(f"versions   python {platform.python_version()}, numpy {np.__version__}")
    print()
    print("fwht vs scipy.linalg.hadamard(d) @ v:")
    lines, ok = check_against_scipy()
    print("\n".join(lines))

    peers, skipped = build_peers(with_numpy=True)
    print()
    print(f"FWHT timing, 1 thread, ns per vector (best of {args.repeats} interleaved runs on "
          f"{args.batch_mib:g} MiB batches; full benchmark: benchmarks/bench_fwht.py):")
    rng = np.random.default_rng(0)
    for dt in ("float32", "float64"):
        names = [p.name for p in peers if dt in p.dtypes]
        print()
        print(f"  {dt:8s}" + "".join(f"{n:>20s}" for n in ["d"] + names))
        for k in args.log_sizes:
            t = time_case(peers, dt, k, 1, int(args.batch_mib * 2**20), args.repeats, rng)
            best = {n: min(v) for n, v in t.items()}
            ref = best["randfeat-kern"]
            cells = [f"2^{k}"]
            for n in names:
                c = fmt_ns(best[n])
                if n not in ("randfeat", "randfeat-kern"):
                    c += f" ({best[n] / ref:.1f}x)"
                cells.append(c)
            print("  " + " " * 8 + "".join(f"{c:>20s}" for c in cells))
    print()
    print("  (Nx) = peer time / randfeat kernel time; randfeat = public fwht(x, out=x), "
          "randfeat-kern = its compiled loop")
    for why in skipped:
        print(f"  skipped: {why}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
