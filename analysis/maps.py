"""Thin layer between the checks and randfeat's public estimators.

A *map spec* is a plain dict, e.g. ``{"family": "rff", "kernel": "gaussian", "features": "paired",
"sigma": 1.3}``, ``{"family": "fastfood", "kernel": "ballsum", "t": 2, "sigma": 1.0}`` or
``{"family": "binning", "kernel": "laplacian", "sigma": 1.0}``.  ``size`` is the number of
independent-ish terms averaged by the estimate: frequencies (RFF paired), features (RFF phase),
Fastfood rows, binning grids.  Every estimate below is computed from the estimator's own
``transform`` output; fitted attributes are read only where a check needs them for speed (gradients
in the sup search), and then cross-checked against ``transform``.
"""

from __future__ import annotations

import contextlib
from unittest import mock

import numpy as np

from analysis import truth

__all__ = ["label", "build", "sigma_scaled", "n_components", "transform_pair", "estimates",
           "row_terms", "true_k", "padded_dim", "rff_frequencies", "library_kernel"]


def label(spec) -> str:
    parts = [spec["family"], spec["kernel"]]
    for key in ("nu", "t", "a", "q"):
        if key in spec:
            parts.append(f"{key}={spec[key]}")
    if spec["family"] != "binning":
        parts.append(spec.get("features", "paired"))
    if spec.get("radial") == "none":
        parts.append("noS")
    return " ".join(str(p) for p in parts)


def n_components(spec, size):
    """Output width for ``size`` terms (paired maps output 2 columns per term)."""
    if spec["family"] == "binning":
        return int(size)
    return 2 * int(size) if spec.get("features", "paired") == "paired" else int(size)


def library_kernel(spec):
    """randfeat.kernels object for a spec (used as the estimator's ``kernel`` when it has extra
    parameters, and for the cross-check of the library's own k against analysis.truth)."""
    from randfeat.kernels import get_kernel

    params = {k: spec[k] for k in ("nu", "t", "a", "q") if k in spec}
    if spec["kernel"] == "ballsum" and "dim" in spec:
        params["dim"] = spec["dim"]
    return get_kernel(spec["kernel"], spec.get("sigma", 1.0), **params)


def build(spec, size, random_state, n_threads=1):
    """Unfitted randfeat estimator for a spec."""
    import randfeat

    fam = spec["family"]
    sigma = spec.get("sigma", 1.0)
    if fam == "rff":
        kern, sig = spec["kernel"], sigma
        if "nu" in spec:  # a kernel instance carries its own sigma (the estimator's stays None)
            kern, sig = library_kernel(spec), None
        return randfeat.RandomFourierFeatures(
            n_components(spec, size), kernel=kern, sigma=sig,
            features=spec.get("features", "paired"), random_state=random_state,
            n_threads=n_threads)
    if fam == "fastfood":
        kw = {}
        if "t" in spec:
            kw["kernel_params"] = {"t": spec["t"]}
        if spec.get("radial") == "none":  # LSS's V' (no S): an estimator option
            kw["scaling"] = "none"
        return randfeat.Fastfood(
            n_components(spec, size), kernel=spec["kernel"], sigma=sigma,
            features=spec.get("features", "paired"), random_state=random_state,
            n_threads=n_threads, **kw)
    if fam == "binning":
        kparams = {k: spec[k] for k in ("a", "q") if k in spec} or None
        # analysis.truth's names ("rational", "stretched") are aliases in randfeat's one registry
        return randfeat.RandomBinningFeatures(int(size), kernel=spec["kernel"],
                                              kernel_params=kparams, sigma=sigma,
                                              hash_size=spec.get("hash_size"),
                                              random_state=random_state,
                                              n_threads=n_threads)
    raise ValueError(f"unknown family {fam!r}")


def fit(spec, est, X):
    """Fit ``est`` on X.  (``spec["radial"] == "none"`` builds Fastfood with ``scaling="none"``,
    the paper's V' = H G Pi H B / (sigma sqrt d), rows of length ||G||_F / sigma; LSS Lemma 3,
    Thm 4 and 6 are stated for V'.)"""
    return est.fit(X)


def transform_pair(spec, est, X, Y):
    """Fit on [X; Y] (binning needs the cells occupied) and return (Z_X, Z_Y) as dense arrays."""
    XY = np.vstack([X, Y])
    Z = fit(spec, est, XY).transform(XY)
    if hasattr(Z, "toarray"):
        Z = Z.toarray()
    Z = np.asarray(Z, dtype=float)
    return Z[: len(X)], Z[len(X):]


def estimates(spec, size, random_state, X, Y):
    """k-hat(X_i, Y_i) = z(X_i)'z(Y_i) from one freshly fitted map.

    X may have one row (broadcast)."""
    est = build(spec, size, random_state)
    zx, zy = transform_pair(spec, est, X, Y)
    return np.sum(zx * zy, axis=1) if len(zx) == len(zy) else zy @ zx[0]


def row_terms(zx, zy, features="paired"):
    """Per-row terms whose mean is the estimate: paired -> cos(w_j'(x - y)) (from the [cos | sin]
    column blocks), phase -> 2cos(w_j'x + b_j)cos(w_j'y + b_j).  Shapes (m, n_out) -> (m, n)."""
    if features == "paired":
        n = zx.shape[1] // 2
        return n * (zx[:, :n] * zy[:, :n] + zx[:, n:] * zy[:, n:])
    n = zx.shape[1]
    return n * zx * zy


def padded_dim(d):
    return 1 << max(0, int(np.ceil(np.log2(d))))


def true_k(spec, delta):
    """Exact kernel from analysis.truth for a spec; delta of shape (..., d)."""
    delta = np.asarray(delta, float)
    params = {k: spec[k] for k in ("nu", "t", "a", "q") if k in spec}
    if spec["kernel"] == "ballsum":
        params["dim"] = spec.get("dim", padded_dim(delta.shape[-1]))
    return truth.kernel(spec["kernel"], delta, spec.get("sigma", 1.0), **params)


def rff_frequencies(est):
    """Frequencies W (shape (n_frequencies, d)) of a fitted paired RandomFourierFeatures: its
    ``frequencies_`` (rows are frequencies, ``X @ W.T`` the projections), verified against its
    transform (raises if they do not reproduce it)."""
    W = np.asarray(est.frequencies_, dtype=float)
    d = est.n_features_in_
    x = np.linspace(-0.7, 0.9, d)[None, :]
    z = np.asarray(est.transform(x), dtype=float)[0]
    n = z.size // 2
    if W.shape != (n, d) or not np.allclose(np.cos(W @ x[0]) / np.sqrt(n), z[:n], atol=1e-6):
        raise AssertionError(f"frequencies_ of shape {W.shape} do not reproduce transform()")
    return W


@contextlib.contextmanager
def sigma_scaled(label_, factor):
    """Within the block, :func:`build` makes the map whose :func:`label` is ``label_`` with its
    sigma multiplied by ``factor`` (every other map unchanged): the bandwidth-error audit seam
    of the checks that build their maps here."""
    real = build

    def scaled(spec, size, random_state, n_threads=1):
        if label(spec) == label_:
            spec = dict(spec, sigma=spec.get("sigma", 1.0) * factor)
        return real(spec, size, random_state, n_threads)

    with mock.patch(f"{__name__}.build", scaled):
        yield
