/* One SIMD variant of the randfeat FWHT: a template included by fwht.c once per (ISA, type).
 *
 * Hand-written (not generated).  fwht.c defines, before each #include of this file:
 *   RF_SFX            name suffix, e.g. avx512_float
 *   RF_ATTR           function attributes (target ISA)
 *   RF_T, RF_V        element type, vector type
 *   RF_LOGW           log2 of the lanes per vector (RF_W = 1 << RF_LOGW)
 *   RF_LOGR           log2 of the vectors held in registers by the first pass (block of
 *                     RF_W << RF_LOGR elements: RF_LOGW + RF_LOGR levels in one pass)
 *   RF_MAXRAD         log2 of the largest radix of a memory pass (levels fused per pass)
 *   RF_LEAF           log2 of the largest length transformed iteratively (fits in L1); longer
 *                     transforms recurse on 2**RF_TOPRAD sub-blocks, then do one radix pass
 *   RF_TOPRAD         log2 of the radix of the passes above the leaf (over L2 / memory)
 *   RF_LOAD(p), RF_STORE(p, v), RF_ADD(a, b), RF_SUB(a, b)
 *   RF_INTRA_ALL(v)   the RF_LOGW butterfly levels inside one vector (strides 1, 2, .., RF_W/2)
 *   RF_SCALE(v, s)    v * broadcast(s)
 *
 * Every butterfly is an exactly rounded a+b / a-b of the same operands as the scalar reference,
 * and the data-flow graph is the same (levels in increasing stride), so all variants return
 * results bit-identical to the scalar code.
 */

#define RF_CAT_(a, b) a##_##b
#define RF_CAT(a, b) RF_CAT_(a, b)
#define RF_FN(name) RF_CAT(name, RF_SFX)
#define RF_W (1 << RF_LOGW)
#define RF_R (1 << RF_LOGR)

/* Butterfly levels k0 .. k0+nl-1 (strides 2**k in units of vectors) on the vectors v[0..2**nl).
 * With constant arguments this unrolls completely and v[] lives in registers. */
#define RF_VLEVEL(v, nvec, h)                                                      \
    do {                                                                           \
        _Pragma("GCC unroll 16")                                                   \
        for (int i_ = 0; i_ < 16; ++i_) {                                          \
            if (i_ < (nvec) && (h) < (nvec) && !(i_ & (h))) {                      \
                RF_V a_ = (v)[i_], b_ = (v)[i_ + (h)];                             \
                (v)[i_] = RF_ADD(a_, b_);                                          \
                (v)[i_ + (h)] = RF_SUB(a_, b_);                                    \
            }                                                                      \
        }                                                                          \
    } while (0)
#define RF_VBUTTERFLY(v, nvec)                                                     \
    do {                                                                           \
        RF_VLEVEL(v, nvec, 1);                                                     \
        RF_VLEVEL(v, nvec, 2);                                                     \
        RF_VLEVEL(v, nvec, 4);                                                     \
        RF_VLEVEL(v, nvec, 8);                                                     \
    } while (0)

/* First pass: nvec contiguous vectors, all RF_LOGW + log2(nvec) lowest levels in registers;
 * when sc (a compile-time constant at every call site) the result is multiplied by s. */
static inline RF_ATTR RF_ALWAYS_INLINE void RF_FN(rf_block)(RF_T *x, const int nvec,
                                                            const int sc, RF_T s)
{
    RF_V v[16]; /* >= RF_R; 16 keeps -Warray-bounds quiet on dead unrolled paths */
    _Pragma("GCC unroll 16")
    for (int k = 0; k < nvec; ++k) v[k] = RF_INTRA_ALL(RF_LOAD(x + k * RF_W));
    RF_VBUTTERFLY(v, nvec);
    _Pragma("GCC unroll 16")
    for (int k = 0; k < nvec; ++k) RF_STORE(x + k * RF_W, sc ? RF_SCALE(v[k], s) : v[k]);
}

/* One memory pass of radix 2**r: levels of strides h, 2h, ..., 2**(r-1) h (h a multiple of RF_W)
 * over the n values at x; the result is multiplied by s when sc. */
static inline RF_ATTR RF_ALWAYS_INLINE void RF_FN(rf_pass)(RF_T *x, ptrdiff_t n, ptrdiff_t h,
                                                           const int r, const int sc, RF_T s)
{
    const int m = 1 << r;
    for (ptrdiff_t i = 0; i < n; i += h << r) {
        RF_T *p = x + i;
        for (ptrdiff_t j = 0; j < h; j += RF_W) {
            RF_V v[16];
            _Pragma("GCC unroll 16")
            for (int k = 0; k < m; ++k) v[k] = RF_LOAD(p + j + k * h);
            RF_VBUTTERFLY(v, m);
            _Pragma("GCC unroll 16")
            for (int k = 0; k < m; ++k) RF_STORE(p + j + k * h, sc ? RF_SCALE(v[k], s) : v[k]);
        }
    }
}

static RF_ATTR void RF_FN(rf_pass_any)(RF_T *x, ptrdiff_t n, ptrdiff_t h, int r, int sc, RF_T s)
{
#define RF_PASS_CASE(R)                                                            \
    case R:                                                                        \
        if (sc) RF_FN(rf_pass)(x, n, h, R, 1, s); else RF_FN(rf_pass)(x, n, h, R, 0, s); \
        break;
    switch (r) {
    RF_PASS_CASE(1)
    RF_PASS_CASE(2)
    RF_PASS_CASE(3)
#if RF_MAXRAD >= 4
    RF_PASS_CASE(4)
#endif
    default: break;
    }
#undef RF_PASS_CASE
}

/* Iterative transform of a length that fits in L1: blocks in registers, then radix passes.
 * The last pass multiplies by s when sc. */
static RF_ATTR void RF_FN(rf_leaf)(RF_T *x, int log_n, int sc, RF_T s)
{
    const ptrdiff_t n = (ptrdiff_t)1 << log_n;
    int rem;
    ptrdiff_t h;
    if (log_n <= RF_LOGW + RF_LOGR) {
#define RF_BLOCK_CASE(K, NV)                                                       \
        case K:                                                                    \
            if (sc) RF_FN(rf_block)(x, NV, 1, s); else RF_FN(rf_block)(x, NV, 0, s); \
            break;
        switch (log_n - RF_LOGW) {
        RF_BLOCK_CASE(0, 1)
        RF_BLOCK_CASE(1, 2)
        RF_BLOCK_CASE(2, 4)
        RF_BLOCK_CASE(3, 8)
#if RF_LOGR >= 4
        RF_BLOCK_CASE(4, 16)
#endif
        default: break;
        }
#undef RF_BLOCK_CASE
        return;
    }
    for (ptrdiff_t i = 0; i < n; i += RF_W * RF_R) RF_FN(rf_block)(x + i, RF_R, 0, s);
    rem = log_n - RF_LOGW - RF_LOGR;
    h = (ptrdiff_t)RF_W * RF_R;
    while (rem > 0) {
        /* balanced split of the remaining levels into ceil(rem / RF_MAXRAD) passes */
        int passes = (rem + RF_MAXRAD - 1) / RF_MAXRAD;
        int r = (rem + passes - 1) / passes;
        RF_FN(rf_pass_any)(x, n, h, r, sc && r == rem, s);
        h <<= r;
        rem -= r;
    }
}

/* Cache-blocked recursion (as FFHT): transform the 2**r sub-blocks, then one radix-2**r pass
 * (which multiplies by s when sc). */
static RF_ATTR void RF_FN(rf_rec)(RF_T *x, int log_n, int sc, RF_T s)
{
    int r, sub;
    ptrdiff_t m;
    if (log_n <= RF_LEAF) {
        RF_FN(rf_leaf)(x, log_n, sc, s);
        return;
    }
    r = log_n - RF_LEAF;
    if (r > RF_TOPRAD) r = RF_TOPRAD;
    sub = log_n - r;
    m = (ptrdiff_t)1 << sub;
    for (ptrdiff_t i = 0; i < ((ptrdiff_t)1 << r); ++i) RF_FN(rf_rec)(x + i * m, sub, 0, s);
    RF_FN(rf_pass_any)(x, (ptrdiff_t)1 << log_n, m, r, sc, s);
}

/* Entry points: log_n in [0, 30] (checked by the caller). */
static RF_ATTR void RF_FN(rf_fwht)(RF_T *x, int log_n)
{
    if (log_n < RF_LOGW) {
        RF_CAT(rf_fwht_scalar, RF_T)(x, log_n);
        return;
    }
    RF_FN(rf_rec)(x, log_n, 0, (RF_T)1);
}

/* The transform multiplied by s, fused into the last pass (same bits as transform, then scale). */
static RF_ATTR void RF_FN(rf_fwht_scaled)(RF_T *x, int log_n, RF_T s)
{
    if (log_n < RF_LOGW) {
        const ptrdiff_t n = (ptrdiff_t)1 << log_n;
        RF_CAT(rf_fwht_scalar, RF_T)(x, log_n);
        for (ptrdiff_t i = 0; i < n; ++i) x[i] *= s;
        return;
    }
    RF_FN(rf_rec)(x, log_n, 1, s);
}

/* x[0..n) *= s, vectorised (n a multiple of RF_W or not). */
static RF_ATTR void RF_FN(rf_scale)(RF_T *x, ptrdiff_t n, RF_T s)
{
    ptrdiff_t i = 0;
    for (; i + RF_W <= n; i += RF_W) RF_STORE(x + i, RF_SCALE(RF_LOAD(x + i), s));
    for (; i < n; ++i) x[i] *= s;
}

#undef RF_W
#undef RF_R
#undef RF_FN
#undef RF_CAT
#undef RF_CAT_
#undef RF_VBUTTERFLY
#undef RF_VLEVEL

/* The instantiation parameters defined by the includer (fwht.c) end with this instance. */
#undef RF_SFX
#undef RF_ATTR
#undef RF_T
#undef RF_V
#undef RF_LOGW
#undef RF_LOGR
#undef RF_MAXRAD
#undef RF_LEAF
#undef RF_TOPRAD
#undef RF_LOAD
#undef RF_STORE
#undef RF_ADD
#undef RF_SUB
#undef RF_INTRA_ALL
#undef RF_SCALE
