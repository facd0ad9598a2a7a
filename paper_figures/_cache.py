"""JSON result cache keyed by (target, parameters, seeds, randfeat version, code version).

A result is computed once per key and stored as ``<out>/_cache/<target>/<hash>.json`` together
with its key, so figures are re-rendered from the cache without recomputation and any change of
parameters, seed, ``randfeat.__version__`` or the target's ``CODE_VERSION`` triggers a recompute.
"""

from __future__ import annotations

import hashlib
import json
import platform
import time
from pathlib import Path

import randfeat


def _jsonable(obj):
    import numpy as np
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    return obj


def cache_key(target: str, params: dict, code_version: int) -> dict:
    """Everything the result depends on; not where the cache lives (``cache_dir``), so that a
    results folder can be moved or copied and still be found."""
    params = {k: v for k, v in params.items() if k != "cache_dir"}
    return _jsonable({"target": target, "params": params, "code_version": code_version,
                      "randfeat_version": randfeat.__version__})


#: set by ``--render-only``: cache misses return None instead of computing (nested caches).
ONLY_CACHED = False
#: set by ``--refresh``: every cache, including the nested per-row / per-dataset ones, is
#: recomputed (the ``refresh`` argument alone reaches only the top-level call).
REFRESH = False


def cached(out_dir, target, params, compute, *, code_version=1, refresh=False, log=print):
    """Return ``compute(params)`` from the cache or compute and store it.

    With :data:`ONLY_CACHED` set, a miss returns None for nested (per-row) caches; the top-level
    call (``log`` not None) then assembles what is cached without storing the partial result.
    """
    key = cache_key(target, params, code_version)
    h = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    path = Path(out_dir) / "_cache" / target / f"{h}.json"
    if path.is_file() and not (refresh or REFRESH):
        log(f"[{target}] using cached result {path}")
        return json.loads(path.read_text())["result"]
    if ONLY_CACHED and target.endswith(("_row", "_dataset", "_row_quick", "_dataset_quick")):
        return None
    t0 = time.perf_counter()
    result = _jsonable(compute(params))
    if ONLY_CACHED:
        result["partial"] = True
        return result
    elapsed = time.perf_counter() - t0
    result["compute_seconds"] = elapsed
    result["machine"] = f"{platform.node()} {platform.processor() or platform.machine()}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"key": key, "result": result}, indent=1))
    log(f"[{target}] computed in {elapsed:.1f} s, cached at {path}")
    return result
