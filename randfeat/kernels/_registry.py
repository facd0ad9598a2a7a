"""The one registry of kernel names, and :func:`get_kernel`, the one way to resolve a kernel."""

from __future__ import annotations

from sklearn.utils._param_validation import InvalidParameterError

from randfeat.kernels._base import ShiftInvariantKernel, _check_sigma
from randfeat.kernels._convex import (
    CustomBinningKernel,
    InversePowerBinningKernel,
    StretchedExponentialBinningKernel,
)
from randfeat.kernels._spectral import (
    BallSumKernel,
    CauchyKernel,
    GaussianKernel,
    LaplacianKernel,
    MaternKernel,
)

__all__ = ["KERNEL_NAMES", "get_kernel", "kernel_names", "median_metric"]

_CLASSES = (GaussianKernel, LaplacianKernel, CauchyKernel, MaternKernel, BallSumKernel,
            InversePowerBinningKernel, StretchedExponentialBinningKernel)

#: canonical name -> class
_KERNELS = {cls.name: cls for cls in _CLASSES}
#: every accepted spelling (canonical names and aliases, lower case) -> canonical name
_LOOKUP = {**{a: cls.name for cls in _CLASSES for a in cls.aliases},
           **{cls.name: cls.name for cls in _CLASSES}}

#: Canonical names of every registered kernel (aliases such as "rbf" are accepted as well).
KERNEL_NAMES = tuple(_KERNELS)

# what each feature map needs of a kernel: (class flag, who uses it, why)
_CAPABILITIES = {
    "fourier": ("spectral", "random Fourier features draw frequencies from the kernel's spectral "
                "density"),
    "fastfood": ("isotropic", "Fastfood's rows have uniformly random directions and only their "
                 "lengths can be chosen, so it needs a spherically symmetric spectrum"),
    "binning": ("binnable", "the pitch density p(delta) = delta * k''(delta) of Rahimi & "
                "Recht's Lemma 1 must be a probability density, so random binning needs a "
                "separable kernel whose 1-D profile k is convex (k'' >= 0)"),
}

_LABELS = {"fourier": "random Fourier features", "fastfood": "Fastfood",
           "binning": "random binning"}


def kernel_names(capability=None):
    """Canonical names of the registered kernels a feature map can use.

    Parameters
    ----------
    capability : {None, "fourier", "fastfood", "binning"}
        None: every name.  Otherwise the kernels random Fourier features (``spectral``),
        Fastfood (``isotropic``) or random binning (``binnable``) can approximate.

    Examples
    --------
    >>> from randfeat.kernels import kernel_names
    >>> kernel_names("binning")
    ('laplacian', 'inverse_power', 'stretched_exponential')
    """
    if capability is None:
        return KERNEL_NAMES
    flag = _CAPABILITIES[capability][0]
    return tuple(name for name, cls in _KERNELS.items() if getattr(cls, flag))


def _canonical(name):
    return name.strip().lower().replace("-", "_").replace(" ", "_")


def get_kernel(kernel, sigma=None, *, require=None, who=None, **params):
    """Resolve a kernel name or instance to a :class:`ShiftInvariantKernel`.

    The one rule for a kernel and a length scale, used by every estimator: a **name** is built
    with ``sigma`` (1.0 when None); an **instance** carries its own ``sigma`` and is returned
    unchanged, so passing ``sigma`` (not None) with an instance is an error rather than being
    ignored or multiplied in.

    Parameters
    ----------
    kernel : str, ShiftInvariantKernel or callable
        A registered name (:data:`KERNEL_NAMES`: ``"gaussian"`` (alias ``"rbf"``),
        ``"laplacian"``, ``"cauchy"``, ``"matern"`` (``nu=``, default 1.5), ``"ballsum"``
        (``t=``, default 1; ``dim=``), ``"inverse_power"`` (alias ``"rational"``; ``a=``,
        default 1), ``"stretched_exponential"`` (alias ``"stretched"``; ``q=``, default 0.5));
        case, ``-`` and ``_`` do not matter), an instance, or a callable ``sample_pitch(size,
        rng)`` of unit-scale pitches (wrapped in :class:`CustomBinningKernel`, random binning
        only).
    sigma : float, array of shape (d,) or None, default None
        Length scale for a kernel given by name or callable (None: 1.0), or one length scale
        per coordinate (ARD: k(Δ) = k₁(Δ/σ) coordinate-wise; every
        registered kernel admits it).  Must be None with an instance.
    require : {None, "fourier", "fastfood", "binning"}, default None
        The feature map the kernel is for; a kernel that it cannot approximate raises a
        ValueError saying why and listing the names it can use.
    who : str, optional
        Name of the caller, prefixed to error messages.
    **params
        Kernel-specific parameters of a name (``nu`` for Matérn, ``t`` and ``dim`` for ball-sum,
        ``a`` for inverse power, ``q`` for stretched exponential).

    Returns
    -------
    ShiftInvariantKernel

    Raises
    ------
    sklearn.utils._param_validation.InvalidParameterError
        (a ValueError and a TypeError) Unknown name (the message lists the valid names), a
        kernel of the wrong type, or parameters that the kernel does not take.
    ValueError
        ``sigma`` given with an instance, invalid parameter values, or a kernel that the
        ``require``-d feature map cannot approximate.

    Examples
    --------
    >>> from randfeat.kernels import get_kernel
    >>> get_kernel("matern", sigma=0.5, nu=2.5)
    MaternKernel(sigma=0.5, nu=2.5)
    >>> get_kernel("rbf")
    GaussianKernel(sigma=1.0)
    """
    where = f"{who}: " if who else ""
    if isinstance(kernel, ShiftInvariantKernel):
        if params:
            raise InvalidParameterError(
                f"{where}parameters {sorted(params)} cannot be applied to the kernel instance "
                f"{kernel!r}; pass them to its constructor")
        if sigma is not None:
            raise ValueError(
                f"{where}sigma={sigma!r} was given together with the kernel instance {kernel!r}, "
                "which has its own sigma; set the length scale on the instance (e.g. "
                f"{type(kernel).__name__}(sigma=...)) and leave sigma=None, or pass the "
                f"kernel by name ({kernel.name!r})")
        kern = kernel
    elif isinstance(kernel, str):
        if sigma is not None:  # checked here, so that errors name the estimator
            sigma = _check_sigma(sigma, who or "get_kernel")
        key = _LOOKUP.get(_canonical(kernel))
        if key is None:
            names = kernel_names(require)
            raise InvalidParameterError(
                f"{where}unknown kernel {kernel!r}; valid names are {list(names)}"
                + (f" (for {require}; all kernels: {list(KERNEL_NAMES)})"
                   if require and names != KERNEL_NAMES else "")
                + " (or pass a ShiftInvariantKernel instance)")
        cls = _KERNELS[key]
        try:
            kern = cls(sigma=1.0 if sigma is None else sigma, **params)
        except TypeError as exc:
            if "unexpected keyword" in str(exc):
                accepted = [p for p in cls(sigma=1.0)._params() if p != "sigma"]
                raise InvalidParameterError(
                    f"{where}kernel {key!r} does not take parameters "
                    f"{sorted(set(params) - set(accepted))} (accepted: {accepted})") from None
            raise
    elif callable(kernel) and require in (None, "binning"):
        if sigma is not None:
            sigma = _check_sigma(sigma, who or "get_kernel")
        kern = CustomBinningKernel(kernel, sigma=1.0 if sigma is None else sigma)
    else:
        raise InvalidParameterError(
            f"{where}kernel must be a name in {list(kernel_names(require))} or a "
            "ShiftInvariantKernel instance"
            + (" (or a callable sample_pitch(size, rng))" if require in (None, "binning") else "")
            + f", got {kernel!r} of type {type(kernel).__name__}")
    if require is not None:
        flag, why = _CAPABILITIES[require]
        if not getattr(kern, flag):
            reason = f" ({kern._binning_refusal})" if require == "binning" else ""
            raise ValueError(
                f"{where}kernel={kernel!r} cannot be approximated by {_LABELS[require]}: {why}"
                f"{reason}.  Kernels it can use: {list(kernel_names(require))}"
                + {"fourier": "; use randfeat.RandomBinningFeatures for this kernel",
                   "fastfood": "; use randfeat.RandomFourierFeatures for this kernel",
                   "binning": "; use randfeat.RandomFourierFeatures for this kernel"}[require])
    return kern



def median_metric(kernel):
    """The distance of the median heuristic (``sigma="median"``) for ``kernel`` (a name, an
    instance or a pitch sampler): ``"cityblock"`` (L1) for the separable kernels of random
    binning (Laplacian, inverse power, stretched exponential, custom pitch laws), whose exponent
    is an L1 distance, ``"euclidean"`` for the others.  An unknown name gives ``"euclidean"``
    (:func:`get_kernel` then raises)."""
    if isinstance(kernel, ShiftInvariantKernel):
        return kernel.median_metric
    if isinstance(kernel, str):
        key = _LOOKUP.get(_canonical(kernel))
        return _KERNELS[key].median_metric if key is not None else "euclidean"
    if callable(kernel):
        return CustomBinningKernel.median_metric
    return "euclidean"
