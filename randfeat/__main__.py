"""``python -m randfeat``: how randfeat was built and what it runs on, plus a quick self-check.

Prints :func:`randfeat.show_config` and compares ``randfeat.fwht`` with
``scipy.linalg.hadamard(d) @ v``.  Timings live in ``benchmarks/`` (see ``benchmarks/README.md``).
"""

from __future__ import annotations

import sys

import numpy as np
import scipy.linalg

import randfeat


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
    randfeat.show_config()
    print()
    print("self-check, fwht vs scipy.linalg.hadamard(d) @ v:")
    lines, ok = check_against_scipy()
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
