"""The runner's process-safe parts: one check run (or loaded from the cache) and the versions
that key the cache.  ``python -m analysis`` (``analysis/__main__.py``) and the audit
(``analysis/audit.py``) both use them; they live here so that neither imports the other and a
pool of fresh worker processes can unpickle :func:`run_one` by its importable name."""

from __future__ import annotations

import time

from analysis.repro import ResultCache, code_hash, from_jsonable, to_jsonable

__all__ = ["code_version", "randfeat_version", "cache_key", "run_one"]


def code_version() -> str:
    """Hash of the source files of ``analysis`` and of the ``randfeat`` it checks (.py, .pyx,
    .pxd, hand-written .c/.h; never Cython-generated C or compiled extensions, so a reinstall
    keeps the cache and a kernel change invalidates it): see :func:`analysis.repro.code_hash`."""
    return code_hash("analysis", "randfeat")


def randfeat_version() -> str:
    import randfeat

    return getattr(randfeat, "__version__", "unknown")


def cache_key(name, params, seed, rf_version, cversion):
    return {"name": name, "params": params, "seed": seed, "randfeat": rf_version,
            "code": cversion}


def run_one(name, mode, seed, cache_dir, use_cache, rf_version, cversion, quiet=False,
            sink=None):
    """Run (or load) one check; returns (name, seed, result, runtime, cached).  Process-safe.

    A cached entry is used only if it parses, has the expected key and the check's verdict
    accepts it; otherwise it is recomputed with a CacheWarning naming the file.  The run itself
    is limited to one BLAS/OpenMP thread (threadpoolctl, restored afterwards): the checks run
    many small computations and parallelism is across checks (``--jobs``)."""
    from threadpoolctl import threadpool_limits

    from analysis.checks import load, validate_verdict
    from analysis.repro import Progress, expected_ticks, record_ticks

    mod = load(name)
    params = mod.PARAMS[mode]
    key = cache_key(name, params, seed, rf_version, cversion)
    cache = ResultCache(cache_dir)
    if use_cache:
        blob = cache.load(f"{name}-s{seed}", key,
                          validate=lambda r: validate_verdict(mod, mod.verdict(r), r))
        if blob is not None:
            return name, seed, blob["result"], blob["runtime_s"], True
    t0 = time.process_time()
    w0 = time.monotonic()
    # one bar per check: its total is the step count of the last run with these parameters
    prog = Progress(f"{name} (seed {seed})", total=expected_ticks(cache_dir, name, params),
                    enabled=not quiet, every=0.5, sink=sink, key=(name, seed))
    with threadpool_limits(limits=1), prog:
        result = to_jsonable(mod.run(params, seed, progress=prog))
    record_ticks(cache_dir, name, params, prog.n)
    runtime = time.monotonic() - w0
    cache.store(f"{name}-s{seed}", key, result, runtime_s=runtime,
                cpu_s=time.process_time() - t0)
    return name, seed, from_jsonable(result), runtime, False
