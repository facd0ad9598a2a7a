"""randfeat — random features for kernel approximation, and checks of their theory.

Feature maps
------------
fwht                   fast Walsh–Hadamard transform (the core of Fastfood)
RandomFourierFeatures  random Fourier features (Rahimi & Recht 2007, Algorithm 1)
RandomBinningFeatures  random binning features (Rahimi & Recht 2007, Algorithm 2), sparse CSR
Fastfood               Fastfood (Le, Sarlós & Smola 2013)

Kernels
-------
kernels                exact shift-invariant kernels and their spectral samplers
"""

from randfeat import kernels
from randfeat._validation import is_power_of_two, next_power_of_two
from randfeat.binning import RandomBinningFeatures
from randfeat.fastfood import Fastfood
from randfeat.fourier import RandomFourierFeatures
from randfeat.hadamard import fwht

__version__ = "0.1.0"

__all__ = [
    "Fastfood",
    "RandomBinningFeatures",
    "RandomFourierFeatures",
    "__version__",
    "fwht",
    "is_power_of_two",
    "kernels",
    "next_power_of_two",
]
