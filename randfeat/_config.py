"""``randfeat.show_config()``: how this randfeat was built and what it runs on."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

__all__ = ["show_config"]


def _cpu_name():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _versions():
    out = {"python": platform.python_version()}
    for mod in ("numpy", "scipy", "sklearn", "threadpoolctl", "Cython"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # not installed (Cython is only needed to build)
            out[mod] = None
    return out


def _config():
    import randfeat
    from randfeat._lib import _cpu
    from randfeat._validation import effective_n_cpus

    try:
        from threadpoolctl import threadpool_info

        pools = threadpool_info()
    except Exception as exc:  # pragma: no cover - threadpoolctl is a dependency of sklearn
        pools = [{"error": f"{type(exc).__name__}: {exc}"}]
    return {
        "randfeat": {"version": randfeat.__version__,
                     "path": os.path.dirname(os.path.abspath(randfeat.__file__))},
        "versions": _versions(),
        "machine": {"arch": platform.machine(), "cpu": _cpu_name(), "os": platform.platform(),
                    "usable_cpus": effective_n_cpus()},
        "simd": {"selected": _cpu.isa(), "available": _cpu.available_isas(),
                 "kernels": _cpu.kernel_isas(),
                 "fwht_schedule": _cpu.fwht_schedule(),
                 "env_cap": os.environ.get("RANDFEAT_ISA") or os.environ.get(
                     "RANDFEAT_FWHT_ISA") or None},
        "openmp": {"enabled": _cpu.openmp_enabled(),
                   "max_threads": _cpu.openmp_max_threads(),
                   "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")},
        "threadpools": [{k: p.get(k) for k in ("user_api", "internal_api", "version",
                                               "num_threads", "threading_layer",
                                               "architecture", "filepath", "error")
                         if p.get(k) is not None} for p in pools],
    }


def show_config(as_dict=False, file=None):
    """Print (or return) how randfeat was built and what it runs on.

    In the manner of :func:`numpy.show_config` and :func:`sklearn.show_versions`: randfeat's
    version and location; Python, NumPy, SciPy, scikit-learn, threadpoolctl and Cython versions;
    the CPU; the SIMD code path of every compiled kernel (FWHT, RFF sin/cos, Fastfood passes),
    the levels this CPU supports and the ``RANDFEAT_ISA`` cap; the FWHT's butterfly schedule
    (``"add"`` or ``"fma"``, see ``RANDFEAT_FWHT_SCHEDULE`` in :func:`randfeat.fwht`);
    whether the kernels were built with OpenMP and its default team size; and every BLAS/OpenMP
    thread pool loaded in the process with its thread count (from threadpoolctl).

    Parameters
    ----------
    as_dict : bool, default False
        Return the information as a nested dict instead of printing it.
    file : file-like, default sys.stdout
        Where to print.

    Returns
    -------
    dict or None

    Examples
    --------
    >>> import randfeat
    >>> cfg = randfeat.show_config(as_dict=True)
    >>> sorted(cfg["simd"]["kernels"])
    ['fastfood', 'fwht', 'rff_trig']
    >>> cfg["simd"]["selected"] in cfg["simd"]["available"]
    True
    """
    cfg = _config()
    if as_dict:
        return cfg
    out = file if file is not None else sys.stdout
    r, v, m, s, o = cfg["randfeat"], cfg["versions"], cfg["machine"], cfg["simd"], cfg["openmp"]
    lines = [
        f"randfeat {r['version']} ({r['path']})",
        "",
        "versions:",
        *(f"  {k:14s} {val if val is not None else '(not installed)'}" for k, val in v.items()),
        "",
        "machine:",
        f"  {'cpu':14s} {m['cpu']} ({m['arch']}), {m['usable_cpus']} usable CPUs",
        f"  {'os':14s} {m['os']}",
        "",
        "compiled kernels:",
        f"  {'simd':14s} {s['selected']} (available: {', '.join(s['available'])}; "
        f"RANDFEAT_ISA={s['env_cap'] or 'unset'})",
        *(f"    {k:12s} {val}" for k, val in s["kernels"].items()),
        f"  {'fwht schedule':14s} {s['fwht_schedule']} (SIMD paths; RANDFEAT_FWHT_SCHEDULE="
        f"{os.environ.get('RANDFEAT_FWHT_SCHEDULE') or 'unset'})",
        f"  {'openmp':14s} " + (f"enabled, {o['max_threads']} threads by default"
                                if o["enabled"] else "disabled (every kernel on one thread)")
        + (f" (OMP_NUM_THREADS={o['OMP_NUM_THREADS']})" if o["OMP_NUM_THREADS"] else ""),
        "",
        "thread pools (threadpoolctl):",
    ]
    for p in cfg["threadpools"]:
        if "error" in p:
            lines.append(f"  {p['error']}")
            continue
        desc = f"{p.get('internal_api', '?')} {p.get('version') or ''}".strip()
        extra = ", ".join(f"{k} {p[k]}" for k in ("threading_layer", "architecture") if k in p)
        lines.append(f"  {p.get('user_api', '?'):6s} {desc}: {p.get('num_threads')} threads"
                     + (f" ({extra})" if extra else ""))
        lines.append(f"         {p.get('filepath', '')}")
    print("\n".join(lines), file=out)
    return None
