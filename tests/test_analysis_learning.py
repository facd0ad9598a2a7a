"""Tests of the learning-with-random-features checks of ``analysis`` (issue 15).

Each check gets a negative control: run on a deliberately broken map or bound, its verdict must
be "fail".  The grids are reduced so that each test takes seconds; the false-alarm rates of the
checks themselves are stated in their modules (ALPHA, Bonferroni inside the check) and the quick
grids are swept over seeds 0-99 with ``python -m analysis --quick --only NAME --seed all``.
"""

import pytest

pytest.importorskip("matplotlib")
randfeat = pytest.importorskip("randfeat")

from analysis.checks import kernel_interpolation_limit as kil  # noqa: E402
from analysis.checks import sup_error_rate as ser  # noqa: E402


@pytest.fixture
def one_thread():
    """The checks are run single-threaded by ``python -m analysis``; without the limit, BLAS
    threads spin on a loaded machine and the small solves below take several times longer."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield


# ------------------------------------------------------------------ kernel_interpolation_limit
KIL_PARAMS = dict(grid=5, sizes=[32, 64, 128, 256], R=6, lambdas=[1e-10, 1e-3], fit_from=64,
                  bias_from=64, n_test=100)


def test_kernel_interpolation_limit_passes_on_the_library_map(global_random_seed, one_thread):
    # the check's own family false-alarm rate is ALPHA = 1e-4 (plus the TOL model slack)
    res = kil.run(KIL_PARAMS, global_random_seed)
    v = kil.verdict(res)
    assert v["verdict"] == "pass", v["statistic"]


def test_kernel_interpolation_limit_fails_on_wrong_bandwidth(monkeypatch, global_random_seed,
                                                             one_thread):
    """Negative control: features for 2 sigma (a factor-2 bandwidth bug) converge to kernel
    ridge with a different kernel, so the distance to the exact predictor stops falling
    (slope -> 0).  (A 30% bandwidth error is not detected on this small grid: the distance is
    still variance-dominated at D = 256.)  R = 12 maps per D: with the R = 6 of the other tests
    the slope's standard error varies enough between seeds that the factor-2 bug went
    undetected at seed 7 (1 of 30 seeds); with R = 12 it is detected at every seed 0-99."""
    real = kil.build_map

    def broken(D, random_state):
        est = real(D, random_state)
        return est.set_params(sigma=est.sigma * 2.0)

    monkeypatch.setattr(kil, "build_map", broken)
    res = kil.run(dict(KIL_PARAMS, R=12), global_random_seed)
    assert kil.verdict(res)["verdict"] == "fail"


# ------------------------------------------------------------------ sup_error_rate
# a minimal grid; each test enlarges the part it breaks
SER_PARAMS = dict(a=2.0, sizes=[16, 64], R=3, diam_m=64, diam_a=[0.5, 1.0, 2.0], R_diam=2,
                  widths=[64], R_pair=3, grid=51, tol=0.002)
SER_RATE = dict(sizes=[16, 64, 256, 1024], R=12)


def test_sup_error_rate_fails_on_wrong_bandwidth(monkeypatch, global_random_seed, one_thread):
    """Negative control: a map drawn for sigma * 1.3 estimates another kernel; its sup error
    against the Gaussian with sigma = 1 plateaus at the bias, so the slope in m is ~0 and the
    bounds are violated."""
    real = ser.build_map

    def broken(W, features, random_state):
        est = real(W, features, random_state)
        return est.set_params(sigma=est.sigma * 1.3)

    monkeypatch.setattr(ser, "build_map", broken)
    v = ser.verdict(ser.run(dict(SER_PARAMS, **SER_RATE), global_random_seed))
    assert v["verdict"] == "fail"
    assert any(f.startswith("(A)") for f in v["statistic"]["failed"])


def test_sup_error_rate_fails_on_a_too_small_bound(monkeypatch, global_random_seed, one_thread):
    """Negative control for part D: a 'bound' 30x smaller than Sriperumbudur-Szabo's (i.e.
    below the empirical sup) must be reported as violated."""
    real = ser.eps_sriperumbudur
    monkeypatch.setitem(ser.BOUNDS, "Sriperumbudur-Szabo",
                        lambda *a: real(*a) / 300.0)
    v = ser.verdict(ser.run(dict(SER_PARAMS, **SER_RATE), global_random_seed))
    assert v["verdict"] == "fail"
    assert any(f.startswith("(D) Sriperumbudur") for f in v["statistic"]["failed"])


def test_sup_error_rate_fails_when_phase_beats_paired(monkeypatch, global_random_seed, one_thread):
    """Negative control for part C: swapping the two maps (so that 'paired' is really the phase
    map) makes the sign test fail."""
    real = ser.build_map

    def swapped(W, features, random_state):
        other = "phase" if features == "paired" else "paired"
        return real(W, other, random_state)

    monkeypatch.setattr(ser, "grid_sup", _grid_sup_with(swapped))
    v = ser.verdict(ser.run(dict(SER_PARAMS, R_pair=200), global_random_seed))
    assert any(f.startswith("(C)") for f in v["statistic"]["failed"])


def test_sup_error_rate_fails_on_periodic_map(monkeypatch, global_random_seed, one_thread):
    """Negative control for part B: frequencies rounded to multiples of 2 pi / 40 make k-hat
    periodic with period 40, so the sup over [0, a] jumps to ~1 once a passes 40: polynomial
    growth with diam, which the check must report."""
    import numpy as np

    real = ser.build_map

    class Lattice(type(real(2, "paired", 0))):
        def fit(self, X, y=None):
            super().fit(X, y)
            q = 2 * np.pi / 40
            self.frequencies_ = np.ascontiguousarray(np.round(self.frequencies_ / q) * q)
            return self

    def periodic(W, features, random_state):
        return Lattice(**real(W, features, random_state).get_params())

    monkeypatch.setattr(ser, "build_map", periodic)
    params = dict(SER_PARAMS, diam_m=128, diam_a=[0.5, 4.0, 32.0, 256.0], R_diam=4)
    v = ser.verdict(ser.run(params, global_random_seed))
    assert any(f.startswith("(B)") for f in v["statistic"]["failed"]), v["statistic"]


def _grid_sup_with(builder):
    import numpy as np

    def grid_sup(features, W, a, grid, random_state):
        x = np.linspace(0.0, a, grid)[:, None]
        est = builder(W, features, random_state).fit(x)
        Z = np.asarray(est.transform(x), float)
        K = np.exp(-0.5 * (x - x.T) ** 2)
        return float(np.abs(Z @ Z.T - K).max())

    return grid_sup


# ------------------------------------------------------------------ features_needed
FN_PARAMS = dict(datasets=["synthetic"], n_train=200, n_test=300, sizes=[16, 64, 256, 1024], R=3)


def test_features_needed_dual_solve_equals_random_feature_ridge(global_random_seed, one_thread):
    """The check solves ridge on random features in the dual (so D may exceed n); it must be
    the estimator randfeat.RandomFeatureRidge fits (same features, alpha, intercept)."""
    import numpy as np

    from analysis.checks import features_needed as fn
    from randfeat.linear import RandomFeatureRidge

    rng = np.random.default_rng(global_random_seed)
    X, y, sigma = fn.synthetic(150, rng)
    Xt = rng.standard_normal((40, X.shape[1]))
    for D, alpha in ((20, 1e-3), (200, 1e-6)):
        m = fn.build_map(D, sigma, global_random_seed).fit(X)
        p = fn.rf_ridge_dual(m.transform(X), m.transform(Xt), y, alpha)
        rf = RandomFeatureRidge(fn.build_map(D, sigma, global_random_seed), alphas=alpha,
                                alpha_scale="mean", n_threads=1, gram_dtype="float64").fit(X, y)
        np.testing.assert_allclose(p, rf.predict(Xt), rtol=1e-6, atol=1e-6 * np.abs(p).max())


def test_features_needed_reads_letter_through_the_loader(tmp_path):
    """LETTER comes from randfeat.datasets.load_letter (RANDFEAT_DATA / data_home convention):
    26 one-vs-rest +-1 targets, standardised features."""
    import numpy as np
    from _tiny_data import write_tiny_data

    from analysis.checks import features_needed as fn

    data = write_tiny_data(tmp_path / "data")
    Xtr, Ytr, Xte, Yte, task, sigma, desc = fn.load("letter", 150, 60, np.random.default_rng(0),
                                                    data)
    assert task == "multiclass" and sigma is None and "one-vs-rest" in desc
    assert Xtr.shape == (150, 16) and Xte.shape == (60, 16) and Ytr.shape == (150, 26)
    assert set(np.unique(Ytr)) == {-1.0, 1.0} and np.all((Ytr == 1).sum(1) == 1)
    np.testing.assert_allclose(Xtr.mean(0), 0, atol=1e-12)
    (data / "letter.dat.gz").unlink()
    with pytest.raises(FileNotFoundError, match="letter.dat.gz"):
        fn.load("letter", 150, 60, np.random.default_rng(0), data)


def test_features_needed_passes_on_the_library_map(global_random_seed, one_thread):
    # family false-alarm rate ALPHA = 1e-4 of the check (plus the RATIO_TOL model slack)
    from analysis.checks import features_needed as fn

    v = fn.verdict(fn.run(FN_PARAMS, global_random_seed))
    assert v["verdict"] == "pass", v["statistic"]


def test_features_needed_fails_on_wrong_bandwidth(monkeypatch, global_random_seed, one_thread):
    """Negative control: a map for sigma * 1.3 estimates another kernel; its kernel MSE is
    bias-dominated, far above the variance (1 - k^2)^2 / (2D), and the check must fail."""
    from analysis.checks import features_needed as fn

    real = fn.build_map
    monkeypatch.setattr(fn, "build_map", lambda D, sigma, rs: real(D, sigma * 1.3, rs))
    v = fn.verdict(fn.run(FN_PARAMS, global_random_seed))
    assert v["verdict"] == "fail"
    assert any("variance" in f for f in v["statistic"]["failed"])


# ------------------------------------------------------------------ rudi_rosasco
RR_PARAMS = dict(ns=[100, 200, 400, 800], R_data=6, R=3,
                 sizes=[4, 6, 8, 11, 16, 23, 32, 45, 64, 91, 128])


def test_rudi_rosasco_knee_interpolation():
    from analysis.checks import rudi_rosasco as rr

    assert rr.knee([4, 8, 16], [2.0, 1.2, 1.0], level=1.1) == pytest.approx(8 * 2 ** 0.5)
    assert rr.knee([4, 8, 16], [1.05, 1.0, 1.0], level=1.1) == 4.0
    assert rr.knee([4, 8, 16], [3.0, 2.0, 1.5], level=1.1) is None


def test_rudi_rosasco_streamed_fits_equal_random_feature_ridge(global_random_seed, one_thread):
    """The check fits RF ridge through randfeat.RidgeStatistics, its rows streamed in nested
    prefixes (partial_fit of the new rows at each n): each (n, m) must be
    randfeat.RandomFeatureRidge on the library map with m frequencies and the same seed, same
    alpha = n^-1/2 and intercept; and the in-run exactness check (numpy at the claim's lambda)
    sees round-off only."""
    import numpy as np

    from analysis.checks import rudi_rosasco as rr
    from randfeat.linear import RandomFeatureRidge

    rng = np.random.default_rng(global_random_seed)
    X = rng.uniform(-1, 1, (240, 2))
    y = np.sin(3 * X[:, 0]) + 0.3 * rng.standard_normal(240)
    Xt = rng.uniform(-1, 1, (60, 2))
    ft = np.sin(3 * Xt[:, 0])
    ns, sizes = [80, 240], [3, 16, 64]
    check = []
    E = rr._rf_fits(global_random_seed, X, y, Xt, ft, ns, sizes, check=check)
    assert max(check) < 1e-10
    for i, n in enumerate(ns):
        for j, m in enumerate(sizes):
            p = RandomFeatureRidge(rr.build_map(m, global_random_seed), alphas=n ** -0.5,
                                   alpha_scale="mean", n_threads=1,
                                   gram_dtype="float64").fit(X[:n], y[:n]).predict(Xt)
            assert E[i, j] == pytest.approx(np.mean((p - ft) ** 2), rel=1e-9)


def test_rudi_rosasco_effective_dimension_against_a_2d_quadrature():
    """N(lambda) from the product of 1-d eigenvalues equals the one of a direct 2-d Gauss-Legendre
    discretisation of the integral operator (the kernel and the uniform law factorise)."""
    import numpy as np

    from analysis.checks import rudi_rosasco as rr

    x, w = np.polynomial.legendre.leggauss(36)
    P = np.stack(np.meshgrid(x, x), -1).reshape(-1, 2)
    wt = np.outer(w, w).ravel() / 4.0
    mu = np.linalg.eigvalsh(np.sqrt(wt)[:, None] * rr.gauss(P, P) * np.sqrt(wt)[None])
    for lam in (0.1, 0.05, 0.02):
        direct = float(np.sum(np.clip(mu, 0, None) / (np.clip(mu, 0, None) + lam)))
        assert rr.effective_dimension(lam)[0] == pytest.approx(direct, rel=1e-3)
    N = rr.effective_dimension([0.1, 0.01, 0.001])
    assert np.all(np.diff(N) > 0)


def test_rudi_rosasco_passes_on_the_library_map(global_random_seed, one_thread):
    # family false-alarm rate ALPHA = 1e-4 (Bonferroni over the two sides), plus the TOL_UP slack
    from analysis.checks import rudi_rosasco as rr

    v = rr.verdict(rr.run(RR_PARAMS, global_random_seed))
    assert v["verdict"] == "pass", v["statistic"]
    assert v["power"].endswith("with probability >= 0.9")


def _learner_width(monkeypatch, rr, scale):
    """Seam: the learner of nominal width m uses round(m * scale(n)) of the map's frequencies."""
    monkeypatch.setattr(rr, "frequencies_used", lambda m, n: max(1, round(m * scale(n))))


def test_rudi_rosasco_rejects_a_knee_growing_too_fast(monkeypatch, global_random_seed, one_thread):
    """Upper side: a learner that silently uses a share (n0 / n)^2 of its nominal frequencies
    needs (n / n0)^2 times the nominal features, a knee exponent two above the library's
    (~0.5 -> ~2.5, far beyond sqrt(n) log n); the check must reject it (exponent too large, or
    the knee off the grid).  Strong on purpose: this small grid has a bootstrap se of the
    exponent of ~0.1-0.15 (the quick design's is ~0.05, see the power statement)."""
    from analysis.checks import rudi_rosasco as rr

    n0 = RR_PARAMS["ns"][0]
    _learner_width(monkeypatch, rr, lambda n: (n0 / n) ** 2)
    v = rr.verdict(rr.run(RR_PARAMS, global_random_seed))
    assert v["verdict"] == "fail"
    assert any("faster than sqrt(n) log n" in f or "no knee" in f
               for f in v["statistic"]["failed"]), v["statistic"]


def test_rudi_rosasco_rejects_a_knee_that_does_not_grow(monkeypatch, global_random_seed,
                                                        one_thread):
    """Lower side: a learner that uses (n / n0)^2 times its nominal frequencies reaches the exact
    excess risk at a nominal knee that shrinks with n (exponent < 0 < N(lambda)'s ~0.3); the
    check must reject it as growing slower than the effective dimension.  The grid starts at
    m = 1 here: from m = 4 the knees of the larger n sat on the grid's floor, the measured
    exponent stopped near -0.35 with a bootstrap se of ~0.18, and 3 of seeds 0-49 passed; from
    m = 1 the exponent is ~-1.1 and every seed 0-99 rejects."""
    from analysis.checks import rudi_rosasco as rr

    n0 = RR_PARAMS["ns"][0]
    _learner_width(monkeypatch, rr, lambda n: (n / n0) ** 2)
    v = rr.verdict(rr.run(dict(RR_PARAMS, sizes=[1, 2, 3] + RR_PARAMS["sizes"]),
                          global_random_seed))
    assert v["verdict"] == "fail"
    assert any("slower than the effective dimension" in f for f in v["statistic"]["failed"]), \
        v["statistic"]


def test_rudi_rosasco_fails_on_recycled_frequencies(monkeypatch, global_random_seed, one_thread):
    """Negative control through the map: a map that repeats its first ceil(sqrt(M)) frequencies
    has at most ~sqrt(M) distinct features, so its excess risk never comes within 20% of exact
    ridge at the larger n (or the knee grows far too fast): the check must fail."""
    import numpy as np

    from analysis.checks import rudi_rosasco as rr

    real = rr.build_map

    class Recycled(type(real(2, 0))):
        def fit(self, X, y=None):
            super().fit(X, y)
            W = self.frequencies_
            k = int(np.ceil(np.sqrt(len(W))))
            self.frequencies_ = np.ascontiguousarray(W[np.arange(len(W)) % k])
            return self

    monkeypatch.setattr(rr, "build_map",
                        lambda m, rs: Recycled(**real(m, rs).get_params()))
    v = rr.verdict(rr.run(RR_PARAMS, global_random_seed))
    assert v["verdict"] == "fail"


# ------------------------------------------------------------------ paper_figures features_story
def test_paper_figure_features_story_quick(tmp_path, capsys):
    """One command regenerates the 1e4-vs-1e2 figure and its table (tiny synthetic data;
    KDDCUP99 left out must be listed as missing)."""
    from _tiny_data import write_tiny_data

    from paper_figures import __main__ as cli

    data = write_tiny_data(tmp_path / "data", skip=("kddcup99",))
    out = tmp_path / "out"
    assert cli.main(["features_story", "--quick", "--data-dir", str(data), "--out", str(out),
                     "--datasets", "cpu_act,adult,kddcup99", "--reps", "1"]) == 0
    md = (out / "features_story.md").read_text()
    assert "QUICK MODE" in md and "| cpu_act |" in md and "| adult |" in md
    assert "Missing: kddcup99" in md and "5,000" in md and "73,778" in md
    assert (out / "features_story.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------------ power statements (issue 13)
@pytest.mark.parametrize("name", ["features_needed", "kernel_interpolation_limit",
                                  "rudi_rosasco", "sup_error_rate", "lemma1", "learner_paths"])
def test_learning_checks_state_their_power(name, one_thread):
    """Each verdict carries ``detectable`` (computed effects) and the power statement made from
    them (contract version 3; the validator refuses any other string)."""
    from analysis import power
    from analysis.checks import load, validate_verdict

    mod = load(name)
    res = mod.run(mod.PARAMS["smoke"], 0)
    v = validate_verdict(mod, mod.verdict(res), res)
    # the smoke designs of kernel_interpolation_limit and sup_error_rate are too small to
    # resolve any effect of their grids (their quick designs do: test_analysis_learning_power)
    if name not in ("kernel_interpolation_limit", "sup_error_rate"):
        assert v["detectable"], v["statistic"]
    assert "detectable" in v
    assert v["power"] == power.statement(v["detectable"])
    assert "0.9" in v["power"] or not v["detectable"]
    assert callable(mod.audit)
