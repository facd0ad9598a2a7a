"""The API reference's source: which public name goes on which page, and the page writer.

``GROUPS`` places every public name of randfeat on a page, grouped as users think of them
(feature maps, learners, kernels, the FWHT, datasets, dask).  ``conf.py`` calls :func:`write_pages`
before the build; the pages (``docs/api/*.rst``, generated, not committed) hold autosummary
tables, and autosummary writes one page per name from the docstrings.

Adding a public name: export it (``__all__``) and add it to ``GROUPS`` below.
``tests/test_docs_api.py`` fails while a name of ``randfeat.__all__`` or of a public submodule's
``__all__`` is in no group.  The build itself never breaks on a new name: a public name missing
from ``GROUPS`` is listed under "Not yet placed" on the index page, so the site still documents it.

``OPTIONAL`` names are announced but may not exist in a given checkout (maps being added in
parallel); each is documented where it imports and skipped otherwise.  Every other name must
import, or the build stops with the name.

The analysis API (``analysis/``, run from the repository, not installed) is documented module by
module: each module's ``__all__`` in full, so it is complete by construction.
"""

from __future__ import annotations

import importlib
import inspect
import pathlib
import pkgutil

# (slug, title, introduction, [(section title or None, [dotted names])])
GROUPS = [
    ("feature_maps", "Feature maps",
     "Transformers x -> z(x) with z(x)'z(y) ~ k(x, y).  All follow scikit-learn's "
     "transformer API (``fit``, ``transform``, ``get_feature_names_out``, ``set_output``), take "
     "``random_state`` and ``n_threads``, keep float32, accept scipy.sparse and dask input where "
     "stated.  See :doc:`/guide/choosing` to pick one.",
     [("Shift-invariant kernels (Gaussian, Laplacian, Cauchy, Matern)", [
         "randfeat.RandomFourierFeatures",
         "randfeat.Fastfood",
         "randfeat.StructuredOrthogonalFeatures",
         "randfeat.RandomBinningFeatures",
      ]),
      ("Other kernels (softmax and Gaussian by positive features, dot-product, arc-cosine, "
       "chi-squared, any kernel by Nystroem)", [
         "randfeat.PositiveRandomFeatures",
         "randfeat.Nystroem",
         "randfeat.PolynomialCountSketch",
         "randfeat.RandomMaclaurin",
         "randfeat.ArcCosineFeatures",
         "randfeat.AdditiveChi2Sampler",
         "randfeat.SkewedChi2Sampler",
      ]),
      ("Sampling utilities", [
         "randfeat.nystroem.successive_sampling",
      ]),
      ("Warnings", [
         "randfeat.binning.WideBinningWarning",
      ])]),
    ("learners", "Learners",
     "Ridge regression and least-squares classification on random features, their mergeable "
     "sufficient statistics (out-of-core and distributed fits) and exact kernel ridge, the "
     "infinite-feature limit they are checked against.",
     [(None, [
         "randfeat.RandomFeatureRidge",
         "randfeat.RandomFeatureRidgeClassifier",
         "randfeat.RidgeStatistics",
         "randfeat.ExactKernelRidge",
         "randfeat.linear.AlphaAtGridEdgeWarning",
      ]),
      ("Choosing the kernel's length scale", [
         "randfeat.linear.SigmaSearchCV",
         "randfeat.linear.SigmaAtGridEdgeWarning",
      ])]),
    ("kernels", "Kernels",
     "Exact kernels: the Gram matrices the maps approximate, their spectral samplers (random "
     "Fourier features, Fastfood, SORF) and pitch laws (random binning), and one registry of "
     "names.",
     [("Shift-invariant kernels", [
         "randfeat.kernels.ShiftInvariantKernel",
         "randfeat.kernels.GaussianKernel",
         "randfeat.kernels.LaplacianKernel",
         "randfeat.kernels.CauchyKernel",
         "randfeat.kernels.MaternKernel",
         "randfeat.kernels.BallSumKernel",
      ]),
      ("Binning kernels (random binning's pitch laws)", [
         "randfeat.kernels.BinningKernel",
         "randfeat.kernels.InversePowerBinningKernel",
         "randfeat.kernels.StretchedExponentialBinningKernel",
         "randfeat.kernels.CustomBinningKernel",
      ]),
      ("Other kernels", [
         "randfeat.kernels.ArcCosineKernel",
      ]),
      ("Registry", [
         "randfeat.kernels.get_kernel",
         "randfeat.kernels.kernel_names",
         "randfeat.kernels.KERNEL_NAMES",
      ])]),
    ("fwht", "Fast Walsh-Hadamard transform and utilities",
     "The transform Fastfood and SORF run on, and what randfeat was built with.",
     [(None, [
         "randfeat.fwht",
         "randfeat.is_power_of_two",
         "randfeat.next_power_of_two",
         "randfeat.show_config",
      ])]),
    ("datasets", "Datasets",
     "Local loaders of the papers' benchmark datasets.  Nothing is downloaded: a missing file "
     "raises :class:`~randfeat.datasets.DatasetNotFoundError` naming the file and its source.",
     [(None, [
         "randfeat.datasets.load_dataset",
         "randfeat.datasets.get_data_home",
         "randfeat.datasets.paper_split",
         "randfeat.datasets.DATASETS",
         "randfeat.datasets.DatasetNotFoundError",
         "randfeat.datasets.DatasetFileError",
      ]),
      ("One loader per dataset", [
         "randfeat.datasets.load_adult",
         "randfeat.datasets.load_census",
         "randfeat.datasets.load_covtype",
         "randfeat.datasets.load_cpu_act",
         "randfeat.datasets.load_ct_slices",
         "randfeat.datasets.load_insurance",
         "randfeat.datasets.load_kddcup99",
         "randfeat.datasets.load_kegg",
         "randfeat.datasets.load_letter",
         "randfeat.datasets.load_parkinsons",
         "randfeat.datasets.load_wine",
         "randfeat.datasets.load_year_prediction_msd",
      ])]),
    ("dask", "Dask",
     "Every transformer and learner accepts dask arrays; these are the functions they hand "
     "them to (``pip install \"randfeat[dask]\"``).",
     [(None, [
         "randfeat.dask.is_dask_array",
         "randfeat.dask.dispatch",
         "randfeat.dask.transform",
         "randfeat.dask.fit_transform",
         "randfeat.dask.fit",
         "randfeat.dask.fit_ridge",
         "randfeat.dask.decision_function",
         "randfeat.dask.predict",
         "randfeat.dask.tiled_transform",
         "randfeat.dask.tree_reduce",
         "randfeat.dask.TILE_ROWS",
      ])]),
]

#: maps added in parallel branches: documented where they import, skipped otherwise
OPTIONAL = {
    "randfeat.Nystroem", "randfeat.PolynomialCountSketch", "randfeat.RandomMaclaurin",
    "randfeat.AdditiveChi2Sampler", "randfeat.SkewedChi2Sampler", "randfeat.ArcCosineFeatures",
    "randfeat.PositiveRandomFeatures",
}

#: the module pages: each module's docstring, on its group's page
MODULES = {"dask": "randfeat.dask", "datasets": "randfeat.datasets",
           "kernels": "randfeat.kernels"}

#: the analysis API, one page per module (its whole ``__all__``)
ANALYSIS_MODULES = [
    ("analysis.checks", "The check contract and loader"),
    ("analysis.montecarlo", "Seeded replicates"),
    ("analysis.stats", "Tests and intervals"),
    ("analysis.power", "Computed power: effects and statements"),
    ("analysis.bounds", "The papers' bounds"),
    ("analysis.truth", "Exact kernels, written independently of randfeat"),
    ("analysis.maps", "Building the maps under test"),
    ("analysis.orf_theory", "Exact laws of ORF, ORF' and SORF's bound"),
    ("analysis.fastfood_law", "The exact variance law of Fastfood"),
    ("analysis.arccos_law", "Exact laws of arc-cosine features"),
    ("analysis.prf_law", "Exact laws of positive and trigonometric softmax features"),
    ("analysis.featcheck", "Shared design of the new maps' checks"),
    ("analysis.supsearch", "Certified sup-norm search"),
    ("analysis.pooled", "Pooled estimates"),
    ("analysis.orth_common", "Shared parts of the orthogonal checks"),
    ("analysis.repro", "Seeds, code hash, cache, progress"),
    ("analysis.report", "The report writer"),
    ("analysis.runner", "One check run and the cache's versions"),
    ("analysis.audit", "Auditing the power statements"),
    ("analysis.sorf_law", "The exact law of SORF (enumerated sign patterns)"),
    ("analysis.rmt", "Deterministic equivalents of random-feature ridge"),
    ("analysis.learning_curve", "Shared parts of the learning-curve checks"),
]

#: modules whose docstring is not reST (shown on their page as a literal block instead)
LITERAL_MODULE_DOC = {"analysis.checks"}

#: never documented as names: dunders and modules listed in ``__all__``
SKIP = {"__version__"}


def _resolve(dotted):
    """The object named ``dotted`` (``randfeat.linear.RidgeStatistics``), or raise ImportError."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            try:
                obj = getattr(obj, p)
            except AttributeError as exc:
                raise ImportError(f"{dotted}: no attribute {p!r}") from exc
        return obj
    raise ImportError(f"cannot import {dotted}")


def public_modules():
    """randfeat and its public submodules (no leading underscore anywhere in the name)."""
    import randfeat

    names = ["randfeat"]
    for m in pkgutil.walk_packages(randfeat.__path__, "randfeat."):
        if not any(p.startswith("_") for p in m.name.split(".")):
            names.append(m.name)
    return names


def public_names():
    """Every (module, name) of randfeat's public ``__all__`` lists (modules and dunders skipped)."""
    out = []
    for modname in public_modules():
        mod = importlib.import_module(modname)
        for name in getattr(mod, "__all__", ()):
            if name in SKIP or inspect.ismodule(getattr(mod, name, None)):
                continue
            out.append((modname, name))
    return out


def grouped_names():
    return [n for _, _, _, sections in GROUPS for _, names in sections for n in names]


def unplaced():
    """Public names whose object is documented under no name of ``GROUPS``."""
    placed = set(grouped_names())
    objs = []
    for n in placed:
        try:
            objs.append(_resolve(n))
        except ImportError:
            pass
    missing = []
    for modname, name in public_names():
        if f"{modname}.{name}" in placed:
            continue
        obj = getattr(importlib.import_module(modname), name)
        if not any(obj is o for o in objs if not isinstance(o, (int, float, str))):
            missing.append(f"{modname}.{name}")
    return missing


def _available(names):
    out = []
    for n in names:
        try:
            _resolve(n)
        except ImportError:
            if n in OPTIONAL:
                continue
            raise
        out.append(n)
    return out


def _table(names, template=None):
    lines = [".. autosummary::", "   :toctree: generated/", "   :nosignatures:"]
    if template:
        lines.append(f"   :template: {template}")
    lines.append("")
    lines += [f"   {n}" for n in names]
    return lines + [""]


def _tables(names):
    """autosummary tables of dotted names, each run of names of one module under its
    ``currentmodule`` (autosummary wants names relative to it)."""
    lines, run, mod = [], [], None
    for n in names + [None]:
        m = n.rsplit(".", 1)[0] if n else None
        if run and m != mod:
            lines += [f".. currentmodule:: {mod}", ""] + _table([r.rsplit(".", 1)[1] for r in run])
            run = []
        mod = m
        if n:
            run.append(n)
    return lines


def _title(t, ch="="):
    return [t, ch * len(t), ""]


def write_pages(outdir):
    """Write the API pages into ``outdir`` (docs/api): index.rst and one page per group."""
    outdir = pathlib.Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    index = _title("API reference") + [
        "Every public class and function of randfeat, generated from its docstring, grouped "
        "by what it is for; then the analysis API (the verification suite's building blocks).",
        "", ".. toctree::", "   :maxdepth: 2", ""]
    index += [f"   {slug}" for slug, *_ in GROUPS] + ["   analysis", ""]
    left = unplaced()
    if left:
        index += _title("Not yet placed", "-") + [
            "Public names not yet in a group of ``docs/apiref.py`` (the test suite fails "
            "until they are):", ""] + _tables(left)
    _write(outdir / "index.rst", index)
    for slug, title, intro, sections in GROUPS:
        lines = _title(title) + [intro, ""]
        if slug in MODULES:
            lines += [f".. automodule:: {MODULES[slug]}", "   :no-members:", "",
                      ".. rubric:: Contents", ""]
        for sec, names in sections:
            names = _available(names)
            if not names:
                continue
            if sec:
                lines += _title(sec, "-")
            lines += _tables(names)
        _write(outdir / f"{slug}.rst", lines)
    lines = _title("Analysis API") + [
        "The building blocks of ``python -m analysis`` (run from the repository: the package "
        "is not installed).  Each module's ``__all__`` in full.", "",
        ".. toctree::", "   :maxdepth: 1", ""]
    lines += [f"   analysis/{m}" for m, _ in ANALYSIS_MODULES] + [""]
    _write(outdir / "analysis.rst", lines)
    for modname, title in ANALYSIS_MODULES:
        mod = importlib.import_module(modname)
        names = [n for n in getattr(mod, "__all__", ()) if not n.startswith("__")]
        page = _title(f"{modname}: {title}")
        if modname in LITERAL_MODULE_DOC:
            page += ["::", ""] + ["    " + ln for ln in (mod.__doc__ or "").splitlines()] + [""]
        else:
            page += [f".. automodule:: {modname}", "   :no-members:", ""]
        page += [f".. currentmodule:: {modname}", ""] + _table(names)
        _write(outdir / "analysis" / f"{modname}.rst", page)


def _write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines) + "\n"
    if not path.exists() or path.read_text() != text:  # unchanged pages keep their mtime
        path.write_text(text)
