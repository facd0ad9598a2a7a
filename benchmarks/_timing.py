"""Timing helpers shared by the benchmark scripts (``bench_features.py``,
``bench_orthogonal.py``): blocked timing in two passes of opposite order, markdown tables,
the machine's load.  Not part of the installed package; the scripts import it from their own
folder (``from _timing import ...``).

Why blocked timing: each callable is timed in its own block of ``repeat`` calls (after one
warm-up call), in two passes -- forward, then reverse order -- so that a drift of the machine's
load hits both ends alike.  Interleaving call by call is wrong for multi-threaded comparisons:
after a multi-threaded call, OpenBLAS's idle workers (NumPy's copy, used by the peers) spin on
the cores for up to ~0.1 s (OPENBLAS_THREAD_TIMEOUT), so a call of another library started at
once runs its second thread on a busy core.  Measured on 2 cores, randfeat's 2-thread phase map
at d = 1024, D = 1000, float32: 24.7 ms right after an RBFSampler call, 11.7 ms in a row
(RBFSampler: 12.0 ms in a row).  Each library is thus timed in its own steady state.
"""

from __future__ import annotations

import math
import os
import statistics
import time

__all__ = ["blocked_times", "blocked_min", "blocked_min_median", "print_table", "ms",
           "load_average"]


def blocked_times(fns, repeat):
    """All wall times (seconds) of each callable: one warm-up call, then ``repeat`` timed calls
    in a block, in two passes (forward, then reverse order).  Returns one list per callable
    (``2 * repeat`` times each)."""
    times = [[] for _ in fns]
    for order in (range(len(fns)), reversed(range(len(fns)))):
        for i in order:
            fns[i]()
            for _ in range(repeat):
                t0 = time.perf_counter()
                fns[i]()
                times[i].append(time.perf_counter() - t0)
    return times


def blocked_min(fns, repeat):
    """Minimum wall time of each callable (see :func:`blocked_times`)."""
    return [min(t) if t else math.inf for t in blocked_times(fns, repeat)]


def blocked_min_median(fns, repeat):
    """(minimum, median) wall time of each callable (see :func:`blocked_times`)."""
    return [(min(t), statistics.median(t)) for t in blocked_times(fns, repeat)]


def print_table(title, header, rows):
    """Print ``rows`` (dicts keyed by ``header``) as a markdown table under ``## title``."""
    print(f"\n## {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        print("| " + " | ".join(str(r[h]) for h in header) + " |")


def ms(t):
    """Seconds as milliseconds with 3 significant digits."""
    return f"{t * 1e3:.3g}"


def load_average():
    """The 1-, 5- and 15-minute load averages as a string ('n/a' where unavailable)."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except (AttributeError, OSError):  # pragma: no cover - not on this platform
        return "n/a"
