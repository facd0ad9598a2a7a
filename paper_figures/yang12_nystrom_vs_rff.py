"""Yang, Li, Mahdavi, Jin & Zhou (NIPS 2012): Nyström against random Fourier features, on data
with and without a large eigengap.

The RMS distance between ridge regression on m features (``randfeat.RandomFourierFeatures(m)``
or ``randfeat.Nystroem(m)`` landmarks) and exact kernel ridge (``randfeat.ExactKernelRidge``),
relative to the exact predictor, against m on log axes, with the fitted rates and the 1/sqrt(m)
and 1/m guides; band: min-max over the independently seeded maps.  The computation is
``analysis.checks.nystrom_vs_rff.run`` with this target's sizes (its verdict is printed with the
table).  Without ``randfeat.Nystroem`` only the RFF curves are drawn.  The paper reports test
errors on its datasets; the rates are what its theorems state, so the rates are compared.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from paper_figures._features import derive_seed
from paper_figures._output import write_table_md

CODE_VERSION = 1


def params(cfg):
    from analysis.checks import nystrom_vs_rff as ny

    p = dict(ny.PARAMS["quick" if cfg.quick else "full"])
    if cfg.reps:
        p["R"] = cfg.reps
    return dict(check=p, seed=cfg.seed, quick=cfg.quick)


def compute(p):
    from analysis.checks import nystrom_vs_rff as ny

    res = ny.run(p["check"], derive_seed(p["seed"], "yang12_nystrom_vs_rff"))
    return dict(result=res, verdict=ny.verdict(res), rows=ny.analyse(res)["rows"])


def render(result, p, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    res, v = result["result"], result["verdict"]
    fits = {(r["dataset"], r["method"]): r for r in result["rows"]}
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 4.2), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    rows = []
    for ax, part in zip(axes[0], res["parts"], strict=False):
        for j, (meth, lab) in enumerate((("rff", "RFF"), ("nys", "Nyström"))):
            if meth not in part["methods"]:
                continue
            ms = np.asarray(part["methods"][meth]["ms"], float)
            r = np.asarray(part["methods"][meth]["r"], float)
            f = fits[(part["dataset"], meth)]
            ax.plot(ms, f["rms"], "o-", color=colors[j], ms=3.5,
                    label=f"{lab}: m^{f['slope']:.2f} ± {f['se']:.2f}")
            ax.fill_between(ms, r.min(axis=1), r.max(axis=1), color=colors[j], alpha=0.15, lw=0)
            rows.append([part["dataset"], lab, f"{f['slope']:.3f} ± {f['se']:.3f}",
                         ", ".join(f"{int(a)}: {b:.3g}" for a, b in zip(ms, f["rms"],
                                                                        strict=True))])
        ms = np.asarray(part["methods"]["rff"]["ms"], float)
        r0 = fits[(part["dataset"], "rff")]["rms"][0]
        ax.plot(ms, r0 * (ms / ms[0]) ** -0.5, "k:", lw=1, label="1/sqrt(m)")
        ax.plot(ms, r0 * (ms / ms[0]) ** -1.0, "k--", lw=1, label="1/m")
        eig = np.asarray(part["eig"][:12])
        ax.set(xscale="log", yscale="log", xlabel="m (features or landmarks)",
               ylabel="RMS(f_m - f_exact) / RMS(f_exact)",
               title=f"{part['dataset']}: eigenvalues " + ", ".join(f"{x:.2g}" for x in eig[:10])
               + " ...")
        ax.title.set_fontsize(7)
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Nyström vs random Fourier features (Yang et al. 2012)"
                 + (" (QUICK)" if p["quick"] else ""), fontsize=10)
    fig.tight_layout()
    png = Path(out_dir) / "yang12_nystrom_vs_rff.png"
    fig.savefig(png, dpi=120)
    plt.close(fig)
    c = p["check"]
    para = [
        "# Yang et al. (NIPS 2012) — Nyström vs random Fourier features",
        "",
        *(["**QUICK MODE** (the check's quick design)", ""] if p["quick"] else []),
        f"n = {c['n']} training points, 200 test points, R = {c['R']} maps per m, per-sample "
        "ridge 1e-3; 'gap': 8 clusters 8 sigma apart (8 large kernel eigenvalues, then a drop); "
        "'no gap': uniform data with a smaller bandwidth.",
        "",
        f"Verdict of the check on this run: **{v['verdict']}** — {v['summary']}",
        "",
    ]
    md = write_table_md(out_dir, "yang12_nystrom_vs_rff", para,
                        ["data", "map", "rate (slope) ± se", "relative RMS error per m"], rows,
                        result)
    return [png, *md]
