"""The fast Walsh–Hadamard transform (FWHT)."""

from __future__ import annotations

import math
import numbers

import numpy as np

from randfeat._lib import _fwht
from randfeat._validation import (
    as_float_array,
    check_n_threads,
    is_power_of_two,
    next_power_of_two,
)

__all__ = ["fwht"]

_MAX_LENGTH = 1 << 30  # the compiled kernel's largest length (src/fwht.c)


def _normalize_axis(axis, ndim: int) -> int:
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (numbers.Integral, np.integer)):
        raise TypeError(f"fwht: axis must be an int, got {axis!r} of type {type(axis).__name__}")
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(
            f"fwht: axis {axis} is out of bounds for an array of dimension {ndim}; "
            f"use an axis in [{-ndim}, {ndim - 1}]")
    return axis % ndim


def fwht(x, *, axis=-1, normalize=False, out=None, n_threads=None, check_finite=True):
    r"""Fast Walsh–Hadamard transform along one axis.

    Computes :math:`y = H_d\,v` for every 1-D slice ``v`` of ``x`` along ``axis``, where
    :math:`H_d` is the unnormalised :math:`d \times d` Hadamard matrix in natural (Sylvester)
    order,

    .. math::

        H_1 = [1], \qquad
        H_{2d} = \begin{pmatrix} H_d & H_d \\ H_d & -H_d \end{pmatrix},

    i.e. ``scipy.linalg.hadamard(d) @ v``, in :math:`O(d \log d)` operations.  With
    ``normalize=True`` the result is divided by :math:`\sqrt d`, which makes the transform
    orthonormal and its own inverse.  Unnormalised, :math:`H_d H_d = d\,I`.

    Parameters
    ----------
    x : array_like, shape (..., d, ...)
        Input. float32 stays float32 and float64 stays float64 (either byte order); integer
        and bool input is converted to float64; any other dtype (complex, float16, object,
        ...) raises TypeError.
        Strided, Fortran-ordered, read-only and memory-mapped arrays are accepted and never
        modified (unless passed as ``out``).
    axis : int, default -1
        Axis along which to transform; its length ``d`` must be a power of two (1 is allowed and
        is the identity).  Every other axis is a batch axis.
    normalize : bool, default False
        Divide by :math:`\sqrt d` (orthonormal transform).
    out : ndarray, optional
        Where to write the result: a writable array of ``x``'s shape and of the result dtype.
        ``out=x`` transforms ``x`` in place.  In-place work is fastest on an array whose data
        start on a 32-byte boundary (64 with AVX-512): NumPy's large arrays start 16 bytes past
        one, which costs 5-30 % (``benchmarks/README.md``); ``out=None`` allocates an aligned
        result.
    n_threads : int or None, default None
        Number of OpenMP threads over the batch (None: all available CPUs; -1 likewise; -2 all
        but one; at most 1024). The result is bit-identical for every value.  Batches too small
        to be worth it (under ~16k values per thread) use fewer threads, and a process created
        by ``fork()`` uses one thread (the OpenMP runtime cannot run threads there).
    check_finite : bool, default True
        Raise ValueError when the result holds NaN or infinity (from non-finite input, or from
        overflow).  The check is fused into the compiled pass that writes the result (one
        vector instruction per stored vector, on pipes the additions leave idle), so it costs
        no extra pass over the data.  When ``out`` is given, it holds the transform when the
        error is raised (with ``out=x``, ``x`` has been transformed).

    Returns
    -------
    y : ndarray
        The transform, of ``x``'s shape (``out`` when given).

    Raises
    ------
    ValueError
        If the length along ``axis`` is 0, is not a power of two (the message names the next
        power of two to zero-pad to) or is above 2**30, if the input is 0-dimensional, if
        ``n_threads`` is above 1024, or if the result is not finite.
    RuntimeError
        If the system cannot start ``n_threads`` threads.
    KeyboardInterrupt
        On Ctrl-C, within about a millisecond of work (the rows already done stay done).
    TypeError
        For an unsupported dtype, or an ``out`` of the wrong dtype.

    Notes
    -----
    The transform is the core of Fastfood (Le, Sarlós & Smola, "Fastfood — Approximating Kernel
    Expansions in Loglinear Time", ICML 2013), where :math:`H` is applied twice per block.
    Rows are spread over threads; the GIL is released during the computation.

    The compiled kernel picks its code path once, at the first call, from the CPU's features:
    AVX-512, AVX2+FMA or portable scalar C (:func:`randfeat.show_config` names it).  The
    environment variable ``RANDFEAT_ISA`` (``scalar``, ``avx2``, ``avx512`` or ``auto``; the
    older name ``RANDFEAT_FWHT_ISA`` also works), read at that first call, caps the choice.
    Every path performs the same exactly rounded butterflies in the same order, so the results
    are bit-identical across code paths, thread counts and machines.  The SIMD paths have two
    butterfly schedules, with the same bits: ``"add"`` (vector additions and subtractions) and
    ``"fma"`` (the subtractions issued as FMAs by -1, exact, on the FMA pipes that the additions
    leave idle on cores where they are separate).  The environment variable
    ``RANDFEAT_FWHT_SCHEDULE`` (``add``, ``fma`` or ``auto``), read at the first call, selects
    it; ``auto`` is ``"fma"`` on AMD Zen 4, where it measured 1-11 % faster, and ``"add"``
    elsewhere (not measured on other CPUs).  :func:`randfeat.show_config` reports it.

    With ``out=None`` (or an ``out`` that shares no memory with ``x``) and C-contiguous rows
    along the last axis, the kernel's first pass reads ``x`` and writes the result: no separate
    copy of ``x`` is made.

    Examples
    --------
    >>> import numpy as np
    >>> from randfeat import fwht
    >>> fwht(np.array([1.0, 0.0, 1.0, 0.0]))
    array([2., 2., 0., 0.])
    >>> x = np.arange(8, dtype=np.float32)
    >>> fwht(x).dtype
    dtype('float32')
    >>> np.allclose(fwht(fwht(x, normalize=True), normalize=True), x, atol=1e-5)
    True
    """
    if isinstance(x, np.ndarray) and not x.dtype.isnative:
        # big-endian (non-native) float32/float64 or integers: the kernels read native values
        x = x.astype(x.dtype.newbyteorder("="))
    xa = as_float_array(x, name="x", func="fwht")
    if xa.ndim == 0:
        raise ValueError("fwht: x must have at least one dimension, got a 0-d array; "
                         "wrap a scalar as np.atleast_1d(x)")
    ax = _normalize_axis(axis, xa.ndim)
    d = xa.shape[ax]
    if d == 0:
        raise ValueError(
            f"fwht: x has length 0 along axis {axis} (shape {xa.shape}): an empty vector cannot "
            "be transformed (the length must be a power of two, at least 1); transform along "
            "an axis that holds values, or skip the call for empty data")
    if not is_power_of_two(d):
        raise ValueError(
            f"fwht: the length of x along axis {axis} must be a power of two, got {d}; "
            f"zero-pad it to {next_power_of_two(d)} (e.g. with np.pad)")
    if not isinstance(normalize, (bool, np.bool_)):
        raise TypeError(f"fwht: normalize must be a bool, got {normalize!r}")
    if d > _MAX_LENGTH:
        raise ValueError(
            f"fwht: the length of x along axis {axis} is {d} = 2**{d.bit_length() - 1}, above "
            f"the largest supported length 2**30; split the transform (H_2d = [[H_d, H_d], "
            "[H_d, -H_d]]) or transform shorter vectors")
    n_thr = check_n_threads(n_threads)
    log_n = d.bit_length() - 1
    scale = 1.0 / math.sqrt(d) if normalize else 1.0
    dtype = xa.dtype

    if out is not None:
        _check_out(out, xa, dtype, converted=xa is not x and np.asarray(x).dtype != dtype)
    if xa.size == 0:
        return out if out is not None else np.empty(xa.shape, dtype=dtype)

    last = ax == xa.ndim - 1  # fast path: no axis moves
    xm = xa if last else np.moveaxis(xa, ax, -1)
    # rows the kernel can read directly: its first pass reads them and writes the result (one
    # pass over memory fewer than a copy followed by an in-place transform)
    direct = xm.flags.c_contiguous and xm.flags.aligned
    if out is None:
        if last and direct:
            buf = _aligned_empty(xm.shape, dtype)
            _run(buf, log_n, n_thr, scale, check_finite, src=xm)
            return buf
        buf = _aligned_copy(xm, dtype)
        _run(buf, log_n, n_thr, scale, check_finite)
        return buf if last else np.ascontiguousarray(np.moveaxis(buf, -1, ax))

    om = out if last else np.moveaxis(out, ax, -1)
    if om.flags.c_contiguous:
        if out is x:
            _run(om, log_n, n_thr, scale, check_finite)
        elif direct and not np.may_share_memory(om, xm):
            _run(om, log_n, n_thr, scale, check_finite, src=xm)
        else:  # overlapping (np.copyto handles it) or strided input
            np.copyto(om, xm)
            _run(om, log_n, n_thr, scale, check_finite)
    else:
        buf = _aligned_copy(xm, dtype)
        try:
            _run(buf, log_n, n_thr, scale, check_finite)
        finally:
            np.copyto(om, buf)
    return out


def _aligned_empty(shape, dtype, align=64):
    """Uninitialised C-contiguous array whose data start on a ``align``-byte boundary.

    The SIMD kernels store whole vectors; a row that starts mid-line costs 5-30 % more.  Small
    arrays (where reading the address would cost more than it saves) are allocated plainly.
    """
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < 1 << 16:
        return np.empty(shape, dtype=dtype)
    raw = np.empty(nbytes + align, dtype=np.uint8)
    off = (-raw.ctypes.data) % align
    return raw[off:off + nbytes].view(dtype).reshape(shape)


def _aligned_copy(a, dtype, align=64):
    """C-contiguous copy of ``a`` whose data start on a ``align``-byte boundary."""
    buf = _aligned_empty(a.shape, dtype, align)
    np.copyto(buf, a)
    return buf


def _check_out(out, xa, dtype, converted=False):
    if not isinstance(out, np.ndarray):
        raise TypeError(f"fwht: out must be a numpy.ndarray, got {type(out).__name__}")
    if out.shape != xa.shape:
        raise ValueError(f"fwht: out has shape {out.shape} but x has shape {xa.shape}; "
                         "pass an array of x's shape")
    if out.dtype != dtype:
        raise TypeError(f"fwht: out has dtype {out.dtype.name} but the result is {dtype.name}; "
                        f"pass an out of dtype {dtype.name}" +
                        (" (integer and bool input is transformed in float64, so it cannot be "
                         "transformed in place)" if converted else ""))
    if not out.flags.writeable:
        raise ValueError("fwht: out is read-only; pass a writable array "
                         "(e.g. np.empty_like(x)) or out=None")


def _run(a, log_n, n_thr, scale, check_finite, src=None):
    """Transform the rows of ``a`` in place, or write the transform of ``src``'s rows to ``a``
    (``src`` C-contiguous, of ``a``'s shape, sharing no memory with it)."""
    rows = a.reshape(-1, a.shape[-1])  # a is C-contiguous: a view
    src_rows = None if src is None else src.reshape(rows.shape)
    n_bad = _fwht.fwht_rows(rows, log_n, n_thr, scale, bool(check_finite), src_rows)
    if n_bad:
        raise ValueError(
            f"fwht: the result holds NaN or infinity in {n_bad} of {rows.shape[0]} transformed "
            "vectors: the input contains NaN/inf or the sums overflowed "
            f"{rows.dtype.name}; clean the input (or use float64), or pass check_finite=False "
            "to let non-finite values propagate")
