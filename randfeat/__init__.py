"""randfeat — random features for kernel approximation, and checks of their theory.

Feature maps
------------
fwht                   fast Walsh–Hadamard transform (the core of Fastfood)
RandomBinningFeatures  random binning features (Rahimi & Recht 2007, Algorithm 2), sparse CSR
"""

from randfeat._validation import is_power_of_two, next_power_of_two
from randfeat.binning import RandomBinningFeatures
from randfeat.hadamard import fwht

__version__ = "0.1.0"

__all__ = [
    "RandomBinningFeatures",
    "__version__",
    "fwht",
    "is_power_of_two",
    "next_power_of_two",
]
