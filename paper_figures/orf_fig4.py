"""Yu et al. (NIPS 2016) Fig. 4 on the other data at hand: kernel MSE against D/d for every
Gaussian feature map (iid RFF, ORF, ORF', SORF, QMC Sobol'/Halton, Fastfood).

The paper's panels are LETTER (d = 16, target ``orf_letter``), FOREST, USPS, CIFAR, MNIST and
GISETTE, none of which is in the data folder; this target runs the same protocol
(``orf_letter.kernel_mse``: inputs standardised, ``n_points`` rows sampled, sigma = the mean
distance to the 50th nearest neighbour among them, MSE over all pairs, ``reps`` draws per map and
D/d) on the regression and classification sets randfeat loads (``randfeat.datasets``; one-hot /
sparse inputs made dense).  The paper prints no numbers for Fig. 4, only the ordering
SORF ≈ ORF < QMC < RFF < Fastfood-like maps, which is checked per dataset at the largest D/d with
two-standard-error intervals.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from paper_figures._features import derive_seed
from paper_figures._output import write_table_md
from paper_figures.orf_letter import LABELS, MAPS, _stats, kernel_mse

CODE_VERSION = 1
QUICK_SETS = ("cpu_act", "wine")
FULL_SETS = ("cpu_act", "wine", "census", "parkinsons", "kegg", "insurance", "adult", "kddcup99")
PAPER_ORDER = ("sorf", "orf", "sobol", "rff", "fastfood")


def params(cfg):
    q = cfg.quick
    sets = list(cfg.datasets) if cfg.datasets else list(QUICK_SETS if q else FULL_SETS)
    return dict(data_dir=str(cfg.data_dir), datasets=sets, n_points=300 if q else 1000,
                multiples=[1, 2, 4, 10] if q else list(range(1, 11)),
                reps=cfg.reps or (3 if q else 10), seed=cfg.seed, quick=q, knn=50)


def compute(p):
    from randfeat import datasets

    out = {}
    for name in p["datasets"]:
        try:
            X = datasets.load_dataset(name, p["data_dir"]).X
        except FileNotFoundError as e:
            out[name] = dict(missing=str(e))
            continue
        if sp.issparse(X):
            rows = np.random.default_rng(derive_seed(p["seed"], "orf_fig4", name, "rows"))
            X = X[np.sort(rows.choice(X.shape[0], min(X.shape[0], 20 * p["n_points"]),
                                      replace=False))].toarray()
        out[name] = kernel_mse(X, p, f"orf_fig4/{name}")
    return dict(sets=out)


def _order_check(res):
    """Paper's chain at the largest D/d: (pairs that hold, pairs that are reversed beyond 2 se,
    pairs not separated)."""
    means, ses = {}, {}
    for m in MAPS:
        mu, se = _stats(res["mse"][m])
        means[m], ses[m] = mu[-1], se[-1]
    held, reversed_, tied = [], [], []
    for a, b in zip(PAPER_ORDER[1:-1], PAPER_ORDER[2:], strict=True):   # ORF < QMC < RFF < FF
        diff, se = means[b] - means[a], np.hypot(ses[a], ses[b])
        pair = f"{LABELS[a]} < {LABELS[b]}"
        (held if diff > 2 * se else reversed_ if diff < -2 * se else tied).append(pair)
    return held, reversed_, tied


def render(result, p, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = result["sets"]
    have = [n for n in p["datasets"] if "missing" not in sets[n]]
    paths = []
    if have:
        ncol = min(3, len(have))
        nrow = -(-len(have) // ncol)
        fig, axes = plt.subplots(nrow, ncol, figsize=(4.6 * ncol, 3.6 * nrow), squeeze=False)
        for ax, name in zip(axes.ravel(), have, strict=False):
            res = sets[name]
            ks = np.asarray(res["multiples"])
            for m, style in zip(MAPS, ("o-", "s-", "^--", "D-", "v-", "<-", "x:"), strict=True):
                mean, se = _stats(res["mse"][m])
                ax.errorbar(ks, mean, yerr=2 * se, fmt=style, ms=3, capsize=2, lw=1,
                            label=LABELS[m])
            ax.set(yscale="log", xlabel="D / d", ylabel="kernel MSE",
                   title=f"{name} (d = {res['d']}, sigma = {res['sigma']:.2f})")
            ax.grid(True, which="both", alpha=0.3)
        for ax in axes.ravel()[len(have):]:
            ax.axis("off")
        axes.ravel()[0].legend(fontsize=6)
        fig.suptitle("Yu et al. Fig. 4 protocol on the data at hand"
                     + (" (QUICK)" if p["quick"] else ""))
        fig.tight_layout()
        png = Path(out_dir) / "orf_fig4.png"
        fig.savefig(png, dpi=110)
        plt.close(fig)
        paths.append(png)

    para = ["# Yu et al. (NIPS 2016) Fig. 4 — kernel MSE against D/d on the data at hand", "",
            *(["**QUICK MODE** (fewer points, D/d values, repetitions and datasets)", ""]
              if p["quick"] else []),
            "Protocol of `orf_letter` (LETTER is that target): inputs standardised, "
            f"{p['n_points']} rows sampled per dataset, sigma = mean distance to the "
            f"{p['knn']}th nearest neighbour, MSE over all pairs, mean ± standard error over "
            f"{p['reps']} feature draws (ratio to RFF in brackets).  The paper prints no numbers "
            "for Fig. 4; its ordering SORF ≈ ORF < QMC < RFF < Fastfood is checked at the largest "
            "D/d: a pair holds when the difference exceeds two standard errors.", ""]
    rows = []
    for name in p["datasets"]:
        res = sets[name]
        if "missing" in res:
            para.append(f"* **{name}**: data missing — {res['missing']}")
            continue
        held, rev, tied = _order_check(res)
        para.append(f"* **{name}** (d = {res['d']}): holds {', '.join(held) or 'none'}; "
                    f"reversed {', '.join(rev) or 'none'}; not separated "
                    f"{', '.join(tied) or 'none'}.")
        rff = _stats(res["mse"]["rff"])[0]
        for i, k in enumerate(res["multiples"]):
            row = [name, int(k)]
            for m in MAPS:
                mean, se = _stats(res["mse"][m])
                row.append(f"{mean[i]:.3g} ± {se[i]:.1g}" + ("" if m == "rff" else
                                                               f" ({mean[i] / rff[i]:.2f})"))
            rows.append(row)
    para.append("")
    paths += write_table_md(out_dir, "orf_fig4", para,
                              ["dataset", "D/d", *[LABELS[m] for m in MAPS]], rows, result)
    return paths
