"""randfeat — random features for kernel approximation, and checks of their theory.

Feature maps
------------
RandomFourierFeatures  random Fourier features (Rahimi & Recht 2007, Algorithm 1)
RandomBinningFeatures  random binning features (Rahimi & Recht 2007, Algorithm 2), sparse CSR
Fastfood               Fastfood features in O(n log d) (Le, Sarlós & Smola 2013)
StructuredOrthogonalFeatures  SORF, (sqrt(d)/sigma) H D1 H D2 H D3 in O(n log d) (Yu et al. 2016)
fwht                   fast Walsh–Hadamard transform (the core of Fastfood)

Kernels
-------
kernels                one hierarchy of exact shift-invariant kernels (spectral samplers for RFF
                       and Fastfood, pitch laws for binning) and one registry of names
                       (kernels.get_kernel, kernels.kernel_names)

Learners and data
-----------------
RandomFeatureRidge            ridge regression on random features (streaming normal equations/LSQR)
RandomFeatureRidgeClassifier  least-squares (±1, one-vs-rest) classification on random features
RidgeStatistics               mergeable ridge sufficient statistics (out-of-core / distributed fits)
ExactKernelRidge              exact kernel ridge (Cholesky), the infinite-D limit of RF ridge
datasets                      local loaders of the papers' benchmark datasets (randfeat.datasets)
"""

from randfeat import kernels
from randfeat._config import show_config
from randfeat._validation import is_power_of_two, next_power_of_two
from randfeat.arccos import ArcCosineFeatures
from randfeat.binning import RandomBinningFeatures
from randfeat.fastfood import Fastfood
from randfeat.fourier import RandomFourierFeatures
from randfeat.hadamard import fwht
from randfeat.kernel_ridge import ExactKernelRidge
from randfeat.linear import RandomFeatureRidge, RandomFeatureRidgeClassifier, RidgeStatistics
from randfeat.positive import PositiveRandomFeatures
from randfeat.sorf import StructuredOrthogonalFeatures

__version__ = "0.1.0"

__all__ = [
    "ArcCosineFeatures",
    "ExactKernelRidge",
    "Fastfood",
    "PositiveRandomFeatures",
    "RandomBinningFeatures",
    "RandomFeatureRidge",
    "RandomFeatureRidgeClassifier",
    "RandomFourierFeatures",
    "RidgeStatistics",
    "StructuredOrthogonalFeatures",
    "__version__",
    "fwht",
    "is_power_of_two",
    "kernels",
    "next_power_of_two",
    "show_config",
]
