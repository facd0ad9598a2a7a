"""All Gaussian-kernel feature maps side by side on LETTER: kernel MSE vs D/d (Yu et al. Fig. 4).

Yu, Suresh, Choromanski, Holtmann-Rice & Kumar, "Orthogonal Random Features" (NIPS 2016),
Figure 4 (LETTER panel, d = 16): mean squared error of the Gaussian kernel estimate against
D/d = 1..10, with sigma the mean distance to the 50th nearest neighbour over 1,000 sampled points;
the paper's ordering is SORF ~ ORF < QMC (digital net) < RFF < circulant / Fastfood-like maps.
Here, with randfeat's maps (paired features, D frequencies, 2D columns):

* ``rff``     ``RandomFourierFeatures`` (iid Gaussian frequencies)
* ``orf``     ``RandomFourierFeatures(sampling="orthogonal")``   (ORF, chi_d radii)
* ``orf_u``   ``RandomFourierFeatures(sampling="orthogonal_unit")`` (ORF', radii sqrt(d); biased)
* ``sorf``    ``StructuredOrthogonalFeatures`` (H D1 H D2 H D3)
* ``sobol``, ``halton``  ``RandomFourierFeatures(sampling="qmc_sobol" / "qmc_halton")``
* ``fastfood`` ``Fastfood`` (H G Pi H B with chi_d row lengths)

Protocol: the 16 LETTER attributes standardised (zero mean, unit variance over the file; the
paper does not say whether it scales them), ``n_points`` rows sampled once (seeded), sigma = mean
distance to the 50th nearest neighbour among them (as the paper), the exact Gram matrix K of those
rows, and MSE = mean over all pairs (i, j) of (k-hat - k)^2, for ``reps`` independent feature
draws per (map, D).  LETTER is read by :func:`randfeat.datasets.load_letter` (KEEL
``letter.dat.gz``, see ``../shared/data/README.md``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from paper_figures._features import derive_seed
from paper_figures._output import progress, write_table_md

CODE_VERSION = 3
MAPS = ("rff", "orf", "orf_u", "sorf", "sobol", "halton", "fastfood")
LABELS = {"rff": "RFF (iid)", "orf": "ORF", "orf_u": "ORF' (unit rows)", "sorf": "SORF",
          "sobol": "QMC Sobol'", "halton": "QMC Halton", "fastfood": "Fastfood"}
SAMPLING = {"rff": "iid", "orf": "orthogonal", "orf_u": "orthogonal_unit", "sobol": "qmc_sobol",
            "halton": "qmc_halton"}


def params(cfg):
    q = cfg.quick
    return dict(data_dir=str(cfg.data_dir), n_points=300 if q else 1000,
                multiples=[1, 2, 4, 10] if q else list(range(1, 11)),
                reps=cfg.reps or (3 if q else 10), seed=cfg.seed, quick=q, knn=50)


def load_letter(data_dir):
    """LETTER features (20000 x 16, float64; class column dropped), by
    :func:`randfeat.datasets.load_letter` (its errors name the file and the folder)."""
    from randfeat.datasets import load_letter as _load

    return np.asarray(_load(data_dir).X, dtype=float)


def make_map(name, n_freq, sigma, seed):
    """Unfitted paired map with ``n_freq`` frequencies (2 n_freq columns)."""
    import randfeat

    if name in SAMPLING:
        return randfeat.RandomFourierFeatures(2 * n_freq, sigma=sigma, sampling=SAMPLING[name],
                                              random_state=seed, n_threads=1)
    if name == "sorf":
        return randfeat.StructuredOrthogonalFeatures(2 * n_freq, sigma=sigma,
                                                     random_state=seed, n_threads=1)
    if name == "fastfood":
        return randfeat.Fastfood(2 * n_freq, kernel="gaussian", sigma=sigma, features="paired",
                                 random_state=seed, n_threads=1)
    raise ValueError(f"unknown map {name!r}; choose from {MAPS}")


def compute(p):
    try:
        X = load_letter(p["data_dir"])
    except FileNotFoundError as e:
        return dict(missing=str(e))
    return kernel_mse(X, p, "orf_letter")


def kernel_mse(X, p, tag):
    """Yu et al.'s Fig. 4 protocol on the rows of ``X`` (see the module docstring): MSE of every
    map in ``MAPS`` for D = k d, k in ``p["multiples"]``, ``p["reps"]`` draws each; seeds derived
    from (``p["seed"]``, ``tag``, ...)."""
    X = np.asarray(X, dtype=float)
    X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    rng = np.random.default_rng(derive_seed(p["seed"], tag, "sample"))
    n = min(p["n_points"], len(X))
    X = X[rng.choice(len(X), n, replace=False)]
    sq = np.maximum((X * X).sum(1)[:, None] + (X * X).sum(1)[None, :] - 2 * X @ X.T, 0.0)
    knn = min(p["knn"], n - 1)
    sigma = float(np.sqrt(np.sort(sq, axis=1)[:, knn]).mean())   # column 0 is the point itself
    K = np.exp(-sq / (2 * sigma ** 2))
    d = X.shape[1]
    mse = {m: np.zeros((len(p["multiples"]), p["reps"])) for m in MAPS}
    jobs = [(i, k, r, m) for i, k in enumerate(p["multiples"]) for r in range(p["reps"])
            for m in MAPS]
    for i, k, r, m in progress(jobs, desc=tag):
        Z = np.asarray(make_map(m, k * d, sigma, derive_seed(p["seed"], tag, m, k, r))
                       .fit_transform(X), dtype=float)
        mse[m][i, r] = float(np.mean((Z @ Z.T - K) ** 2))
    from analysis.orf_theory import orf_unit_mean

    z = np.sqrt(sq) / sigma
    bias2 = float(np.mean((orf_unit_mean(z.ravel(), d) - K.ravel()) ** 2))
    return dict(d=d, n_points=n, sigma=sigma, multiples=p["multiples"],
                mse={m: v.tolist() for m, v in mse.items()}, k_mean=float(K.mean()),
                orf_unit_bias2=bias2)


def _stats(v):
    v = np.asarray(v)
    se = v.std(axis=1, ddof=1) / np.sqrt(v.shape[1]) if v.shape[1] > 1 else np.zeros(len(v))
    return v.mean(axis=1), se


def render(result, p, out_dir):
    if "missing" in result:
        path = Path(out_dir) / "orf_letter.md"
        path.write_text("# Yu et al. Fig. 4 (LETTER) — data missing\n\n" + result["missing"]
                        + "\n")
        return [path]
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = np.asarray(result["multiples"])
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for m, style in zip(MAPS, ("o-", "s-", "^--", "D-", "v-", "<-", "x:"), strict=True):
        mean, se = _stats(result["mse"][m])
        ax.errorbar(ks, mean, yerr=2 * se, fmt=style, ms=4, capsize=2, lw=1, label=LABELS[m])
    ax.set(yscale="log", xlabel="D / d (frequencies per input dimension)",
           ylabel=r"kernel MSE, mean over pairs of $(\hat k - k)^2$",
           title=f"LETTER (d = {result['d']}, {result['n_points']} points, "
                 f"$\\sigma$ = {result['sigma']:.2f})" + (" QUICK" if p["quick"] else ""))
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    png = Path(out_dir) / "orf_letter.png"
    fig.savefig(png, dpi=120)
    plt.close(fig)

    rff, rff_se = _stats(result["mse"]["rff"])
    rows = []
    for i, k in enumerate(ks):
        row = [int(k)]
        for m in MAPS:
            mean, se = _stats(result["mse"][m])
            row.append(f"{mean[i]:.3g} ± {se[i]:.1g}" + ("" if m == "rff" else
                                                           f" ({mean[i] / rff[i]:.2f})"))
        rows.append(row)
    means = {m: _stats(result["mse"][m])[0] for m in MAPS}
    order = sorted(MAPS, key=lambda m: means[m][-1])
    paper = ["sorf", "orf", "sobol", "rff", "fastfood"]
    ours = [m for m in order if m in paper]
    para = [
        "# Yu et al. (NIPS 2016) Fig. 4, LETTER panel — all Gaussian feature maps side by side",
        "",
        *(["**QUICK MODE** (fewer points, D/d values and repetitions)", ""] if p["quick"] else []),
        f"{result['n_points']} LETTER rows (standardised), sigma = mean distance to the "
        f"{p['knn']}th nearest neighbour = {result['sigma']:.3f} (mean kernel value "
        f"{result['k_mean']:.3f}); MSE over all pairs; mean ± standard error over "
        f"{len(result['mse']['rff'][0])} feature draws; in brackets the ratio to RFF's MSE.",
        "",
        f"Order at D/d = {int(ks[-1])} (lowest MSE first): "
        + " < ".join(LABELS[m] for m in order) + ".",
        "Paper's order: SORF ≈ ORF < QMC < RFF < Fastfood-like; ours (same maps): "
        + " < ".join(LABELS[m] for m in ours) + ".",
        "ORF' and SORF are biased (rows of fixed length sqrt(d)/sigma; Yu et al. Thm 2, 3): "
        "their MSE includes a squared bias that does not shrink with D, so they level off "
        "above ORF as D/d grows. The exact squared bias of ORF' averaged over these pairs "
        f"(analysis.orf_theory): {result['orf_unit_bias2']:.3g}.",
        "",
    ]
    md = write_table_md(out_dir, "orf_letter", para, ["D/d", *[LABELS[m] for m in MAPS]],
                          rows, result)
    return [png, *md]
