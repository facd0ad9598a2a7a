"""The README's figure: how fast each map's kernel error falls with the number of features.

Run from the repository root: ``python docs/readme_figure.py`` writes
``docs/_static/readme_maps.png`` (committed; seeded, so a re-run draws the same figure).
Gaussian kernel, 400 points of a standard normal sample in R^16, sigma = 4: the RMS error of the
Gram entries z(x)'z(y) - k(x, y) over all pairs against the number of output columns, mean of
5 seeds, for iid, orthogonal and quasi-Monte Carlo random Fourier features, Fastfood and SORF,
with the D^-1/2 line of the exact iid variance.
"""

import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from randfeat import Fastfood, RandomFourierFeatures, StructuredOrthogonalFeatures  # noqa: E402
from randfeat.kernels import GaussianKernel  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parent / "_static" / "readme_maps.png"


def main(out=OUT, seeds=5):
    rng = np.random.default_rng(0)
    d, sigma = 16, 4.0
    X = rng.standard_normal((400, d))
    K = GaussianKernel(sigma=sigma)(X)
    iu = np.triu_indices(len(X), 1)
    maps = {
        "RFF, iid": lambda D, s: RandomFourierFeatures(D, sigma=sigma, random_state=s),
        "RFF, orthogonal (ORF)": lambda D, s: RandomFourierFeatures(
            D, sigma=sigma, sampling="orthogonal", random_state=s),
        "RFF, Sobol' QMC": lambda D, s: RandomFourierFeatures(
            D, sigma=sigma, sampling="qmc_sobol", random_state=s),
        "Fastfood": lambda D, s: Fastfood(D, sigma=sigma, random_state=s),
        "SORF": lambda D, s: StructuredOrthogonalFeatures(D, sigma=sigma, random_state=s),
    }
    sizes = [32, 64, 128, 256, 512, 1024, 2048]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for name, make in maps.items():
        err = []
        for D in sizes:
            e = []
            for s in range(seeds):
                Z = make(D, s).fit_transform(X)
                e.append(np.sqrt(np.mean(((Z @ Z.T)[iu] - K[iu]) ** 2)))
            err.append(np.mean(e))
        ax.loglog(sizes, err, "o-", ms=4, label=name)
    # exact RMS error of iid paired features: E over pairs of (1 - k^2)^2 / (2 m), m = D/2
    k = K[iu]
    exact = np.sqrt(np.mean((1 - k**2) ** 2) / np.array(sizes))
    ax.loglog(sizes, exact, "k:", label="iid, exact: $\\sqrt{E(1-k^2)^2/D}$")
    ax.set_xlabel("output columns D")
    ax.set_ylabel("RMS error of z(x)'z(y) over all pairs")
    ax.set_title("Gaussian kernel, 400 points in $\\mathbb{R}^{16}$, mean of 5 seeds", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    return out


if __name__ == "__main__":
    print(main())
