"""Build the compiled kernels of randfeat.

Everything declarative lives in ``pyproject.toml``; this file only lists the
Cython extensions.  OpenMP is used when the compiler supports it; set
``RANDFEAT_NO_OPENMP=1`` to build without it (the package then runs every
kernel on one thread).  No host-specific flags (``-march=native``) are used:
the FWHT picks its SIMD variant at run time from the CPU's features.
"""

import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = Path(__file__).parent
LIB = Path("randfeat") / "_lib"
SRC = LIB / "src"


def _truthy(name):
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def _openmp_flags():
    """Return (compile_args, link_args) for OpenMP, or ([], []) if unavailable."""
    if _truthy("RANDFEAT_NO_OPENMP"):
        print("randfeat: RANDFEAT_NO_OPENMP set, building without OpenMP")
        return [], []
    if sys.platform == "win32":
        return ["/openmp"], []
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    cc = cc.split()
    code = "#include <omp.h>\nint main(void){return omp_get_max_threads() > 0 ? 0 : 1;}\n"
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "probe.c"
        src.write_text(code)
        try:
            subprocess.run(cc + ["-fopenmp", str(src), "-o", str(Path(tmp) / "probe")],
                           check=True, capture_output=True)
        except (OSError, subprocess.CalledProcessError):
            print("randfeat: compiler has no OpenMP support, building without it")
            return [], []
    return ["-fopenmp"], ["-fopenmp"]


OMP_COMPILE, OMP_LINK = _openmp_flags()
# RANDFEAT_OPT overrides the optimisation level (tools/sanitize.sh builds with -O1: the
# sanitizers need no -O3, and the instrumented build is several times faster to compile).
_OPT = os.environ.get("RANDFEAT_OPT", "-O3")
BASE_COMPILE = [] if sys.platform == "win32" else [_OPT, "-fno-math-errno"]
DEFINES = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]

# Every C source is compiled once, into the one extension that owns the kernels and their SIMD
# dispatcher (randfeat._lib._cpu); the other extensions call them through _cpu.pxd.
C_SOURCES = {
    "_cpu": [str(SRC / "rf_isa.c"), str(SRC / "fwht.c"), str(SRC / "rff_trig.c"),
             str(SRC / "fastfood_block.c")],
}


def _extensions():
    exts = []
    for pyx in sorted((HERE / LIB).glob("*.pyx")):
        name = pyx.stem
        exts.append(Extension(
            f"randfeat._lib.{name}",
            sources=[str(LIB / pyx.name)] + C_SOURCES.get(name, []),
            depends=[str(SRC / h.name) for h in sorted((HERE / SRC).glob("*.h"))],
            include_dirs=[np.get_include(), str(SRC)],
            define_macros=DEFINES,
            extra_compile_args=BASE_COMPILE + OMP_COMPILE,
            extra_link_args=OMP_LINK,
        ))
    return exts


setup(
    ext_modules=cythonize(
        _extensions(),
        compiler_directives={
            "language_level": "3",
            "boundscheck": False,
            "wraparound": False,
            "initializedcheck": False,
            "cdivision": True,
            "freethreading_compatible": True,
        },
    ),
)
