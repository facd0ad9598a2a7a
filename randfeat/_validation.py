"""Input validation shared by every public module (one copy of each helper).

The public ``.py`` modules call these before handing arrays to the compiled kernels in
:mod:`randfeat._lib`, which assume C-contiguous, correctly typed, finite input.
"""

from __future__ import annotations

import numbers
import os

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

__all__ = [
    "LENGTH_SCALE_CONSTRAINT",
    "N_THREADS_CONSTRAINT",
    "RANDOM_STATE_CONSTRAINT",
    "SIGMA_CONSTRAINT",
    "as_float_array",
    "available_memory",
    "check_allocation",
    "check_finite",
    "check_n_threads",
    "check_random_state",
    "effective_n_cpus",
    "format_bytes",
    "is_power_of_two",
    "next_power_of_two",
]

_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def is_power_of_two(n) -> bool:
    """Return True when ``n`` is a positive integer power of two (1, 2, 4, ...).

    >>> [is_power_of_two(k) for k in (0, 1, 2, 3, 4, 1023, 1024)]
    [False, True, True, False, True, False, True]
    """
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (numbers.Integral, np.integer)):
        return False
    n = int(n)
    return n > 0 and (n & (n - 1)) == 0


def next_power_of_two(n) -> int:
    """Smallest power of two ``>= n`` (``n >= 0``; ``next_power_of_two(0) == 1``).

    >>> [next_power_of_two(k) for k in (0, 1, 2, 3, 5, 1024, 1025)]
    [1, 1, 2, 4, 8, 1024, 2048]
    """
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (numbers.Integral, np.integer)):
        raise TypeError(f"next_power_of_two expects a non-negative integer, got {n!r} "
                        f"of type {type(n).__name__}")
    n = int(n)
    if n < 0:
        raise ValueError(f"next_power_of_two expects a non-negative integer, got {n}")
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def check_random_state(seed) -> np.random.Generator:
    """Turn ``seed`` into a :class:`numpy.random.Generator`.

    Accepts None (fresh OS entropy), an int, a :class:`numpy.random.SeedSequence`, a
    :class:`numpy.random.BitGenerator`, a :class:`numpy.random.Generator` (returned unchanged) or a
    legacy :class:`numpy.random.RandomState` (a Generator is seeded from it, which advances it).
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or isinstance(seed, (np.random.SeedSequence, np.random.BitGenerator)):
        return np.random.default_rng(seed)
    if isinstance(seed, (numbers.Integral, np.integer)) and not isinstance(seed, (bool, np.bool_)):
        if int(seed) < 0:
            raise ValueError(f"random_state must be a non-negative integer, got {int(seed)}")
        return np.random.default_rng(int(seed))
    if isinstance(seed, np.random.RandomState):
        return np.random.default_rng(seed.randint(0, 2**63 - 1, dtype=np.int64))
    raise TypeError(
        "random_state must be None, an int, a numpy SeedSequence, BitGenerator, Generator or "
        f"RandomState; got {seed!r} of type {type(seed).__name__}")


def effective_n_cpus() -> int:
    """Number of CPUs this process may use (affinity mask and OMP_NUM_THREADS respected)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        n = os.cpu_count() or 1
    env = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if env.isdigit() and int(env) > 0:
        n = min(n, int(env))
    return max(1, n)


# scikit-learn parameter constraints shared by every estimator (one object each, validated in
# ``fit`` by ``sklearn.base._fit_context``; invalid values raise InvalidParameterError, which is a
# ValueError and a TypeError).

#: ``n_threads``: None, a positive count or a negative count back from all CPUs; 0 is an error
#: (see check_n_threads).
N_THREADS_CONSTRAINT = [None, Interval(numbers.Integral, 1, None, closed="left"),
                        Interval(numbers.Integral, None, -1, closed="right")]

#: ``random_state``: None, an int in [0, 2**32 - 1], a legacy RandomState, or a numpy Generator,
#: SeedSequence or BitGenerator (see check_random_state).
RANDOM_STATE_CONSTRAINT = ["random_state", np.random.Generator, np.random.SeedSequence,
                           np.random.BitGenerator]

#: ``sigma`` of the feature maps: None (the kernel instance's own, or 1.0 for a kernel given by
#: name), a positive finite length scale, an array of them, one per feature (ARD; checked at fit
#: by randfeat.kernels), or a data-driven rule, "scale" or "median"
#: (see randfeat._base.RandomFeaturesBase._resolve_kernel).
SIGMA_CONSTRAINT = [None, Interval(numbers.Real, 0.0, None, closed="neither"),
                    StrOptions({"scale", "median"}), "array-like"]

#: ``sigma`` without the data-driven rules: None, a positive length scale or one per feature.
LENGTH_SCALE_CONSTRAINT = [SIGMA_CONSTRAINT[0], SIGMA_CONSTRAINT[1], SIGMA_CONSTRAINT[3]]


def check_n_threads(n_threads) -> int:
    """Resolve ``n_threads`` to a positive thread count.

    None means every CPU available to the process (see :func:`effective_n_cpus`); a negative
    value counts back from that (``-1`` is all, ``-2`` all but one, floored at 1); 0 is an error.
    """
    if n_threads is None:
        return effective_n_cpus()
    if isinstance(n_threads, (bool, np.bool_)) or not isinstance(n_threads,
                                                                  (numbers.Integral, np.integer)):
        raise TypeError(f"n_threads must be None or an int, got {n_threads!r} "
                        f"of type {type(n_threads).__name__}")
    n_threads = int(n_threads)
    if n_threads == 0:
        raise ValueError("n_threads must be a positive number of threads, a negative count "
                         "back from all CPUs (-1 = all), or None; got 0")
    if n_threads < 0:
        return max(1, effective_n_cpus() + 1 + n_threads)
    return n_threads


def _describe_dtype(dtype) -> str:
    return np.dtype(dtype).name


def as_float_array(x, *, name: str = "x", func: str = "", copy: bool = False) -> np.ndarray:
    """Convert ``x`` to a float32/float64 ndarray without copying when possible.

    float32 and float64 are kept; integer, unsigned and bool input becomes float64; every other
    dtype (complex, float16, longdouble, object, strings, datetimes, ...) raises TypeError naming
    the dtype and how to fix it.  The input is never modified: with ``copy=True`` the result never
    shares memory with ``x``.
    """
    where = f"{func}: " if func else ""
    arr = np.asarray(x)
    dt = arr.dtype
    if dt in _FLOAT_DTYPES:
        out = arr
    elif dt.kind in "iub":
        out = arr.astype(np.float64)
        copy = False  # astype already copied
    else:
        raise TypeError(
            f"{where}unsupported dtype {_describe_dtype(dt)} for {name}; randfeat computes in "
            "float32 or float64 (integer and bool input is converted to float64). "
            + ("Take the real part or the magnitude first" if dt.kind == "c" else
               f"Cast it first, e.g. {name}.astype(np.float64)"))
    if copy:
        out = np.array(out, copy=True)
    return out


def check_finite(x: np.ndarray, *, name: str = "X", func: str = "") -> None:
    """Raise ValueError when ``x`` holds NaN or infinity, naming the parameter and a position."""
    if x.size and not np.isfinite(x).all():
        bad = np.argwhere(~np.isfinite(x))[0]
        where = f"{func}: " if func else ""
        pos = tuple(int(i) for i in bad)
        val = x[pos]
        raise ValueError(
            f"{where}{name} contains NaN or infinity (first at index "
            f"{pos if len(pos) > 1 else pos[0]}"
            f": {val!r}); remove or impute non-finite values before calling")


# ---------------------------------------------------------------------------------------------
# memory: refuse an allocation that cannot fit before making it

#: allocations below this size are not checked (reading /proc costs ~10-50 us per call)
ALLOCATION_CHECK_MIN_BYTES = 64 << 20


def format_bytes(nbytes) -> str:
    """``nbytes`` in the largest binary unit that keeps it >= 1 (``"16.0 GiB"``).

    >>> format_bytes(3 << 30), format_bytes(1536), format_bytes(12)
    ('3.0 GiB', '1.5 KiB', '12 B')
    """
    x = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if x < 1024 or unit == "PiB":
            return f"{int(x)} B" if unit == "B" else f"{x:.1f} {unit}"
        x /= 1024
    raise AssertionError  # pragma: no cover


def _read_int(path):
    try:
        with open(path) as fh:
            text = fh.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # "max" (no limit) -> None


def _cgroup_headroom():
    """(bytes, source) left under the tightest cgroup memory limit of this process, or None.

    cgroup v2: ``memory.max - memory.current`` of the process's cgroup and of each ancestor;
    cgroup v1: ``memory.limit_in_bytes - memory.usage_in_bytes`` of the memory controller."""
    best = None
    try:
        with open("/proc/self/cgroup") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":          # cgroup v2 unified hierarchy
            for base in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):  # unified, or hybrid
                rel = parts[2].strip("/")
                while True:
                    d = base + ("/" + rel if rel else "")
                    lim, cur = _read_int(d + "/memory.max"), _read_int(d + "/memory.current")
                    if lim is not None and cur is not None and (
                            best is None or lim - cur < best[0]):
                        best = (max(0, lim - cur), f"cgroup limit {d}/memory.max = "
                                                   f"{format_bytes(lim)}, {format_bytes(cur)} "
                                                   f"in use")
                    if not rel:
                        break
                    rel = rel.rpartition("/")[0]
        elif "memory" in parts[1].split(","):               # cgroup v1 memory controller
            for d in ("/sys/fs/cgroup/memory" + parts[2].rstrip("/"), "/sys/fs/cgroup/memory"):
                lim = _read_int(d + "/memory.limit_in_bytes")
                cur = _read_int(d + "/memory.usage_in_bytes")
                if lim is not None and cur is not None and lim < 1 << 60 and (
                        best is None or lim - cur < best[0]):
                    best = (max(0, lim - cur), f"cgroup limit {d}/memory.limit_in_bytes = "
                                               f"{format_bytes(lim)}, {format_bytes(cur)} in use")
                    break
    return best


def available_memory():
    """``(bytes, source)``: the memory this process can still allocate, or None when unknown.

    The smaller of the system's available memory (``MemAvailable`` of ``/proc/meminfo``; where
    there is no /proc, free physical pages from ``os.sysconf``) and the headroom under a cgroup
    memory limit (containers, systemd slices).  ``source`` says which bound it is, for messages.
    """
    cands = []
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    kib = int(line.split()[1])
                    cands.append((kib * 1024, f"MemAvailable in /proc/meminfo, of "
                                              f"{format_bytes(_physical_memory() or 0)} "
                                              f"physical memory"))
                    break
    except (OSError, ValueError, IndexError):
        pass
    if not cands:
        try:
            pages, size = os.sysconf("SC_AVPHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
            if pages > 0 and size > 0:
                cands.append((pages * size, "free physical pages (os.sysconf)"))
        except (ValueError, OSError, AttributeError):
            pass
    cg = _cgroup_headroom()
    if cg is not None:
        cands.append(cg)
    return min(cands, key=lambda c: c[0]) if cands else None


def _physical_memory():
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_allocation(nbytes, what, param, *, func="", fix=None) -> None:
    """Raise MemoryError *before* allocating ``nbytes`` when they cannot fit in memory.

    Parameters
    ----------
    nbytes : int
        Bytes the coming allocation(s) need at their peak.
    what : str
        What they hold, e.g. ``"frequencies_ (1073741824 x 2 float64)"``.
    param : str
        The parameter that sized them, with its value, e.g. ``"n_components=2147483648"``.
    func : str
        Who asks (``"RandomFourierFeatures.fit"``), for the message.
    fix : str, optional
        How to fix it; default ``"lower <parameter>"``.

    Requests below :data:`ALLOCATION_CHECK_MIN_BYTES` are not checked.  The bound is
    :func:`available_memory` (None: no check).  Without this check a request far beyond memory
    is granted by the kernel's overcommit and the process is killed by the OOM killer while it
    fills the array, instead of raising.

    >>> check_allocation(8 << 57, "a test array", "n=2**57", func="doc")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    MemoryError: doc: n=2**57 needs 1024.0 PiB for a test array, but only ...; lower n
    """
    nbytes = int(nbytes)
    if nbytes < ALLOCATION_CHECK_MIN_BYTES:
        return
    avail = available_memory()
    if avail is None or nbytes <= avail[0]:
        return
    where = f"{func}: " if func else ""
    fix = fix or f"lower {param.split('=', 1)[0]}"
    raise MemoryError(f"{where}{param} needs {format_bytes(nbytes)} for {what}, but only "
                      f"{format_bytes(avail[0])} of memory is available ({avail[1]}); {fix}")
