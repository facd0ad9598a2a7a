#!/usr/bin/env bash
# Build randfeat's compiled extensions with AddressSanitizer + UndefinedBehaviorSanitizer in a
# scratch copy of this checkout, then run a small budget of the test suite and the hypothesis
# fuzz harness (tools/fuzz_kernels.py, exact NumPy references) under them.  Prints the number
# of sanitizer reports and exits non-zero unless it is 0 and every test passed.
#
#   tools/sanitize.sh                      # default budget, run by .ci/run (~3 min on 2 cores)
#   RANDFEAT_SANITIZE_EXAMPLES=1000 RANDFEAT_SANITIZE_TESTS=full tools/sanitize.sh
#
# Environment: RANDFEAT_SANITIZE_DIR (scratch directory; default a new mktemp dir, removed at
# the end unless RANDFEAT_SANITIZE_KEEP=1), RANDFEAT_SANITIZE_EXAMPLES (fuzz inputs per
# target, default 60), RANDFEAT_SANITIZE_TESTS ("small": the kernel and binning tests, default;
# "full": the whole suite), RANDFEAT_SANITIZE_JOBS (parallel compile jobs, default 2),
# RANDFEAT_SANITIZE_OPT (optimisation level of the instrumented build, default -O1), CC (default
# gcc), RANDFEAT_SANITIZE_MISSING_STATUS (exit status when the compiler has no sanitizer
# runtimes: default 0, the run is skipped with a message).  Needs gcc with libasan, libubsan.
#
# Python itself is not instrumented, so libasan is LD_PRELOADed; leak detection is off (the
# interpreter's own allocations would be reported).  Tests that cannot run under ASan are
# deselected: the RLIMIT_AS one (ASan reserves terabytes of address space for its shadow
# memory) and the fork-pool one (budget).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CC=${CC:-gcc}
EXAMPLES=${RANDFEAT_SANITIZE_EXAMPLES:-60}
TESTS=${RANDFEAT_SANITIZE_TESTS:-small}
if [[ -n "${RANDFEAT_SANITIZE_DIR:-}" ]]; then
    SCRATCH=$RANDFEAT_SANITIZE_DIR; mkdir -p "$SCRATCH"
else
    SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/randfeat-sanitize.XXXXXX")
    [[ "${RANDFEAT_SANITIZE_KEEP:-0}" == 1 ]] || trap 'rm -rf "$SCRATCH"' EXIT
fi
SRC=$SCRATCH/src
LOGS=$SCRATCH/logs
rm -rf "$SRC" "$LOGS"; mkdir -p "$SRC" "$LOGS"

ASAN_RT=$($CC -print-file-name=libasan.so)
UBSAN_RT=$($CC -print-file-name=libubsan.so)
if [[ ! -e "$ASAN_RT" || ! -e "$UBSAN_RT" ]]; then
    # gcc prints the bare name when it has no such runtime
    echo "== sanitizer run SKIPPED: $CC has no libasan/libubsan runtime (got '$ASAN_RT', '$UBSAN_RT')"
    exit "${RANDFEAT_SANITIZE_MISSING_STATUS:-0}"
fi

echo "== copying the checkout (tracked and new files) to $SRC"
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard \
    | xargs -0 -I{} sh -c 'test -e "{}" && printf "%s\0" "{}"' \
    | tar --null -T - -cf -) | (cd "$SRC" && tar -xf -)

echo "== building with -fsanitize=address,undefined ($CC)"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g"
(cd "$SRC" && CC=$CC CFLAGS="$SAN" LDFLAGS="$SAN" RANDFEAT_OPT=${RANDFEAT_SANITIZE_OPT:--O1} \
    python setup.py build_ext --inplace -j "${RANDFEAT_SANITIZE_JOBS:-2}" > "$LOGS/build.log" 2>&1) \
    || { tail -30 "$LOGS/build.log"; echo "build failed"; exit 2; }

export LD_PRELOAD="$ASAN_RT $UBSAN_RT"
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=0:exitcode=99:log_path=$LOGS/asan"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=98:log_path=$LOGS/ubsan"
export PYTHONDONTWRITEBYTECODE=1 HYPOTHESIS_PROFILE=ci

status=0
cd "$SRC"
echo "== tests under ASan/UBSan ($TESTS)"
if [[ "$TESTS" == full ]]; then
    SEL=(tests)
else
    SEL=(tests/test_hadamard.py tests/test_fourier.py tests/test_fastfood.py
         tests/test_compiled_policy.py tests/test_rff_determinism.py
         tests/test_binning.py tests/test_binning_robust.py)
    [[ -e tests/test_sorf.py ]] && SEL+=(tests/test_sorf.py)
    # the compiled kernels of _sketch.pyx (count sketches, spectrum product, Maclaurin
    # products, additive chi2), without the Monte Carlo tests
    [[ -e tests/test_sketch.py ]] && SEL+=(
        tests/test_sketch.py::test_tensorsketch_is_count_sketch_of_tensor_power
        tests/test_sketch.py::test_threads_dtype_sparse_pickle
        tests/test_sketch.py::test_count_sketch_sparse_equals_dense_exactly
        tests/test_sketch.py::test_tampered_hash_tables_are_refused
        tests/test_sketch.py::test_threaded_blocks_bit_identical
        tests/test_sketch.py::test_maclaurin_features_are_the_products
        tests/test_chi2.py::test_additive_same_as_sklearn
        tests/test_chi2.py::test_additive_conventions)
    grep -q "def test_float32_gram_panels" tests/test_linear.py \
        && SEL+=(tests/test_linear.py::test_float32_gram_panels)
    grep -q "def test_posv_mixed_says_when_it_cannot" tests/test_linear.py \
        && SEL+=(tests/test_linear.py::test_posv_mixed_meets_the_float64_test
                 tests/test_linear.py::test_posv_mixed_says_when_it_cannot)
fi
python -m pytest -q -p no:cacheprovider -x "${SEL[@]}" \
    -k "not failed_thread_creation and not fork_pool and not python_m_randfeat" \
    || status=$?
echo "== fuzz harness under ASan/UBSan ($EXAMPLES examples per target)"
python tools/fuzz_kernels.py --examples "$EXAMPLES" || status=$?

n_reports=$(find "$LOGS" -name 'asan.*' -o -name 'ubsan.*' | wc -l)
echo "== sanitizer reports: $n_reports (logs in $LOGS)"
if [[ "$n_reports" -gt 0 ]]; then
    head -50 "$LOGS"/asan.* "$LOGS"/ubsan.* 2>/dev/null || true
    RANDFEAT_SANITIZE_KEEP=1; trap - EXIT
    exit 1
fi
exit $status
