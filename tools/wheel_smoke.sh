#!/usr/bin/env bash
# Wheel smoke test (run by .ci/run): build an sdist of this checkout and a wheel from that sdist,
# install the wheel into a fresh virtual environment, then, from a directory outside the
# repository, import randfeat and transform with every feature map and fit a learner.  Also checks
# the sdist's contents, the wheel's licence metadata (PEP 639), that the build gives no setuptools
# deprecation warning, and that the library imports without the [analysis] extra.
#
# By default the build uses the current environment's build tools (setuptools>=77, Cython, numpy,
# scipy: the [test] extra has them) and the venv sees this environment's site-packages for the
# dependencies (numpy, scipy, scikit-learn, threadpoolctl), so nothing is downloaded and the cost
# is one compile of the extensions.  RANDFEAT_SMOKE_ISOLATED=1 builds with pip's isolated build
# environments and installs the dependencies into a venv without system site-packages, from the
# package index (slower: minutes of downloads and installs).
# Usage: bash tools/wheel_smoke.sh        (prints the time it took; exits non-zero on failure)
# The smoke build compiles at -O1 (RANDFEAT_SMOKE_OPT; -O3 is the default of every other build): it
# checks packaging and that the built library works, not its speed, and -O1 halves the compile.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/randfeat-wheel.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
t0=$(date +%s)
export RANDFEAT_OPT="${RANDFEAT_SMOKE_OPT:--O1}"
if [ "${RANDFEAT_SMOKE_ISOLATED:-0}" = "1" ]; then
    BUILD_ISO=(); PIP_ISO=(); VENV_OPTS=()
else
    BUILD_ISO=(--no-isolation); PIP_ISO=(--no-build-isolation); VENV_OPTS=(--system-site-packages)
fi

# sdist first, then the wheel built from it: a file the build needs but the sdist lacks fails here
"$PY" -m build --sdist "${BUILD_ISO[@]}" --outdir "$TMP/dist" "$ROOT" > "$TMP/sdist.log" 2>&1 \
    || { tail -n 40 "$TMP/sdist.log"; exit 1; }
SDIST=$(ls "$TMP"/dist/randfeat-*.tar.gz)
"$PY" - "$SDIST" <<'PYEOF'
import sys
import tarfile

names = [n.split("/", 1)[1] for n in tarfile.open(sys.argv[1]).getnames() if "/" in n]
for need in ("LICENSE", "pyproject.toml", "setup.py", "randfeat/__init__.py",
             "randfeat/_lib/src/fwht.h", "docs/theory/index.md"):
    assert need in names, f"sdist lacks {need}"
for leak in ("tests/", "analysis/", "paper_figures/", "benchmarks/"):
    assert not any(n.startswith(leak) for n in names), f"sdist ships {leak} (it cannot run there)"
assert not any(n.startswith("randfeat/_lib/_") and n.endswith(".c") for n in names), \
    "sdist ships generated C files"
print(f"sdist: {len(names)} entries, no tests/analysis, sources and LICENSE present")
PYEOF
"$PY" -m pip wheel --no-deps "${PIP_ISO[@]}" --wheel-dir "$TMP/dist" "$SDIST" -v > "$TMP/build.log" 2>&1 \
    || { tail -n 40 "$TMP/build.log"; exit 1; }
# the packaging metadata must be in its current form (setuptools warns about deprecated forms)
if grep -n "SetuptoolsDeprecationWarning" "$TMP/sdist.log" "$TMP/build.log"; then
    echo "wheel smoke: setuptools deprecation warning in the build (log above)"; exit 1
fi
WHEEL=$(ls "$TMP"/dist/randfeat-*.whl)
t1=$(date +%s)
"$PY" -m venv "${VENV_OPTS[@]}" "$TMP/venv"
"$TMP/venv/bin/python" -m pip install -q --disable-pip-version-check "$WHEEL"
t2=$(date +%s)

cd "$TMP"
"$TMP/venv/bin/python" - "$TMP" <<'PYEOF'
import importlib.metadata as md
import os
import sys

import numpy as np

import randfeat

venv = sys.argv[1]
assert os.path.realpath(randfeat.__file__).startswith(os.path.realpath(venv)), randfeat.__file__
for name in ("matplotlib", "tqdm"):
    assert name not in sys.modules, f"import randfeat pulled in {name}"
meta = md.metadata("randfeat")
assert meta["License-Expression"] == "BSD-3-Clause", meta["License-Expression"]
assert "LICENSE" in (meta.get_all("License-File") or []), meta.get_all("License-File")
assert meta["Author"] == "the randfeat developers", meta["Author"]
classifiers = meta.get_all("Classifier") or []
assert "Programming Language :: Cython" in classifiers and \
    "Intended Audience :: Science/Research" in classifiers, classifiers
assert not any(c.startswith("License ::") for c in classifiers), "licence classifier beside the " \
    "PEP 639 expression"
assert md.version("randfeat") == randfeat.__version__, (md.version("randfeat"),
                                                       randfeat.__version__)
X = np.random.default_rng(0).standard_normal((64, 8))
Z = randfeat.RandomFourierFeatures(n_components=128, sigma=2.0, random_state=0).fit_transform(X)
F = randfeat.Fastfood(n_components=128, sigma=2.0, random_state=0).fit_transform(X)
B = randfeat.RandomBinningFeatures(n_grids=10, sigma=2.0, random_state=0).fit_transform(X)
h = randfeat.fwht(np.ones(8))
assert Z.shape == (64, 128) and F.shape == (64, 128) and B.shape[0] == 64
assert np.all(np.isfinite(Z)) and np.all(np.isfinite(F))
np.testing.assert_array_equal(h, [8, 0, 0, 0, 0, 0, 0, 0])
m = randfeat.RandomFeatureRidge(randfeat.RandomFourierFeatures(n_components=64, random_state=0),
                                alphas=[1.0]).fit(X, X[:, 0])
assert m.predict(X).shape == (64,)
print(f"wheel smoke: randfeat {randfeat.__version__} from {os.path.dirname(randfeat.__file__)}"
      f" imports, transforms and fits")
PYEOF
t3=$(date +%s)
echo "wheel smoke: ok (build $((t1 - t0)) s, venv + install $((t2 - t1)) s, run $((t3 - t2)) s)"
