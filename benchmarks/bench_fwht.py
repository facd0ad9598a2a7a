"""randfeat's FWHT with its default arguments, each opt-out, and its peers, in one markdown table.

For every SIMD path of this CPU (each run in its own process with ``RANDFEAT_ISA`` set, the
public switch of randfeat's kernels), every dtype and every length d, the rows are timed side by
side in one process, interleaved (round r calls every row once, in an order rotated by r), on
batches of ``--batch-mib`` MiB (16 by default) of random rows, one thread by default:

  `fwht(x)` (default)      the call users write: a new result, ``check_finite=True``, x a NumPy
                           array as NumPy allocates it
  `check_finite=False`     opt-out: no NaN/inf check
  `out=x` (in place)       opt-out: in place, on NumPy's own allocation
  `out=x`, aligned         opt-out: in place on a 64-byte aligned batch
  `out=x`, aligned, `check_finite=False`   every opt-out at once (the fastest call)
  `out=y` pre-allocated    opt-out: the result written to a pre-allocated aligned batch
  FFHT in place            FALCONN-LIB/FFHT's ``fht_float/fht_double`` per row, C OpenMP loop
  FFHT into `y`            FFHT's ``fht_*_oop`` (copy, then in place) into a pre-allocated batch
  pyfwht in place          pyfwht's ``fwht_f64_batch`` (float64 only)
  copy floor               ``np.copyto(y, x)``: one read and one write of the batch
  arithmetic bound         d log2(d) additions per vector (one add or subtract per value and
                           level) at the peak rate of vector additions of this core at the
                           width of the SIMD path, measured here (12 independent add chains,
                           ``_rowloop.c``); FMA pipes not counted

Each cell is the minimum over the rounds of the time per vector (one row of d values); with
``--chunk-mib`` (for a loaded machine) each call is on a chunk of the batch and the cell sums each
chunk's best round, so that a chunk during which the process was preempted does not count.  Then, in
brackets, that time divided by the default call's: below 1 is faster than ``fwht(x)``; for a
peer, above 1 means randfeat's default call is faster.  The header names the machine class: the
CPU model, the SIMD path and butterfly schedule that ran (``randfeat.show_config()``), and the
load average; each table ends with the 1-minute load average after each column.

Before each timed call, untimed, an in-place row's batch is rescaled by 1/sqrt(d) (keeping values
O(1)) and an out-of-place row's input is multiplied by 1, so every row starts from the same cache
state.  With ``--flush``, a copy of 96 MiB elsewhere follows (untimed), so no row finds its batch
in the L3 cache (for batches beyond the cache, as in issue 17).

FFHT is not a dependency: build its ``fht.c`` and ``fast_copy.c`` into a shared library in your
own scratch folder and pass it with ``--ffht-lib`` or ``RANDFEAT_BENCH_FFHT_LIB`` (see
benchmarks/README.md); pyfwht is used when importable.  A peer that is missing is listed as
skipped.

Usage::

    python benchmarks/bench_fwht.py                    # the whole table: every SIMD path (minutes)
    python benchmarks/bench_fwht.py --isa avx2 --dtypes float32 --log-sizes 10 16
    python benchmarks/bench_fwht.py --schedule add fma  # both butterfly schedules, one after other
    python benchmarks/bench_fwht.py --batch-mib 64 --flush --threads 1 2   # out of cache
    python benchmarks/bench_fwht.py --chunk-mib 1 --rounds 31   # on a loaded machine
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

try:  # run from a checkout without installing
    import randfeat  # noqa: F401
except ImportError:  # pragma: no cover
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _fwht_bench import (  # benchmarks/
    DTYPES,
    add_peak,
    ffht_variants,
    floor_variants,
    fmt_ns,
    load_average,
    machine,
    pyfwht_variants,
    randfeat_variants,
    summarize,
    time_variants,
)

DEFAULT = "`fwht(x)` (default)"


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--isa", nargs="+", default=None,
                    help="SIMD paths to run (scalar, avx2, avx512); default: every SIMD path "
                         "this CPU has (scalar too when it has none)")
    ap.add_argument("--schedule", nargs="+", default=["auto"],
                    help="FWHT butterfly schedules (RANDFEAT_FWHT_SCHEDULE: add, fma, auto)")
    ap.add_argument("--log-sizes", type=int, nargs="+", default=[10, 13, 16, 20],
                    help="log2 of the lengths d (default 10 13 16 20)")
    ap.add_argument("--dtypes", nargs="+", default=["float32", "float64"], choices=list(DTYPES))
    ap.add_argument("--threads", type=int, nargs="+", default=[1])
    ap.add_argument("--batch-mib", type=float, default=16.0, help="batch size (default 16)")
    ap.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default 15)")
    ap.add_argument("--chunk-mib", type=float, default=None,
                    help="time calls on consecutive chunks of this size, each chunk's best "
                         "round summed (robust on a loaded machine; default: whole batches)")
    ap.add_argument("--flush", action="store_true",
                    help="evict the caches (96 MiB copy, untimed) before every timed call")
    ap.add_argument("--ffht-lib", default=None,
                    help="path of a ctypes-loadable FFHT .so (else $RANDFEAT_BENCH_FFHT_LIB)")
    ap.add_argument("--csv", default=None, help="append every timing to this CSV file")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    if args.child:
        return child(args)
    m = machine()
    isas = args.isa or [i for i in m["available"] if i != "scalar"] or ["scalar"]
    print(f"# FWHT: the default call, its opt-outs and its peers  "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
    print(f"\nMachine: {m['cpu']} ({m['arch']}, {m['cpus']} CPUs); SIMD paths available: "
          f"{', '.join(m['available'])}; OpenMP {'on' if m['openmp'] else 'off'}; randfeat "
          f"{m['randfeat']}, NumPy {m['numpy']}, Python {m['python']}.  Load average at start: "
          f"{load_average()}.")
    forward = list(argv if argv is not None else sys.argv[1:])
    cmd = " ".join(["python benchmarks/bench_fwht.py", *forward])
    print(f"Batches of {args.batch_mib:g} MiB, {args.rounds} interleaved rounds, "
          + (f"calls on {args.chunk_mib:g} MiB chunks, each chunk's best round summed"
             if args.chunk_mib else "whole-batch calls, the best round")
          + f"; threads {', '.join(map(str, args.threads))}"
          + ("; caches flushed before every call" if args.flush else "")
          + f".  Command: `{cmd}`.")
    sys.stdout.flush()
    rc = 0
    for isa in isas:
        for sched in args.schedule:
            env = dict(os.environ, RANDFEAT_ISA=isa, RANDFEAT_FWHT_SCHEDULE=sched)
            res = subprocess.run([sys.executable, __file__, "--child", *forward], env=env)
            rc = rc or res.returncode
    return rc


def child(args):
    m = machine()
    isa_env = os.environ.get("RANDFEAT_ISA", "auto")
    if isa_env not in ("auto", m["simd"]):
        print(f"\n## {isa_env}: not available on this CPU/build (ran {m['simd']}); skipped")
        return 0
    variants = randfeat_variants()
    skipped = []
    for make in (lambda: ffht_variants(args.ffht_lib), pyfwht_variants):
        vs, why = make()
        variants += vs
        if why:
            skipped.append(why)
    variants += floor_variants()
    peak32 = add_peak(m["simd"])
    sched = m["schedule"] if m["simd"] != "scalar" else "none (scalar code)"
    print(f"\n## SIMD path {m['simd']}, butterfly schedule {sched} "
          f"(RANDFEAT_ISA={isa_env}, RANDFEAT_FWHT_SCHEDULE="
          f"{os.environ.get('RANDFEAT_FWHT_SCHEDULE', 'auto')})\n")
    print(f"CPU {m['cpu']}; load average {load_average()}; peak vector additions measured on "
          f"this core: " + (f"{peak32:.1f} float32 / {peak32 / 2:.1f} float64 per ns"
                            if peak32 else "not measured (no probe for this path)") + ".")
    for v in variants:
        print(f"- {v.name}: {v.note}")
    for why in skipped:
        print(f"- skipped: {why}")
    rng = np.random.default_rng(0)
    flush = (np.ones(96 << 17), np.empty(96 << 17)) if args.flush else None
    records = []
    for n_thr in args.threads:
        for dt in args.dtypes:
            cols, loads = {}, []
            for log_n in args.log_sizes:
                ts, rows = time_variants(
                    variants, dt, log_n, n_thr, int(args.batch_mib * 2**20), args.rounds, rng,
                    flush, int(args.chunk_mib * 2**20) if args.chunk_mib else None)
                cols[log_n] = {k: summarize(v, rows) for k, v in ts.items()}
                for k in ts:
                    records.append((m["simd"], m["schedule"], dt, n_thr, 1 << log_n, k,
                                    *cols[log_n][k], load_average().split()[0]))
                loads.append(load_average().split()[0])
            _table(cols, loads, dt, n_thr, peak32, args.log_sizes, m)
            sys.stdout.flush()
    if args.csv:
        new = not Path(args.csv).exists()
        with open(args.csv, "a") as f:
            if new:
                f.write("simd,schedule,dtype,n_threads,d,row,min_ns,median_ns,load1\n")
            for r in records:
                f.write(",".join(json.dumps(x) if isinstance(x, str) else f"{x:.6g}"
                                 if isinstance(x, float) else str(x) for x in r) + "\n")
    return 0


def _table(cols, loads, dt, n_thr, peak32, logs, m):
    names = list(next(iter(cols.values())))
    print(f"\n### {dt}, {n_thr} thread{'s' if n_thr > 1 else ''}, {m['simd']} "
          f"({m['schedule']} schedule): time per vector (ratio to `fwht(x)`)\n")
    print("| row | " + " | ".join(f"d = 2^{k}" for k in logs) + " |")
    print("|---|" + "---|" * len(logs))
    for name in names:
        cells = []
        for k in logs:
            t = cols[k].get(name, (None,))[0]
            base = cols[k][DEFAULT][0]
            cells.append("—" if t is None else
                         fmt_ns(t) if name == DEFAULT else f"{fmt_ns(t)} ({t / base:.2f})")
        print(f"| {name} | " + " | ".join(cells) + " |")
    if peak32:
        rate = peak32 if dt == "float32" else peak32 / 2
        cells = []
        for k in logs:
            b = (1 << k) * k / rate / max(1, n_thr)
            cells.append(f"{fmt_ns(b)} ({b / cols[k][DEFAULT][0]:.2f})")
        print("| arithmetic bound (add pipes) | " + " | ".join(cells) + " |")
    chk = "`check_finite=False`"
    if all(chk in cols[k] for k in logs):
        print("| **check cost**: default / `check_finite=False` | " + " | ".join(
            f"{cols[k][DEFAULT][0] / cols[k][chk][0]:.3f}" for k in logs) + " |")
    for peer in ("FFHT in place", "FFHT into `y`", "pyfwht in place"):
        if all(peer in cols[k] for k in logs):
            print(f"| **{peer} / default** | " + " | ".join(
                f"{cols[k][peer][0] / cols[k][DEFAULT][0]:.2f}" for k in logs) + " |")
    print("| load average (1 min) | " + " | ".join(loads) + " |")


if __name__ == "__main__":
    sys.exit(main())
