"""The compiled layer's one policy (randfeat/_lib/_policy.pxd): thread counts, fork, Ctrl-C and
the kernels' error codes.

Deterministic checks (no statistical tolerance): the scenarios that need a fresh process (fork,
resource limits) run in a subprocess with a timeout, so a regression fails instead of hanging.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from randfeat import Fastfood, RandomFourierFeatures, fwht
from randfeat._lib import _fastfood, _fourier, _fwht

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run_py(code, timeout):
    """Run ``code`` in a fresh interpreter on this checkout; fail (not hang) after ``timeout``."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("OMP_NUM_THREADS", None)
    try:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"subprocess did not finish within {timeout} s (hang)")


# --- thread counts --------------------------------------------------------------------------

@pytest.mark.parametrize("n_threads", [1025, 40000])
def test_thread_count_above_cap_is_a_clear_error(n_threads):
    x = np.ones((8, 16))
    with pytest.raises(ValueError, match=f"n_threads must be between 1 and 1024, got {n_threads}"):
        fwht(x, n_threads=n_threads)
    for est in (RandomFourierFeatures(n_components=8, random_state=0),
                Fastfood(n_components=8, random_state=0)):
        est.fit(x)
        est.set_params(n_threads=n_threads)
        with pytest.raises(ValueError, match="n_threads must be between 1 and 1024"):
            est.transform(x)


def test_kernels_reject_bad_thread_counts():
    buf = np.zeros((2, 4))
    for bad in (0, -3, 1025):
        with pytest.raises(ValueError, match="n_threads must be between 1 and 1024"):
            _fwht.fwht_rows(buf, 2, bad, 1.0, True)
        with pytest.raises(ValueError, match="n_threads must be between 1 and 1024"):
            _fourier.transform_paired(np.ones((2, 3)), np.ones((2, 3)), buf, 1.0, bad)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS scenario (Linux)")
def test_failed_thread_creation_is_an_exception_not_an_abort():
    """With too little address space for 256 thread stacks, the OpenMP runtime would kill the
    process ("libgomp: Thread creation failed"); we raise RuntimeError and stay usable."""
    res = _run_py("""
        import resource
        import numpy as np
        from randfeat import fwht
        x = np.ones((4096, 1024), dtype=np.float32)
        y = fwht(x, n_threads=1)
        with open("/proc/self/statm") as f:
            vm = int(f.read().split()[0]) * resource.getpagesize()
        # 64 MiB more address space: far too little for 256 stacks of 8 MiB
        resource.setrlimit(resource.RLIMIT_AS, (vm + (64 << 20), resource.RLIM_INFINITY))
        try:
            fwht(x, n_threads=500)
        except RuntimeError as e:
            print("RuntimeError:", e)
        print("alive", np.array_equal(fwht(x, n_threads=2), y))
    """, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "RuntimeError: could not start" in res.stdout
    assert "pass a smaller n_threads" in res.stdout
    assert "alive True" in res.stdout


# --- fork -----------------------------------------------------------------------------------

@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_fork_pool_after_multithreaded_call_does_not_hang():
    """issue 12 item 1: a 2-thread call in the parent, then 2-thread calls in fork children
    (multiprocessing.Pool with 'fork') hung forever in a libgomp barrier.  Results must equal
    the parent's bit for bit."""
    res = _run_py("""
        import multiprocessing as mp
        import numpy as np
        from randfeat import Fastfood, RandomFourierFeatures, fwht

        def work(seed):
            x = np.random.default_rng(seed).standard_normal((256, 1024))
            a = fwht(x, n_threads=2)
            z = RandomFourierFeatures(n_components=512, random_state=0, n_threads=2).fit(
                x[:, :16]).transform(x[:, :16])
            f = Fastfood(n_components=512, random_state=0, n_threads=2).fit(
                x[:, :16]).transform(x[:, :16])
            return a.tobytes() + z.tobytes() + f.tobytes()

        if __name__ == "__main__":
            ref = [work(s) for s in range(4)]   # the parent runs 2-thread teams first
            with mp.get_context("fork").Pool(2) as pool:
                got = pool.map(work, range(4))
            print("same" if got == ref else "DIFFERENT")
    """, timeout=90)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "same"


# --- Ctrl-C ---------------------------------------------------------------------------------

def test_ctrl_c_stops_a_long_kernel_call():
    """A SIGINT that arrives during a long compiled call stops it between work items (the
    master thread runs the signal handlers about every millisecond of work): the call raises the
    handler's exception and leaves later blocks unwritten.  Without the check the call ran to the
    end and the exception came afterwards (every row written)."""
    import signal
    import threading

    class Stop(Exception):
        pass

    def handler(signum, frame):
        raise Stop

    rng = np.random.default_rng(0)
    n, m, d = 2048, 1024, 2048                 # 4 Gflop: seconds on one core
    X = rng.standard_normal((n, d)).astype(np.float32)
    W = rng.standard_normal((m, d)).astype(np.float32)
    out = np.full((n, 2 * m), np.nan, dtype=np.float32)
    old = signal.signal(signal.SIGINT, handler)
    timer = threading.Timer(0.02, os.kill, (os.getpid(), signal.SIGINT))
    try:
        timer.start()
        with pytest.raises(Stop):
            # 64 blocks of 32 rows, each a fraction of the total: checked between blocks
            _fourier.transform_paired(X, W, out, 1.0, 1, 32, 64)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, old)
    assert np.isnan(out[-1]).all(), "the call ran to the end: Ctrl-C was not noticed"


# --- error codes ----------------------------------------------------------------------------

def test_fwht_length_above_kernel_limit_raises():
    """The kernel refuses lengths above 2**30; the input used to come back unchanged."""
    x = np.broadcast_to(np.float32(1), (2 ** 31,))   # no memory behind it
    with pytest.raises(ValueError, match=r"above the largest supported length 2\*\*30"):
        fwht(x)
    buf = np.zeros((1, 4))
    with pytest.raises(ValueError, match=r"2\*\*31 are not supported"):
        _fwht.fwht_rows(buf, 31, 1, 1.0, True)
    with pytest.raises(ValueError, match="rows have 4 values, expected 2\\*\\*3"):
        _fwht.fwht_rows(buf, 3, 1, 1.0, True)


def test_fastfood_kernel_rejects_log_d_above_limit():
    X = np.zeros((1, 4))
    with pytest.raises(ValueError, match="log_d=31 is outside 0..30"):
        _fastfood.transform_paired(
            X, np.zeros((1, 1), np.uint8), np.zeros((1, 4), np.int32), np.zeros((1, 4)),
            np.zeros(4), np.zeros((1, 8)), 31, 1.0, 1.0, 1)


@pytest.mark.parametrize("dtype", [">f8", ">f4", ">i4", "<f8"])
def test_fwht_non_native_byte_order(dtype):
    """Big-endian input used to get a contradictory 'unsupported dtype float64'."""
    rng = np.random.default_rng(1)
    x = rng.integers(-8, 9, size=(3, 16)).astype(dtype)
    x0 = x.copy()
    got = fwht(x)
    ref = fwht(x.astype(x.dtype.newbyteorder("=")))
    assert got.dtype.isnative and got.dtype.kind == "f"
    assert_array_equal(got, ref)
    assert_array_equal(x, x0)  # input untouched


def test_blas_dimension_guard():
    """Dimensions a single gemm takes whole must fit a 32-bit BLAS int: a clear error rather
    than a wrapped (negative) dimension.  (Arrays that large need > 8 GiB, so the guard that
    every map calls before its gemm is tested on its own.)"""
    _fourier.check_blas_dims("t", 2 ** 31 - 1, 10, 2 ** 31 - 1)
    for m, d, ldo in ((2 ** 31, 10, 10), (10, 2 ** 31, 20), (2 ** 30, 10, 2 ** 31)):
        with pytest.raises(ValueError, match="exceed the BLAS's 32-bit dimensions"):
            _fourier.check_blas_dims("t", m, d, ldo)


# --- concurrent transforms ------------------------------------------------------------------

@pytest.mark.parametrize("blas", [1, 2])
def test_concurrent_transforms_from_python_threads_are_bit_identical(blas):
    """Several Python threads transforming at once get the serial bits, under a single-threaded
    BLAS (fused path: gemm calls inside randfeat's OpenMP region) and a 2-thread one (gemm calls
    from each calling thread with the BLAS's threads), and the BLAS thread count is the same
    afterwards.  The shape is one where a 2-thread OpenBLAS gemm rounds differently from a
    1-thread one (the former process-wide limit let one thread's exit restore 2 BLAS threads
    while another thread was still inside its transform)."""
    import threading

    from threadpoolctl import threadpool_info, threadpool_limits

    rng = np.random.default_rng(5)
    X = rng.standard_normal((300, 333)).astype(np.float32)
    rffs = [RandomFourierFeatures(1400, random_state=s, n_threads=1 + s % 2).fit(X)
            for s in range(4)]
    with threadpool_limits(limits=blas, user_api="blas"):
        before = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
        ref = [r.transform(X) for r in rffs]
        bad = []

        def worker(k):
            for _ in range(6):
                if not np.array_equal(rffs[k].transform(X), ref[k]):
                    bad.append(k)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        after = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
    assert not bad, f"threads {sorted(set(bad))} got different bits"
    assert after == before == [blas] * len(before)


def _blas_counts_while(fn, min_reads=50):
    """Run ``fn`` in another Python thread, again and again until this thread has read the
    BLAS thread counts (threadpoolctl's controllers, as threadpool_info reports them) at least
    ``min_reads`` times while it ran, then once more after it.  Returns the set of readings
    (tuples, one count per loaded BLAS) and the number of calls of ``fn``."""
    import threading
    import time

    from threadpoolctl import ThreadpoolController

    libs = ThreadpoolController().select(user_api="blas").lib_controllers
    seen, calls, running = set(), [0], threading.Event()
    stop = threading.Event()

    def work():
        running.set()
        while not stop.is_set():
            fn()
            calls[0] += 1

    t = threading.Thread(target=work)
    t.start()
    running.wait()
    reads = 0
    while reads < min_reads:
        seen.add(tuple(lib.num_threads for lib in libs))
        reads += 1
        time.sleep(0.001)
    stop.set()
    t.join()
    seen.add(tuple(lib.num_threads for lib in libs))
    return seen, calls[0]


@pytest.mark.parametrize("blas", [1, 2])
def test_transform_leaves_the_blas_thread_count_alone(blas):
    """issue 11: transform reads the BLAS's thread count and never changes it.  Another Python
    thread reads it (threadpoolctl) about every millisecond while transforms run, and after:
    always the user's value.  (Deterministic: no tolerance.)"""
    from threadpoolctl import threadpool_limits

    X = np.random.default_rng(0).standard_normal((3000, 256))
    rff = RandomFourierFeatures(2048, random_state=0, n_threads=2).fit(X)
    with threadpool_limits(limits=blas, user_api="blas"):
        seen, calls = _blas_counts_while(lambda: rff.transform(X))
    n_libs = len(next(iter(seen)))
    assert calls >= 1 and n_libs >= 1
    assert seen == {(blas,) * n_libs}


def _set_openblas_threads(n):
    """Set the process-wide thread count of every loaded OpenBLAS through its own C function
    (what the former ``_parallel.blas_limit`` did); returns the previous counts.  For the
    mutant below only: threadpoolctl ignores limits set from a second Python thread."""
    import ctypes

    from threadpoolctl import ThreadpoolController

    old = []
    for lib in ThreadpoolController().select(internal_api="openblas").lib_controllers:
        dll = ctypes.CDLL(lib.filepath, mode=getattr(ctypes, "RTLD_NOLOAD", 0) | ctypes.RTLD_LOCAL)
        for pre in ("", "scipy_"):
            for suf in ("", "64_", "_64"):
                get = getattr(dll, f"{pre}openblas_get_num_threads{suf}", None)
                set_ = getattr(dll, f"{pre}openblas_set_num_threads{suf}", None)
                if get is not None and set_ is not None:
                    get.restype, set_.argtypes = ctypes.c_int, [ctypes.c_int]
                    old.append((set_, get()))
                    set_(n[len(old) - 1] if isinstance(n, list) else n)
                    break
            else:
                continue
            break
    return [c for _, c in old]


def test_blas_watch_catches_a_transform_that_limits_the_blas(monkeypatch):
    """The watch above can fail: a transform that sets the process-wide BLAS thread count to 1
    around its kernel call and restores it after (what randfeat did before; put in through a
    monkeypatched seam) is seen at 1 thread while it runs."""
    import types

    from threadpoolctl import threadpool_limits

    from randfeat import fourier

    def limited(*args, **kwargs):
        saved = _set_openblas_threads(1)
        try:
            return _fourier.transform_paired(*args, **kwargs)
        finally:
            _set_openblas_threads(saved)

    fake = types.SimpleNamespace(**{k: getattr(_fourier, k) for k in dir(_fourier)
                                    if not k.startswith("__")})
    fake.transform_paired = limited
    monkeypatch.setattr(fourier, "_fourier", fake)
    X = np.random.default_rng(0).standard_normal((3000, 256))
    rff = RandomFourierFeatures(2048, random_state=0, n_threads=2).fit(X)
    with threadpool_limits(limits=2, user_api="blas"):
        seen, _ = _blas_counts_while(lambda: rff.transform(X))
    assert any(1 in reading for reading in seen), seen


# --- one SIMD dispatcher, each C source compiled once ---------------------------------------

def _restore_isa():
    from randfeat._lib import _cpu
    _cpu.set_isa("auto")


def test_set_isa_reaches_every_kernel():
    from randfeat._lib import _cpu
    levels = _cpu.available_isas()
    assert levels[0] == "scalar" and _cpu.isa() == levels[-1]
    rng = np.random.default_rng(3)
    X = rng.standard_normal((20, 50))
    ff = Fastfood(n_components=256, random_state=0).fit(X)
    x = rng.standard_normal((7, 1024))
    try:
        outs = {}
        for name in levels:
            _cpu.set_isa(name)
            assert _cpu.kernel_isas() == {"fwht": name, "rff_trig": name, "fastfood": name}
            assert _fwht.isa() == name and _fourier.isa() == name
            outs[name] = (fwht(x), ff.transform(X))
        for name in levels[1:]:
            # the FWHT is bit-identical on every level; the features within an ulp or two
            assert_array_equal(outs[name][0], outs["scalar"][0])
            np.testing.assert_allclose(outs[name][1], outs["scalar"][1], rtol=0, atol=1e-14)
    finally:
        _restore_isa()
    with pytest.raises(ValueError, match="unknown SIMD code path 'sse9'"):
        _cpu.set_isa("sse9")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF symbol lookup")
def test_each_c_source_is_compiled_once():
    """Only _cpu holds the C kernels: _fastfood used to carry its own copy of fwht.c (so
    set_isa never reached Fastfood's FWHT) and of rff_trig.c."""
    import ctypes

    from randfeat._lib import _cpu
    assert hasattr(ctypes.CDLL(_cpu.__file__), "rf_fwht_float")
    for mod in (_fwht, _fourier, _fastfood):
        lib = ctypes.CDLL(mod.__file__)
        for sym in ("rf_fwht_float", "rf_rff_paired_split_float", "rf_ff_gather_float",
                    "rf_isa_level"):
            assert not hasattr(lib, sym), f"{mod.__name__} has its own copy of {sym}"


def test_isa_env_var_caps_every_kernel():
    res = subprocess.run(
        [sys.executable, "-c", "from randfeat._lib import _cpu; "
         "print(sorted(set(_cpu.kernel_isas().values())))"],
        env=dict(os.environ, RANDFEAT_ISA="scalar",
                 PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")),
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "['scalar']"


@pytest.mark.parametrize("level", ["scalar", "avx2", "avx512"])
def test_isa_env_var_fused_check(level):
    """Under RANDFEAT_ISA (read once, at the first kernel call) the fused finiteness check of
    fwht names the bad rows on that level: an overflow in the last pass at the last output of
    one row of three, in place and out of place, float32 and float64."""
    from randfeat._lib import _cpu
    if level not in _cpu.available_isas():
        pytest.skip(f"{level} not supported here")
    res = subprocess.run(
        [sys.executable, "-c", textwrap.dedent("""
            import numpy as np
            from randfeat import fwht, show_config
            assert show_config(as_dict=True)["simd"]["kernels"]["fwht"] == LEVEL
            for dt in (np.float32, np.float64):
                for log_n in (3, 10, 14):
                    d = 1 << log_n
                    x = np.zeros((3, d), dt)
                    # x = c h_{d-1}: its transform overflows at output d-1 only, in the last pass
                    par = np.bitwise_count(np.arange(d, dtype=np.uint64) & np.uint64(d - 1)) & 1
                    x[1] = np.where(par, -1.0, 1.0) * (float(np.finfo(dt).max) * (1.5 / d))
                    for out in (None, x.copy()):
                        try:
                            fwht(x, out=out)
                        except ValueError as e:
                            assert "in 1 of 3 transformed vectors" in str(e), e
                        else:
                            raise AssertionError((dt, log_n))
            print("ok")
        """).replace("LEVEL", repr(level))],
        env=dict(os.environ, RANDFEAT_ISA=level,
                 PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")),
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"


# --- show_config and the package's rooms -----------------------------------------------------

def test_show_config_reports_every_kernel(capsys):
    import randfeat
    from randfeat._lib import _cpu
    cfg = randfeat.show_config(as_dict=True)
    assert cfg["simd"]["kernels"] == _cpu.kernel_isas()
    assert cfg["simd"]["selected"] == _cpu.isa()
    assert cfg["openmp"]["enabled"] == _cpu.openmp_enabled()
    assert cfg["versions"]["numpy"] == np.__version__
    assert any(p.get("user_api") == "blas" for p in cfg["threadpools"])
    assert randfeat.show_config() is None
    text = capsys.readouterr().out
    for word in ("randfeat", "fwht", "rff_trig", "fastfood", "openmp", "blas", "numpy"):
        assert word in text


def test_python_m_randfeat_runs():
    res = _run_py("import sys, runpy; sys.argv = ['randfeat']; "
                  "runpy.run_module('randfeat', run_name='__main__')", timeout=120)
    assert "compiled kernels:" in res.stdout and "OK" in res.stdout, res.stderr
    assert "FAILED" not in res.stdout


def test_benchmark_harness_is_not_installed():
    """The timing harness and the hook that called any address it was given left the package
    (benchmarks/_fwht_bench.py, benchmarks/_rowloop.c)."""
    import importlib.util
    assert importlib.util.find_spec("randfeat._fwht_bench") is None
    assert not hasattr(_fwht, "apply_rows_cfunc")
    assert os.path.exists(os.path.join(ROOT, "benchmarks", "_fwht_bench.py"))
