"""Sphinx configuration of the randfeat site.

Build (from the repository root)::

    python -m pip install -e ".[docs]" &&
    python -m sphinx -W --keep-going -b html docs docs/_build/html

What the build does besides reading the pages: writes the API pages from ``docs/apiref.py``
(``docs/api/``), runs the gallery (``examples/``, sphinx-gallery) and the verification suite's
quick mode (``docs/verification.py``: ``python -m analysis --quick`` into
``docs/_build/analysis``, cached there, its report and figures copied into the page).
``RANDFEAT_DOCS_REPORT=DIR`` uses the report of an earlier run in DIR instead;
``RANDFEAT_DOCS_REPORT=skip`` leaves the page with a note (for a quick look at the text only).
"""

from __future__ import annotations

import importlib
import os
import pathlib
import sys
import warnings

DOCS = pathlib.Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # randfeat (as built in place or installed), analysis, examples
sys.path.insert(0, str(DOCS))
os.environ.setdefault("MPLBACKEND", "Agg")

import apiref  # noqa: E402
import verification  # noqa: E402

import randfeat  # noqa: E402

project = "randfeat"
author = "the randfeat developers"
copyright = "2026, the randfeat developers"  # noqa: A001
release = randfeat.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "docfix",
]

# MathJax from the [docs] extra's offline copy when it is installed (the site then renders its
# formulas without a network), else from MathJax's CDN (Sphinx's default)
try:
    importlib.import_module("sphinx-mathjax-offline")
    extensions.append("sphinx-mathjax-offline")
except ImportError:
    pass

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "**/README.md", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.md5", "auto_examples/*.json"]

# --- API reference ---------------------------------------------------------------------------
apiref.write_pages(DOCS / "api")
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"member-order": "groupwise"}
autodoc_typehints = "none"  # the numpydoc sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_attributes_as_param_list = True
# numpydoc parses every docstring (its parse errors are warnings, errors under -W); its style
# validation (numpydoc_validation_checks) is not enabled: the docstrings are reviewed per module
numpydoc_validation_checks = set()

intersphinx_mapping = {}  # no network at build time: references to other projects stay plain
nitpicky = False

# --- Markdown (MyST) -------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
myst_dmath_double_inline = True
suppress_warnings = ["myst.header"]  # the generated report's headings start below the page title

# --- gallery ---------------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"plot_",
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "download_all_examples": False,
    "remove_config_comments": True,
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "show_memory": False,
    "plot_gallery": os.environ.get("RANDFEAT_DOCS_GALLERY", "True"),
    "reset_modules_order": "both",
    "backreferences_dir": "auto_examples/backreferences",
    "doc_module": ("randfeat",),
}
warnings.filterwarnings("ignore", category=UserWarning,
                        message="Matplotlib is currently using agg")

# --- HTML ------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"randfeat {release}"
html_static_path = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "header_links_before_dropdown": 7,
}
html_sidebars = {"index": []}
html_show_sourcelink = False

# --- the verification report -----------------------------------------------------------------
verification.prepare(DOCS, ROOT)
