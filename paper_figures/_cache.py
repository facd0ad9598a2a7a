"""JSON result cache keyed by (target, parameters, seeds, randfeat version, code).

A result is computed once per key and stored as ``<out>/_cache/<target>/<target>-<hash>.json``
together with its key, so figures are re-rendered from the cache without recomputation.  The key
holds the parameters, ``randfeat.__version__``, the target's ``CODE_VERSION`` and a hash of the
source files of ``paper_figures`` and ``randfeat`` (:func:`analysis.repro.code_hash`: a kernel
change invalidates the figures, a reinstall does not).  The storage is
:class:`analysis.repro.ResultCache`, shared with ``analysis``: entries written atomically under
unique temporary names, validated on read, and a corrupt or wrong-structure entry recomputed with a
:class:`~analysis.repro.CacheWarning` naming the file; an entry that cannot be written is a
CacheWarning too, and the computed result is returned.
"""

from __future__ import annotations

import platform
import time
from pathlib import Path

import randfeat
from analysis.repro import ResultCache, code_hash, from_jsonable, to_jsonable

_CODE = {}


def source_hash() -> str:
    """Hash of the sources of paper_figures and randfeat (computed once per process)."""
    if "h" not in _CODE:
        _CODE["h"] = code_hash("paper_figures", "randfeat")
    return _CODE["h"]


def cache_key(target: str, params: dict, code_version: int) -> dict:
    """Everything the result depends on; not where the cache lives (``cache_dir``), so that a
    results folder can be moved or copied and still be found."""
    params = {k: v for k, v in params.items() if k != "cache_dir"}
    return to_jsonable({"target": target, "params": params, "code_version": code_version,
                        "randfeat_version": randfeat.__version__, "code": source_hash()})


#: set by ``--render-only``: cache misses return None instead of computing (nested caches).
ONLY_CACHED = False
#: set by ``--refresh``: every cache, including the nested per-row / per-dataset ones, is
#: recomputed (the ``refresh`` argument alone reaches only the top-level call).
REFRESH = False


def _validate(result):
    if not isinstance(result, dict):
        raise ValueError(f"result is a {type(result).__name__}, not a dict")


def cached(out_dir, target, params, compute, *, code_version=1, refresh=False, log=print):
    """Return ``compute(params)`` from the cache or compute and store it.

    With :data:`ONLY_CACHED` set, a miss returns None for nested (per-row) caches; the top-level
    call (``log`` not None) then assembles what is cached without storing the partial result.
    """
    key = cache_key(target, params, code_version)
    cache = ResultCache(Path(out_dir) / "_cache" / target)
    path = cache.path(target, key)
    if not (refresh or REFRESH):
        blob = cache.load(target, key, validate=_validate)
        if blob is not None:
            log(f"[{target}] using cached result {path}")
            return blob["result"]
    if ONLY_CACHED and target.endswith(("_row", "_dataset", "_row_quick", "_dataset_quick")):
        return None
    t0 = time.perf_counter()
    result = from_jsonable(to_jsonable(compute(params)))
    if ONLY_CACHED:
        result["partial"] = True
        return result
    elapsed = time.perf_counter() - t0
    result["compute_seconds"] = elapsed
    result["machine"] = f"{platform.node()} {platform.processor() or platform.machine()}"
    stored = cache.store(target, key, result)  # None (and a CacheWarning) if it cannot be written
    log(f"[{target}] computed in {elapsed:.1f} s, " +
        (f"cached at {path}" if stored else f"NOT cached ({path} could not be written)"))
    return result
