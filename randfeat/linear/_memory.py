"""Memory machinery of the ridge fits: chunk sizing, lazily zeroed buffers, giving the C heap back
to the OS, and the one-step commit of in-place updates.

Nothing here knows about ridge regression; :mod:`randfeat.linear._statistics` and
:mod:`randfeat.linear._fit` use these to keep a fit's peak memory at the Gram matrix plus one
chunk (see ``CHANGELOG.md``, "The ridge learners' fit needs less memory").
"""

from __future__ import annotations

import contextlib
import mmap
import signal
import threading

import numpy as np

__all__ = ["auto_chunk_rows", "gram_buffer", "lazy_zeros", "trim_heap", "uninterrupted"]

#: columns per panel of a float32 chunk product (the workspace is D x GRAM_PANEL float32;
#: one panel, a single ssyrk, up to D = 1024; wider panels repack less: 5 % slower than one
#: ssyrk at D = 4000, 8 % with 512)
GRAM_PANEL = 1024
#: Grams of at least this many bytes get pages of their own (see gram_buffer)
GRAM_MMAP_BYTES = 1 << 22


def auto_chunk_rows(D):
    """``chunk_size="auto"``: rows per chunk for features of width ``D``.

    ``max(1024, 2**21 // D, D // 2)`` rows, at most 8192: a chunk of about 2**21 values
    (8 MiB in float32, 16 MiB in float64) for narrow features, where larger chunks amortise
    each chunk's fixed costs, and of ``D / 2`` rows (in float32 a quarter of the float64
    Gram's bytes) for wide ones, so that the chunk never dominates the fit's memory; each chunk
    still has at least 1024 rows (the ``syrk`` runs near its peak rate from about 1000 rows
    on).  E.g. D = 100: 8192 rows; 1000: 2097; 4000: 2000; 20000: 8192.

    >>> [auto_chunk_rows(D) for D in (100, 1000, 4000, 20000)]
    [8192, 2097, 2000, 8192]
    """
    D = max(1, int(D))
    return min(8192, max(1024, (1 << 21) // D, D // 2))


def lazy_zeros(shape, dtype):
    """Zeroed Fortran array whose pages become resident only where written (an anonymous
    ``mmap`` with ``MADV_NOHUGEPAGE``) from ``GRAM_MMAP_BYTES`` on; ``np.zeros`` below that or
    where no anonymous mapping can be made."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    if nbytes < GRAM_MMAP_BYTES:
        return np.zeros(shape, dtype=dtype, order="F")
    try:
        buf = mmap.mmap(-1, nbytes)
    except (OSError, ValueError):  # no anonymous mapping here: NumPy's allocation (and its
        return np.zeros(shape, dtype=dtype, order="F")  # MemoryError if memory is short)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        try:
            buf.madvise(mmap.MADV_NOHUGEPAGE)
        except OSError:  # pragma: no cover - a kernel without transparent huge pages
            pass
    return np.frombuffer(buf, dtype=dtype).reshape(shape, order="F")


def gram_buffer(D):
    """A zeroed (D, D) float64 Fortran array for a Gram kept as its lower triangle.

    Only the lower triangle is ever written while statistics accumulate (``syrk`` and the
    float32 panels touch nothing above the diagonal), so a large Gram is given memory of its own
    (an anonymous ``mmap``, zero pages that become resident only when first written) with huge
    pages turned off for it where the OS allows (``MADV_NOHUGEPAGE``): with 4 KiB pages the
    never-written upper triangle, about half the matrix, costs no memory (with NumPy's default
    huge pages every 2 MiB page holds some of the lower triangle, so all of it becomes
    resident).  Small Grams are plain ``np.zeros``."""
    return lazy_zeros((D, D), np.float64)


_MALLOC_TRIM = []


def trim_heap():
    """Give the C heap's free memory back to the OS (glibc's ``malloc_trim(0)``); True if done.

    A fit's chunk features (e.g. 2000 x 4000 float32, 32 MB) are freed after each chunk, but
    glibc serves blocks under 32 MiB from its heap once one such block has been freed (its
    dynamic ``mmap`` threshold) and keeps the freed heap pages: without this, about one chunk
    stays resident through the solve and after the fit (measured: 32 MB of cpu_act D = 4000's
    fit).  A no-op (False) where there is no ``malloc_trim`` (not glibc)."""
    if not _MALLOC_TRIM:
        fn = None
        try:
            import ctypes
            fn = getattr(ctypes.CDLL(None), "malloc_trim", None)
            if fn is not None:
                fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
        except (OSError, TypeError, AttributeError):  # pragma: no cover - no C library handle
            fn = None
        _MALLOC_TRIM.append(fn)
    fn = _MALLOC_TRIM[0]
    if fn is None:
        return False
    fn(0)
    return True


class _Deferred:
    """SIGINT handler that records the signal instead of raising (see :func:`uninterrupted`)."""

    def __init__(self):
        self.hit = False

    def __call__(self, signum, frame):
        self.hit = True


@contextlib.contextmanager
def uninterrupted(note):
    """Run the body -- an in-place update followed by the publication of the rest of the new
    state -- without a KeyboardInterrupt between its statements.

    Python delivers Ctrl-C between bytecodes, so an in-place update (a BLAS call into the Gram)
    followed by the assignment of the other fields could be cut in two.  In the main thread the
    SIGINT handler is swapped for one that only records the signal; the default handler is
    restored on exit, and a recorded Ctrl-C is raised then, after the new state is whole, as a
    KeyboardInterrupt carrying ``note`` (e.g. "the chunk was added").  Other threads never
    receive KeyboardInterrupt, so there the body simply runs.  The body must not allocate
    between its in-place write and the publication (a MemoryError cannot be deferred): prepare
    every new array before entering.
    """
    main = threading.current_thread() is threading.main_thread()
    old = signal.getsignal(signal.SIGINT) if main else None
    if not main or old is not signal.default_int_handler:
        # a custom handler (or none, or another thread): leave it alone
        yield
        return
    deferred = _Deferred()
    signal.signal(signal.SIGINT, deferred)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
    if deferred.hit:
        exc = KeyboardInterrupt()
        exc.add_note(note)
        raise exc
