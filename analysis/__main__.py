"""Command line: ``python -m analysis [--quick | --full] [--only NAME ...] [--seed S] [--out DIR]
[--jobs N]``.

Runs the checks, caches finished results under DIR/cache (key: check name, parameters, seed,
randfeat.__version__ and a hash of the analysis code and of the installed randfeat package,
sources and compiled extensions), writes DIR/report.md, DIR/report.json
and one PNG per check, and exits with status 1 when any check fails.

``--seed all`` (or ``RANDFEAT_ANALYSIS_SEEDS=all`` / ``0-9`` / ``3``) runs the suite for every seed
0–99 and writes DIR/seed_sweep.md/json instead of the per-check report.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import pathlib
import shlex
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed

from analysis import CHECKS
from analysis.montecarlo import parse_seeds
from analysis.report import to_jsonable, write_json, write_markdown, write_sweep

HERE = pathlib.Path(__file__).resolve().parent


_LIB_SUFFIXES = {".py", ".pyx", ".pxd", ".c", ".h", ".so", ".pyd"}


def code_version() -> str:
    """Hash of every analysis source file and of the randfeat package it checks (its sources
    and compiled extensions, whichever are installed): changing either invalidates the cache,
    not only a new ``randfeat.__version__``."""
    import randfeat

    h = hashlib.sha256()
    for p in sorted(HERE.rglob("*.py")):
        h.update(str(p.relative_to(HERE)).encode())
        h.update(p.read_bytes())
    lib = pathlib.Path(randfeat.__file__).resolve().parent
    for p in sorted(lib.rglob("*")):
        if p.suffix in _LIB_SUFFIXES and p.is_file() and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(lib)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def randfeat_version() -> str:
    import randfeat

    return getattr(randfeat, "__version__", "unknown")


def cache_key(name, params, seed, rf_version, cversion):
    blob = json.dumps(to_jsonable({"name": name, "params": params, "seed": seed,
                                   "randfeat": rf_version, "code": cversion}), sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def run_one(name, mode, seed, cache_dir, use_cache, rf_version, cversion, quiet=False):
    """Run (or load) one check; returns (name, seed, result, runtime, cached).  Process-safe."""
    from analysis.checks import load
    from analysis.montecarlo import Progress

    mod = load(name)
    params = mod.PARAMS[mode]
    key = cache_key(name, params, seed, rf_version, cversion)
    path = pathlib.Path(cache_dir) / f"{name}-s{seed}-{key}.json"
    if use_cache and path.exists():
        with open(path) as fh:
            blob = json.load(fh)
        return name, seed, blob["result"], blob["runtime_s"], True
    t0 = time.process_time()
    w0 = time.monotonic()
    prog = Progress(f"{name} (seed {seed})", enabled=not quiet, every=5.0)
    result = to_jsonable(mod.run(params, seed, progress=prog))
    runtime = time.monotonic() - w0
    pathlib.Path(cache_dir).mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as fh:
        json.dump({"result": result, "runtime_s": runtime, "cpu_s": time.process_time() - t0}, fh)
    os.replace(tmp, path)
    return name, seed, result, runtime, False


def _from_json(x):
    """Undo to_jsonable's string encoding of non-finite floats."""
    if isinstance(x, dict):
        return {k: _from_json(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_from_json(v) for v in x]
    if x == "inf":
        return float("inf")
    if x == "-inf":
        return float("-inf")
    if x == "nan":
        return float("nan")
    return x


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m analysis", description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", dest="mode", action="store_const", const="quick",
                   help="quick suite (default, <= 2 min on 2 cores)")
    g.add_argument("--full", dest="mode", action="store_const", const="full",
                   help="full suite (<= 30 min)")
    g.add_argument("--smoke", dest="mode", action="store_const", const="smoke",
                   help="tiny grids for the test-suite (seconds; not a meaningful check)")
    ap.add_argument("--only", nargs="+", metavar="NAME", choices=CHECKS, help="run only these "
                                                                              "checks")
    ap.add_argument("--seed", default=os.environ.get("RANDFEAT_ANALYSIS_SEEDS", "0"),
                    help="seed, or 'all' / 'A-B' / 'a,b,c' for a seed sweep (default 0; env "
                         "RANDFEAT_ANALYSIS_SEEDS)")
    ap.add_argument("--out", default="results/analysis", help="output directory")
    ap.add_argument("--jobs", type=int, default=1, help="run checks in N processes")
    ap.add_argument("--no-cache", action="store_true", help="ignore and overwrite cached results")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    ap.add_argument("--scheduler", help="run on dask: a scheduler ADDRESS, 'local' or 'active' "
                    "(analysis/_dask_runner.py)")
    args = ap.parse_args(argv)
    mode = args.mode or "quick"
    seeds = parse_seeds(args.seed)
    names = args.only or CHECKS
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
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

    from analysis.checks import load

    sweep = {n: {} for n in names}

    def _write_sweep():
        meta = dict(command=command, mode=mode, wall_time_s=time.monotonic() - w0,
                    complete=len(results) + len(errors) == len(tasks))
        write_sweep(out / "seed_sweep.md", out / "seed_sweep.json", meta, sweep)

    def _done(name, seed, res, rt, cached):
        results[(name, seed)] = (res, rt, cached)
        log(f"[{len(results) + len(errors)}/{len(tasks)}] {name} seed {seed}: "
            f"{'cached' if cached else f'{rt:.1f} s'}")
        if len(seeds) > 1:  # the sweep summary is rewritten as results arrive (resumable)
            sweep[name][seed] = load(name).verdict(_from_json(res))["verdict"]
            _write_sweep()

    common = (str(cache_dir), not args.no_cache, rf_version, cversion, args.quiet)
    if args.scheduler or (args.jobs > 1 and len(tasks) > 1):
        from analysis._dask_runner import executor
        with executor(args.scheduler, args.jobs, cversion, local=ProcessPoolExecutor) as ex:
            futs = {ex.submit(run_one, n, mode, s, *common): (n, s) for n, s in tasks}
            for f in as_completed(futs):
                try:
                    _done(*f.result())
                except Exception:
                    errors[futs[f]] = traceback.format_exc()
                    log(f"ERROR in {futs[f]}:\n{errors[futs[f]]}")
    else:
        for n, s in tasks:
            try:
                _done(*run_one(n, mode, s, *common))
            except Exception:
                errors[(n, s)] = traceback.format_exc()
                log(f"ERROR in {(n, s)}:\n{errors[(n, s)]}")

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

    seed = seeds[0]
    records, checks = [], {}
    for n in names:
        mod = load(n)
        checks[n] = mod
        if (n, seed) in errors:
            records.append(dict(name=n, title=mod.TITLE, claim=mod.CLAIM, source=mod.SOURCE,
                                verdict="fail", statistic={"error": errors[(n, seed)][-500:]},
                                tightness=None, summary="ERROR while running (see statistic)",
                                false_alarm=mod.ALPHA, runtime_s=0.0, cached=False, figure="",
                                params_brief=mod.PARAMS[mode], table="", notes=[]))
            continue
        res, rt, cached = results[(n, seed)]
        res = _from_json(res)
        v = mod.verdict(res)
        fig = mod.plot(res)
        fig_name = f"{n}.png"
        fig.savefig(out / fig_name, dpi=110)
        plots.close(fig)
        any_fail |= v["verdict"] == "fail"
        records.append(dict(name=n, title=mod.TITLE, claim=mod.CLAIM, source=mod.SOURCE,
                            verdict=v["verdict"], statistic=v["statistic"],
                            tightness=v.get("tightness"), summary=v["summary"],
                            false_alarm=mod.ALPHA, runtime_s=rt, cached=cached, figure=fig_name,
                            params_brief=mod.PARAMS[mode], table=v.get("table", ""),
                            notes=v.get("notes", []), seed=seed, mode=mode))
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
    log(f"report: {out / 'report.md'} ({'FAIL' if any_fail else 'ok'}, "
        f"{meta['wall_time_s']:.1f} s)")
    return 1 if any_fail else 0


if __name__ == "__main__":
    sys.exit(main())
