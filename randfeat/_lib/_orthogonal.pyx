"""Kernels of the orthogonal and quasi-Monte Carlo frequency samplers.  Private: use
:mod:`randfeat._sampling`, which validates, draws the random numbers and allocates.

``haar_rows`` — Haar-distributed orthogonal blocks from Gaussian Householder vectors
(G. W. Stewart, "The efficient generation of random orthogonal matrices with an application to
condition estimators", SIAM J. Numer. Anal. 17, 1980; F. Mezzadri, Notices AMS 54, 2007).
Householder QR of a d x d standard Gaussian matrix G builds its k-th reflector from the first
column of the trailing (d - k) x (d - k) block of H_k ... H_1 G; that block is again iid standard
Gaussian and independent of H_1 .. H_k (an orthogonal map of iid Gaussian columns), so the
reflectors have the law of reflectors built from fresh Gaussian vectors x_k of lengths
d, d - 1, ..., 1.  With LAPACK's ``dlarfg`` convention (beta_k = -sign(x_k1) ||x_k||, tau_k =
(beta_k - x_k1) / beta_k, v_k = (1, x_k2.. / (x_k1 - beta_k))) and the sign correction
Q <- Q diag(sign beta_k), Q = H_1 ... H_d diag(sign beta) is then exactly Haar, as for the QR of
G — without factorising G.  Q e_j = H_1 ... H_j e_j needs j reflectors, so the columns of Q
cost (4/3) d^3 flops per block in all (the cost of LAPACK's ``dorgqr``; ``geqrf`` + ``orgqr``
of G is (8/3) d^3) from d (d + 1) / 2 normals (against d^2).  A block cut to m rows needs only
its first m reflectors.

The columns are formed here, 32 at a time (``rf_haar_panel``: the panel stays in the L2 cache
while the reflectors stream by; vectorised across the 32 columns only, without FMA contraction),
not by LAPACK: OpenBLAS's threaded gemm rounds differently for some sizes with 1 and 2 BLAS
threads (measured: ``dorgqr`` at d = 513 differed by 2e-16), and the frequencies must be the
same bits whatever the thread settings.  This code uses no BLAS; its panels (independent
columns) may run on several OpenMP threads without changing a bit.

Memory layout: column k of Q is row k of the output block, the frequency.  The rows of a block
are thus the columns of a Haar matrix (Q^T is Haar too), scaled by ``sign beta_k * scale_k``.

``ndtri_rows`` — the inverse standard normal CDF by Wichura's AS241 (PPND16, Applied
Statistics 37, 1988; relative error about 1e-16), fused with the per-row scaling of the
frequencies and the clipping of the points to the open unit interval.

``ndtri_rows`` runs on the calling thread; both notice Ctrl-C between panels / rows.
"""
from libc.math cimport copysign, fabs, log, sqrt
from libc.stdlib cimport calloc, free, malloc

from cython.parallel cimport prange

from randfeat._lib._openmp cimport omp_get_thread_num
from randfeat._lib._policy cimport (Interrupt, check_threads, effective_threads, ensure_threads,
                                    interrupt_init, interrupted, raise_if_interrupted)


cdef extern from *:
    """
    /* Columns j0 .. j0 + R - 1 of Q = H_0 H_1 ... H_{d-1} into the panel X (d x R, row-major:
       X[i * R + c] is entry i of column j0 + c), for the reflectors H_k = I - tau_k v_k v_k^T,
       v_k = (0 .. 0, 1, V[off_k + 1], ..., V[off_k + d - k - 1]) (the packed layout of the
       normals: vector k at off_k = k d - k (k - 1) / 2).  Q e_j = H_0 ... H_j e_j, so the
       reflectors k = kmax - 1 .. 0 are applied, kmax = j0 + R (a reflector k > j leaves e_j
       exactly as it is: its dot product is an exact 0).  Vectorised across the R columns only,
       so every entry is computed in one fixed order of operations whatever the SIMD width. */
    #define RF_HAAR_R 32
    #if defined(__GNUC__) && !defined(__clang__)
    __attribute__((optimize("fp-contract=off")))
    #endif
    static void rf_haar_panel(const double *V, const double *tau, Py_ssize_t d, Py_ssize_t j0,
                              Py_ssize_t kmax, double *X)
    {
        const Py_ssize_t R = RF_HAAR_R;
        double t[RF_HAAR_R];
        Py_ssize_t i, c, k;
        for (i = 0; i < d * R; i++) X[i] = 0.0;
        for (c = 0; c < R && j0 + c < d; c++) X[(j0 + c) * R + c] = 1.0;
        for (k = kmax - 1; k >= 0; k--) {
            const double *v = V + (k * d - k * (k - 1) / 2);
            const double tk = tau[k];
            double *xk = X + k * R;
            if (tk == 0.0) continue;
            for (c = 0; c < R; c++) t[c] = xk[c];
            for (i = 1; i < d - k; i++) {
                const double vi = v[i];
                const double *xi = xk + i * R;
                for (c = 0; c < R; c++) t[c] = t[c] + vi * xi[c];
            }
            for (c = 0; c < R; c++) { t[c] = t[c] * tk; xk[c] = xk[c] - t[c]; }
            for (i = 1; i < d - k; i++) {
                const double vi = v[i];
                double *xi = xk + i * R;
                for (c = 0; c < R; c++) xi[c] = xi[c] - vi * t[c];
            }
        }
    }
    """
    int RF_HAAR_R
    void rf_haar_panel(const double *V, const double *tau, Py_ssize_t d, Py_ssize_t j0,
                       Py_ssize_t kmax, double *X) noexcept nogil


def haar_rows(const double[::1] g, const double[::1] scale, double[:, ::1] out,
              double[::1] work, int n_threads=1):
    """Fill ``out`` (n, d) with Haar orthogonal blocks of d rows (the last cut to n mod d).

    ``g``: the normals, block after block, m d - m (m - 1) / 2 of them for a block of m rows
    (vector k of the block, of length d - k, is g[pos : pos + d - k]).  ``scale`` (n,): row
    multipliers (the radii).  ``work``: scratch of ``haar_work_size(n, d, n_threads)`` doubles
    (the reflectors of every block, tau, signs, one panel per thread).  No BLAS: the reflectors
    are built on the calling thread, then the panels of all blocks (independent columns) are
    spread over up to ``n_threads`` OpenMP threads, each computed in one fixed order of
    operations, so the result is the same bits for every thread count.
    """
    cdef Py_ssize_t n = out.shape[0], d = out.shape[1], R = RF_HAAR_R
    cdef Py_ssize_t b, k, i, c, m, r0, j0, p, kmax, off, pos = 0
    cdef Py_ssize_t nb = (n + d - 1) // d if d else 0, ppb = (d + R - 1) // R
    cdef Py_ssize_t full = n // d if d else 0, rem = n - full * d, nv = d * (d + 1) // 2
    cdef double alpha, xnorm, beta, f, s
    cdef double *V
    cdef double *tau
    cdef double *sgn
    cdef double *Vb
    cdef double *X
    cdef double *row
    cdef int nt
    cdef Interrupt intr
    check_threads(n_threads)
    nt = _haar_threads(n, d, n_threads)
    if (g.shape[0] != full * nv + rem * d - rem * (rem - 1) // 2 or scale.shape[0] != n
            or work.shape[0] < nb * nv + 2 * n + nt * d * R):
        raise ValueError("haar_rows: g, scale or work has the wrong length")
    if n == 0:
        return 0
    ensure_threads(nt)
    V = &work[0]
    tau = V + nb * nv
    sgn = tau + n
    interrupt_init(&intr, d * d * R)
    with nogil:
        # reflectors of every block (LAPACK's dlarfg convention) and the signs of diag(R)
        for b in range(nb):
            r0 = b * d
            m = n - r0
            if m > d:
                m = d
            Vb = V + b * nv
            for k in range(m):
                off = k * d - k * (k - 1) // 2
                alpha = g[pos]
                xnorm = 0.0
                for i in range(1, d - k):
                    xnorm = xnorm + g[pos + i] * g[pos + i]
                if xnorm == 0.0:               # H = I, beta = alpha
                    tau[r0 + k] = 0.0
                    beta = alpha
                else:
                    beta = -copysign(sqrt(alpha * alpha + xnorm), alpha)
                    tau[r0 + k] = (beta - alpha) / beta
                    f = 1.0 / (alpha - beta)
                    for i in range(1, d - k):
                        Vb[off + i] = g[pos + i] * f
                sgn[r0 + k] = -1.0 if beta < 0.0 else 1.0
                pos += d - k
        # columns of Q, R at a time (one panel per item), into rows of the output
        for p in prange(nb * ppb, num_threads=nt, schedule="static"):
            if interrupted(&intr):
                continue
            r0 = (p // ppb) * d
            j0 = (p % ppb) * R
            m = n - r0
            if m > d:
                m = d
            if j0 >= m:
                continue
            kmax = j0 + R
            if kmax > m:
                kmax = m
            X = sgn + n + omp_get_thread_num() * d * R
            rf_haar_panel(V + (p // ppb) * nv, tau + r0, d, j0, kmax, X)
            for c in range(kmax - j0):
                row = &out[r0 + j0 + c, 0]
                s = sgn[r0 + j0 + c] * scale[r0 + j0 + c]
                for i in range(d):
                    row[i] = X[i * R + c] * s
    raise_if_interrupted(&intr)
    return 0


cdef int _haar_threads(Py_ssize_t n, Py_ssize_t d, int n_threads) noexcept nogil:
    # items: panels of 32 columns; work ~ (4/3) n d^2 flops; at least ~2 ms of it per thread
    return effective_threads(n_threads, ((n + d - 1) // d) * ((d + RF_HAAR_R - 1) // RF_HAAR_R),
                             n * d * d, 1 << 23)


def haar_work_size(Py_ssize_t n, Py_ssize_t d, int n_threads=1):
    """Doubles of scratch ``haar_rows`` needs for n rows in dimension d, up to n_threads."""
    cdef Py_ssize_t nb = (n + d - 1) // d if d else 0
    return nb * (d * (d + 1) // 2) + 2 * n + _haar_threads(n, d, n_threads) * d * RF_HAAR_R


cdef inline double _ppnd16(double p) noexcept nogil:
    """Wichura's AS241 (PPND16): the standard normal quantile of p in (0, 1)."""
    cdef double q = p - 0.5, r, num, den, x
    if fabs(q) <= 0.425:
        r = 0.180625 - q * q
        num = (((((((2.5090809287301226727e+3 * r + 3.3430575583588128105e+4) * r
                    + 6.7265770927008700853e+4) * r + 4.5921953931549871457e+4) * r
                  + 1.3731693765509461125e+4) * r + 1.9715909503065514427e+3) * r
                + 1.3314166789178437745e+2) * r + 3.3871328727963666080e+0) * q
        den = (((((((5.2264952788528545610e+3 * r + 2.8729085735721942674e+4) * r
                    + 3.9307895800092710610e+4) * r + 2.1213794301586595867e+4) * r
                  + 5.3941960214247511077e+3) * r + 6.8718700749205790830e+2) * r
                + 4.2313330701600911252e+1) * r + 1.0)
        return num / den
    r = p if q <= 0.0 else 1.0 - p
    r = sqrt(-log(r))
    if r <= 5.0:
        r = r - 1.6
        num = (((((((7.74545014278341407640e-4 * r + 2.27238449892691845833e-2) * r
                    + 2.41780725177450611770e-1) * r + 1.27045825245236838258e+0) * r
                  + 3.64784832476320460504e+0) * r + 5.76949722146069140550e+0) * r
                + 4.63033784615654529590e+0) * r + 1.42343711074968357734e+0)
        den = (((((((1.05075007164441684324e-9 * r + 5.47593808499534494600e-4) * r
                    + 1.51986665636164571966e-2) * r + 1.48103976427480074590e-1) * r
                  + 6.89767334985100004550e-1) * r + 1.67638483018380384940e+0) * r
                + 2.05319162663775882187e+0) * r + 1.0)
    else:
        r = r - 5.0
        num = (((((((2.01033439929228813265e-7 * r + 2.71155556874348757815e-5) * r
                    + 1.24266094738807843860e-3) * r + 2.65321895265761230930e-2) * r
                  + 2.96560571828504891230e-1) * r + 1.78482653991729133580e+0) * r
                + 5.46378491116411436990e+0) * r + 6.65790464350110377720e+0)
        den = (((((((2.04426310338993978564e-15 * r + 1.42151175831644588870e-7) * r
                    + 1.84631831751005468180e-5) * r + 7.86869131145613259100e-4) * r
                  + 1.48753612908506148525e-2) * r + 1.36929880922735805310e-1) * r
                + 5.99832206555887937690e-1) * r + 1.0)
    x = num / den
    return -x if q < 0.0 else x


def ndtri_rows(const double[:, ::1] u, const double[::1] mult, double shift, double lo,
               double[:, ::1] out):
    """out[i, j] = ndtri(min(max(u[i, j] + shift, lo), 1 - lo)) * mult[i], j < out.shape[1].

    ``out`` may be ``u`` itself (same shape; each value is read before it is written).
    """
    cdef Py_ssize_t n = out.shape[0], c = out.shape[1], i, j
    cdef double hi = 1.0 - lo, p, f
    cdef Interrupt intr
    interrupt_init(&intr, 10 * c)
    with nogil:
        for i in range(n):
            if interrupted(&intr):
                break
            f = mult[i]
            for j in range(c):
                p = u[i, j] + shift
                if p < lo:
                    p = lo
                elif p > hi:
                    p = hi
                out[i, j] = _ppnd16(p) * f
    raise_if_interrupted(&intr)


def sobol_points(const unsigned int[:, ::1] sv, const unsigned int[::1] shift, int bits,
                 double[:, ::1] out):
    """The first n scrambled Sobol' points, at the centres of their cells of width 2^-bits.

    ``sv`` (bits, s): the scrambled direction numbers (row k: direction number k of every
    coordinate), ``shift`` (s,): the digital shift.  Point 0 is ``shift``, point i is point
    i - 1 XOR ``sv[ctz(i)]`` (Gray-code order, as scipy.stats.qmc.Sobol), written as
    (integer + 1/2) 2^-bits.  ``out`` (n, s) with n <= 2^bits.
    """
    cdef Py_ssize_t n = out.shape[0], s = out.shape[1], i, j, k
    cdef double h = 1.0
    cdef unsigned int[::1] q = shift.copy()
    cdef Interrupt intr
    if sv.shape[1] != s or shift.shape[0] != s or sv.shape[0] != bits or bits > 31:
        raise ValueError("sobol_points: sv, shift and out disagree")
    if n > (<Py_ssize_t>1) << bits:
        raise ValueError(f"sobol_points: at most 2**{bits} points, asked for {n}")
    for k in range(bits):
        h = h * 0.5
    interrupt_init(&intr, 2 * s)
    with nogil:
        for i in range(n):
            if interrupted(&intr):
                break
            if i > 0:
                k = 0
                while not ((i >> k) & 1):
                    k += 1
                for j in range(s):
                    q[j] = q[j] ^ sv[k, j]
            for j in range(s):
                out[i, j] = (<double>q[j] + 0.5) * h
    raise_if_interrupted(&intr)


cdef inline Py_ssize_t _halton_size(Py_ssize_t b, Py_ssize_t n, Py_ssize_t k) noexcept nogil:
    """Digits that points 0 .. n - 1 take at base-b position k: min(b, (n - 1) // b^k + 1)."""
    cdef Py_ssize_t q = n - 1, t
    for t in range(k):
        q = q // b
        if q == 0:
            break
    return b if q + 1 > b else q + 1


def halton_layout(const Py_ssize_t[::1] bases, const Py_ssize_t[::1] ndig, Py_ssize_t n,
                  Py_ssize_t[:, ::1] toff):
    """Offsets of the digit tables of scrambled Halton points 0 .. n - 1 (n >= 1).

    Coordinate j (base ``bases[j]``, ``ndig[j]`` digit positions) has one table per position
    k, of ``_halton_size`` entries (the digits that occur there); ``toff[j, k]`` is its start
    in the flat table array and ``toff[j, ndig[j]]`` its end (``toff`` is (s, max ndig + 1),
    the tables laid out coordinate after coordinate).  Returns the total number of entries,
    which is also the number of uniforms ``halton_tables`` takes.
    """
    cdef Py_ssize_t s = bases.shape[0], j, k, pos = 0
    if ndig.shape[0] != s or toff.shape[0] != s or n < 1:
        raise ValueError("halton_layout: bases, ndig and toff disagree")
    for j in range(s):
        if bases[j] < 2 or ndig[j] < 1 or ndig[j] >= toff.shape[1]:
            raise ValueError("halton_layout: a base is below 2 or ndig does not fit toff")
    with nogil:
        for j in range(s):
            for k in range(ndig[j]):
                toff[j, k] = pos
                pos += _halton_size(bases[j], n, k)
            toff[j, ndig[j]] = pos
    return pos


cdef inline Py_ssize_t _fy_index(double u, Py_ssize_t t, Py_ssize_t b) noexcept nogil:
    """Step t of a Fisher-Yates shuffle of b items: the position in [t, b) that u picks."""
    cdef Py_ssize_t r = t + <Py_ssize_t>(u * (b - t))
    return b - 1 if r >= b else r


def halton_tables(const Py_ssize_t[::1] bases, const Py_ssize_t[::1] ndig,
                  const Py_ssize_t[:, ::1] toff, const double[::1] u, double[::1] tab):
    """Fill the digit tables: entry a of table (j, k) is pi_jk(a) b^-(k+1), pi_jk a uniformly
    random permutation of {0 .. b - 1} (Owen's random-permutation scrambling of the Halton
    sequence, as ``scipy.stats.qmc.Halton(scramble=True)``), of which only the entries of the
    digits that occur are drawn: a partial Fisher-Yates shuffle with m steps, step t swapping
    positions t and t + floor(u (b - t)), gives the first m values of a uniform permutation.
    The weight b^-(k+1) is 1/b divided by b k times, in scipy's order of operations.
    ``u``: one uniform in [0, 1) per entry, in table order."""
    cdef Py_ssize_t s = bases.shape[0], j, k, t, r, m, b, off, bmax = 2, tmp
    cdef double w
    cdef Py_ssize_t *perm
    if u.shape[0] != tab.shape[0] or ndig.shape[0] != s or toff.shape[0] != s:
        raise ValueError("halton_tables: u, tab, bases, ndig and toff disagree")
    for j in range(s):
        if toff[j, ndig[j]] > tab.shape[0]:
            raise ValueError("halton_tables: tab is shorter than the layout")
        if bases[j] > bmax:
            bmax = bases[j]
    perm = <Py_ssize_t *>malloc(bmax * sizeof(Py_ssize_t))
    if perm == NULL:
        raise MemoryError()
    with nogil:
        for t in range(bmax):
            perm[t] = t
        for j in range(s):
            b = bases[j]
            w = 1.0 / b
            for k in range(ndig[j]):
                off = toff[j, k]
                m = toff[j, k + 1] - off
                for t in range(m):
                    r = _fy_index(u[off + t], t, b)
                    tmp = perm[t]
                    perm[t] = perm[r]
                    perm[r] = tmp
                    tab[off + t] = <double>perm[t] * w
                # undo the swaps (last first): perm is the identity again
                for t in range(m - 1, -1, -1):
                    r = _fy_index(u[off + t], t, b)
                    tmp = perm[t]
                    perm[t] = perm[r]
                    perm[r] = tmp
                w = w / b
    free(perm)


def halton_points(const Py_ssize_t[::1] bases, const Py_ssize_t[::1] ndig,
                  const Py_ssize_t[:, ::1] toff, const double[::1] tab, double[:, ::1] out):
    """Scrambled Halton points 0 .. n - 1 into ``out`` (n, s): coordinate j of point i is
    tab[toff[j, 0] + a_0] + (sum over k = ndig - 1 .. 1 of tab[toff[j, k] + a_k]), a_k the
    base-b digits of i (least significant first); the high part is summed smallest first and
    kept until digit 0 wraps (every b points), so a coordinate costs one look-up and one add.
    (scipy's ``van_der_corput`` sums k = 0 up: the same terms, within an ulp.)  The digits are
    carried from point to point (an odometer), so no division is done."""
    cdef Py_ssize_t n = out.shape[0], s = out.shape[1], i, j, k, kmax = toff.shape[1], b
    cdef Py_ssize_t *a
    cdef Py_ssize_t *dig
    cdef double *hi
    cdef const Py_ssize_t *to
    cdef Interrupt intr
    if bases.shape[0] != s or ndig.shape[0] != s or toff.shape[0] != s:
        raise ValueError("halton_points: bases, ndig, toff and out disagree")
    for j in range(s):
        if ndig[j] >= kmax or ndig[j] < 1 or toff[j, ndig[j]] > tab.shape[0]:
            raise ValueError("halton_points: toff does not fit ndig or tab")
    if n == 0 or s == 0:
        return
    a = <Py_ssize_t *>calloc(s * kmax, sizeof(Py_ssize_t))
    hi = <double *>calloc(s, sizeof(double))
    if a == NULL or hi == NULL:
        free(a)
        free(hi)
        raise MemoryError()
    interrupt_init(&intr, 2 * s)
    with nogil:
        for j in range(s):
            hi[j] = _halton_high(&tab[0], &toff[j, 0], a + j * kmax, ndig[j])
        for i in range(n):
            if interrupted(&intr):
                break
            for j in range(s):
                dig = a + j * kmax
                to = &toff[j, 0]
                out[i, j] = tab[to[0] + dig[0]] + hi[j]
                dig[0] += 1
                b = bases[j]
                if dig[0] == b:
                    # carry (a carry past the last table happens only after point n - 1)
                    k = 0
                    while dig[k] == b and k + 1 < kmax:
                        dig[k] = 0
                        k += 1
                        dig[k] += 1
                    if i + 1 < n:
                        hi[j] = _halton_high(&tab[0], to, dig, ndig[j])
    free(a)
    free(hi)
    raise_if_interrupted(&intr)


cdef inline double _halton_high(const double *tab, const Py_ssize_t *to, const Py_ssize_t *dig,
                                Py_ssize_t nd) noexcept nogil:
    """sum_{k = nd - 1 .. 1} tab[to[k] + dig[k]], smallest weight first."""
    cdef double v = 0.0
    cdef Py_ssize_t k
    for k in range(nd - 1, 0, -1):
        v = v + tab[to[k] + dig[k]]
    return v
