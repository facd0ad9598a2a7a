"""paper_figures: seeds and the feature maps of every method (randfeat, Nystroem)."""

from __future__ import annotations

import os
import warnings

from analysis.repro import seed_int

__all__ = ["derive_seed", "METHOD_LABELS", "BALLSUM_T", "make_features"]


def derive_seed(base: int, *names) -> int:
    """Seed derived from a base seed and component names: the shared derivation of
    :func:`analysis.repro.seed_sequence` (names hashed into the spawn key), drawn as one 32-bit
    integer because the paper targets nest derivations and hand seeds to scikit-learn too."""
    return seed_int(base, *names)

def _feature_classes():
    """randfeat's feature maps.  PAPER_FIGURES_STANDIN=<module> substitutes them (development)."""
    mod = os.environ.get("PAPER_FIGURES_STANDIN")
    if mod:  # pragma: no cover - development only
        import importlib
        m = importlib.import_module(mod)
        warnings.warn(f"paper_figures: using DEVELOPMENT stand-in feature maps from {mod}",
                      stacklevel=2)
        return m.RandomFourierFeatures, m.Fastfood, m.RandomBinningFeatures
    import randfeat
    missing = [c for c in ("RandomFourierFeatures", "Fastfood", "RandomBinningFeatures")
               if not hasattr(randfeat, c)]
    if missing:
        raise ImportError(f"paper_figures needs randfeat.{', randfeat.'.join(missing)}; merge the "
                          "rff / fastfood / binning branches and build the extensions "
                          "(python setup.py build_ext --inplace)")
    return randfeat.RandomFourierFeatures, randfeat.Fastfood, randfeat.RandomBinningFeatures


METHOD_LABELS = {
    "exact": "Exact RBF", "nystrom": "Nyström RBF", "rks": "RKS RBF", "ff_fft": "Fastfood FFT",
    "ff_rbf": "Fastfood RBF", "ff_ballsum": "Fastfood ball-sum ('Matérn')",
    "fourier": "Fourier+LS", "binning": "Binning+LS",
}
BALLSUM_T = 2


def make_features(method, n, sigma, seed, n_rows=None):
    """Unfitted feature map.  ``n`` = number of OUTPUT columns (paired cos/sin: n/2 frequencies);
    for ``binning`` ``n`` is the number of grids P.  Nyström uses min(n, n_rows) landmarks."""
    RFF, FF, RB = _feature_classes()
    if method in ("rks", "fourier"):
        return RFF(n, kernel="gaussian", sigma=sigma, features="paired", random_state=seed)
    if method == "ff_rbf":
        return FF(n, kernel="gaussian", sigma=sigma, features="paired", random_state=seed)
    if method == "ff_fft":
        from paper_figures._fastfood_fft import FastfoodFFT  # a benchmark map of its own
        return FastfoodFFT(n, sigma=sigma, features="paired", random_state=seed)
    if method == "ff_ballsum":
        return FF(n, kernel="ballsum", sigma=sigma, kernel_params={"t": BALLSUM_T},
                  features="paired", random_state=seed)
    if method == "binning":
        return RB(n, kernel="laplacian", sigma=sigma, random_state=seed)
    if method == "nystrom":
        from sklearn.kernel_approximation import Nystroem
        return Nystroem(kernel="rbf", gamma=1.0 / (2.0 * sigma ** 2),
                        n_components=n if n_rows is None else min(n, n_rows),
                        random_state=seed % (2 ** 31))
    raise ValueError(f"unknown method {method!r}")
