"""Command line: ``python -m analysis [--quick | --full] [--only NAME ...] [--seed S] [--out DIR]
[--jobs N]``.

Runs the checks, caches finished results under DIR/cache (key: check name, parameters, seed,
randfeat.__version__ and a hash of the source files of analysis and randfeat, see
analysis.repro; entries written atomically, validated on read, a bad entry recomputed with a
warning naming it), writes DIR/report.md, DIR/report.json and one PNG per check, and exits with
status 1 when any check fails.

``--seed all`` (or ``RANDFEAT_ANALYSIS_SEEDS=all`` / ``0-9`` / ``3``) runs the suite for every seed
0–99 and writes DIR/seed_sweep.md/json instead of the per-check report.

``--audit`` (seeds 0–49 unless ``--seed`` says otherwise) audits the power statements instead:
each stated effect injected through its check's ``audit(effect)`` (analysis/audit.py), results in
DIR/audit.json and DIR/audit.md.  The report's records carry ``detectable`` (the verdict's
effects) and ``audit`` (the check's audit.json entry when its code version matches, else None).
"""

from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import shlex
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed

from analysis.checks import CHECKS
from analysis.montecarlo import parse_seeds
from analysis.report import write_html, write_json, write_markdown, write_sweep
from analysis.runner import cache_key, code_version, randfeat_version, run_one  # noqa: F401

HERE = pathlib.Path(__file__).resolve().parent


def _error_record(n, mod, tb, mode, seed):
    last = tb.strip().splitlines()[-1] if tb.strip() else "error"
    return dict(name=n, title=mod.TITLE, claim=mod.CLAIM, source=mod.SOURCE, verdict="fail",
                statistic={"error": tb[-500:]}, tightness=None,
                summary=f"ERROR: {last}", false_alarm=mod.ALPHA, runtime_s=0.0, cached=False,
                figure="", params_brief=mod.PARAMS[mode], table="", notes=[], power=None,
                detectable=None, audit=None,
                tightness_meaning=getattr(mod, "TIGHTNESS", None), seed=seed, mode=mode)


def _default_jobs() -> int:
    """The CPUs this process may use (each check runs single-threaded in its own process)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def _checks_epilog():
    """The checks, in report order, with their titles (imported only for --help)."""
    from analysis.checks import load

    lines = ["checks (in report order; --only NAME ... runs a subset):"]
    for n in CHECKS:
        try:
            title = load(n).TITLE
        except Exception as exc:  # noqa: BLE001 - --help still lists the name
            title = f"(cannot load: {type(exc).__name__})"
        lines.append(f"  {n:28s} {title[:90]}")
    lines += ["", "outputs in --out: report.md, report.html (figures embedded), report.json, one "
              "PNG per check; seed_sweep.md/json for several seeds; cache/ (reused by the next "
              "run)", "", "examples:", "  python -m analysis --quick",
              "  python -m analysis --only claim1 hoeffding --seed 3",
              "  python -m analysis --quick --seed 0-99 --jobs 2"]
    return "\n".join(lines)


class _Parser(argparse.ArgumentParser):
    def format_help(self):
        self.epilog = _checks_epilog()
        return super().format_help()


def main(argv=None):
    ap = _Parser(prog="python -m analysis",
                 description="Run the seeded Monte Carlo checks of randfeat's theory (default: "
                             "the quick mode, seed 0, into results/analysis, one process per "
                             "CPU); write the report and one figure per check; exit with "
                             "status 1 when a check fails.",
                 formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", dest="mode", action="store_const", const="quick",
                   help="quick suite (the default mode, <= 2 min on 2 cores)")
    g.add_argument("--full", dest="mode", action="store_const", const="full",
                   help="full suite (<= 30 min)")
    g.add_argument("--smoke", dest="mode", action="store_const", const="smoke",
                   help="tiny grids for the test-suite (seconds; not a meaningful check)")
    ap.add_argument("--only", nargs="+", metavar="NAME", choices=CHECKS, help="run only these "
                                                                              "checks")
    ap.add_argument("--seed", default=None,
                    help="seed, or 'all' / 'A-B' / 'a,b,c' for a seed sweep (default 0; env "
                         "RANDFEAT_ANALYSIS_SEEDS; with --audit default 0-49)")
    ap.add_argument("--audit", action="store_true",
                    help="audit the power statements: inject each stated effect through the "
                         "check's audit(effect) at every seed; writes DIR/audit.json and "
                         "DIR/audit.md (analysis/audit.py)")
    ap.add_argument("--out", default="results/analysis",
                    help="output directory (default results/analysis)")
    ap.add_argument("--jobs", type=int, default=_default_jobs(),
                    help="run checks in N processes (default: the CPUs this process may use; "
                         "results do not depend on it)")
    ap.add_argument("--no-cache", action="store_true", help="ignore and overwrite cached results")
    ap.add_argument("--quiet", action="store_true",
                    help="no progress bars or log lines (bars are drawn only on a terminal)")
    ap.add_argument("--scheduler", help="run on dask: a scheduler ADDRESS, 'local' or 'active' "
                    "(analysis/_dask_runner.py)")
    args = ap.parse_args(argv)
    mode = args.mode or "quick"
    if args.seed is None:
        from analysis.audit import DEFAULT_SEEDS
        args.seed = DEFAULT_SEEDS if args.audit else os.environ.get("RANDFEAT_ANALYSIS_SEEDS",
                                                                   "0")
    seeds = parse_seeds(args.seed)
    names = args.only or CHECKS
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.audit:
        from analysis.audit import run_audit
        log_ = (lambda *a: None) if args.quiet else (
            lambda *a: print(*a, file=sys.stderr, flush=True))
        return run_audit(names, seeds, out, mode=mode, jobs=args.jobs,
                         use_cache=not args.no_cache, log=log_)
    cache_dir = out / "cache"
    rf_version = randfeat_version()
    cversion = code_version()
    command = "python -m analysis " + " ".join(shlex.quote(a) for a in (argv if argv is not None
                                                                         else sys.argv[1:]))
    log = (lambda *a: None) if args.quiet else (lambda *a: print(*a, file=sys.stderr, flush=True))
    log(f"analysis: mode={mode} seeds={seeds[0]}..{seeds[-1]} ({len(seeds)}) checks={len(names)} "
        f"jobs={args.jobs} out={out}")

    from analysis.checks import load as _load

    # longest checks first, so that --jobs keeps every worker busy
    tasks = sorted(((n, s) for s in seeds for n in names),
                   key=lambda t: (t[1], -getattr(_load(t[0]), "COST", 1.0)))
    results = {}
    errors = {}
    w0 = time.monotonic()

    from analysis.checks import load, validate_verdict

    sweep = {n: {} for n in names}

    def _write_sweep():
        meta = dict(command=command, mode=mode, wall_time_s=time.monotonic() - w0,
                    complete=len(results) + len(errors) == len(tasks))
        write_sweep(out / "seed_sweep.md", out / "seed_sweep.json", meta, sweep)

    # progress: one bar per running check and one over all of them, on a terminal only (a
    # dask scheduler's workers cannot reach this process's queue: the overall bar alone)
    from analysis.repro import ProgressBoard

    board = ProgressBoard(len(tasks), label="checks" if len(seeds) == 1 else "check runs",
                          enabled=not args.quiet)
    if board.enabled:
        log = board.write  # noqa: F841 - log lines go above the bars
    sink = None if args.scheduler else board.queue

    def _done(name, seed, res, rt, cached):
        results[(name, seed)] = (res, rt, cached)
        board.done()
        log(f"[{len(results) + len(errors)}/{len(tasks)}] {name} seed {seed}: "
            f"{'cached' if cached else f'{rt:.1f} s'}")
        if len(seeds) > 1:  # the sweep summary is rewritten as results arrive (resumable)
            try:
                mod_ = load(name)
                sweep[name][seed] = validate_verdict(mod_, mod_.verdict(res), res)["verdict"]
            except Exception:  # an exception in the verdict is a failure of the check
                sweep[name][seed] = "fail"
                log(f"ERROR in verdict of {(name, seed)}:\n{traceback.format_exc()}")
            _write_sweep()

    common = (str(cache_dir), not args.no_cache, rf_version, cversion, args.quiet, sink)
    if args.scheduler or (args.jobs > 1 and len(tasks) > 1):
        from analysis._dask_runner import executor
        with executor(args.scheduler, args.jobs, cversion, local=ProcessPoolExecutor) as ex:
            futs = {ex.submit(run_one, n, mode, s, *common): (n, s) for n, s in tasks}
            for f in as_completed(futs):
                try:
                    _done(*f.result())
                except Exception:
                    errors[futs[f]] = traceback.format_exc()
                    board.done()
                    log(f"ERROR in {futs[f]}:\n{errors[futs[f]]}")
    else:
        for n, s in tasks:
            try:
                _done(*run_one(n, mode, s, *common))
            except Exception:
                errors[(n, s)] = traceback.format_exc()
                board.done()
                log(f"ERROR in {(n, s)}:\n{errors[(n, s)]}")
    board.close()

    any_fail = bool(errors)
    if len(seeds) > 1:
        for (n, s) in errors:
            sweep[n][s] = "error"
        _write_sweep()
        log(f"seed sweep written to {out / 'seed_sweep.md'}")
        for n in names:
            vals = list(sweep[n].values())
            any_fail |= "fail" in vals
            log(f"  {n}: {vals.count('pass')} pass, {vals.count('vacuous')} vacuous, "
                f"{vals.count('fail')} fail, {vals.count('error')} error")
        return 1 if any_fail else 0

    from analysis import plots
    from analysis.audit import entry_for
    from analysis.checks import plot as plot_check

    seed = seeds[0]
    records, checks = [], {}
    for n in names:
        mod = load(n)
        checks[n] = mod
        if (n, seed) in errors:
            records.append(_error_record(n, mod, errors[(n, seed)], mode, seed))
            records[-1]["audit"] = entry_for(out, n, cversion)
            continue
        res, rt, cached = results[(n, seed)]
        try:
            v = validate_verdict(mod, mod.verdict(res), res)
            fig = plot_check(mod, res, v)
        except Exception:
            errors[(n, seed)] = traceback.format_exc()
            log(f"ERROR in verdict/plot of {(n, seed)}:\n{errors[(n, seed)]}")
            records.append(_error_record(n, mod, errors[(n, seed)], mode, seed))
            records[-1]["audit"] = entry_for(out, n, cversion)
            any_fail = True
            continue
        fig_name = f"{n}.png"
        fig.savefig(out / fig_name, dpi=110)
        plots.close(fig)
        any_fail |= v["verdict"] == "fail"
        records.append(dict(name=n, title=mod.TITLE, claim=mod.CLAIM, source=mod.SOURCE,
                            verdict=v["verdict"], statistic=v["statistic"],
                            tightness=v.get("tightness"), tightness_ci=v.get("tightness_ci"),
                            summary=v["summary"],
                            false_alarm=mod.ALPHA, runtime_s=rt, cached=cached, figure=fig_name,
                            params_brief=mod.PARAMS[mode], table=v.get("table", ""),
                            notes=v.get("notes", []), power=v.get("power"),
                            detectable=v.get("detectable"), audit=entry_for(out, n, cversion),
                            tightness_meaning=getattr(mod, "TIGHTNESS", None), seed=seed,
                            mode=mode))
        log(f"  {n}: {v['verdict']} — {v['summary']}")
    meta = dict(command=command, mode=mode, seed=seed, randfeat_version=rf_version,
                code_version=cversion, date=datetime.datetime.now(datetime.timezone.utc)
                .strftime("%Y-%m-%d %H:%M UTC"), wall_time_s=time.monotonic() - w0,
                cpu_time_s=sum(r["runtime_s"] for r in records if not r["cached"]),
                n_cached=sum(r["cached"] for r in records), jobs=args.jobs)
    write_json(out / "report.json", meta,
               [{k: v for k, v in r.items() if k not in ("table", "params_brief")}
                for r in records])
    write_markdown(out / "report.md", meta, records, checks)
    write_html(out / "report.html", meta, records, checks, figures=out)
    log(f"report: {out / 'report.md'} ({'FAIL' if any_fail else 'ok'}, "
        f"{meta['wall_time_s']:.1f} s)")
    return 1 if any_fail else 0


if __name__ == "__main__":
    sys.exit(main())
