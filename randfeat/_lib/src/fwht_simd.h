/* One SIMD variant of the randfeat FWHT: a template included by fwht_sched.h once per (ISA,
 * type, schedule).
 *
 * Hand-written (not generated).  fwht.c defines, before each #include of fwht_sched.h:
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
 *   RF_FMA(a, b, c)   a * b + c rounded once; RF_ZERO() the zero vector; RF_SET1(c) broadcast
 *   RF_SCHED_FMA      0: the butterflies' subtractions are vector subtractions ("add"
 *                     schedule); 1: fma(b, -1, a) ("fma" schedule, function names end in _fma),
 *                     which is a - b rounded once, the same bits, issued on the FMA pipes
 *   RF_ANY_NAN(v)     1 when a lane of v is NaN, else 0
 *
 * Every butterfly is an exactly rounded a+b / a-b of the same operands as the scalar reference,
 * and the data-flow graph is the same (levels in increasing stride), so all variants return
 * results bit-identical to the scalar code.
 */

#define RF_CAT_(a, b) a##_##b
#define RF_CAT(a, b) RF_CAT_(a, b)
#if RF_SCHED_FMA
#define RF_FN(name) RF_CAT(RF_CAT(name, RF_SFX), fma)
#else
#define RF_FN(name) RF_CAT(name, RF_SFX)
#endif
/* A butterfly's subtraction: in the "fma" schedule fma(b, -1, a) (a - b rounded once: the same
 * bits), except in a checked pass, whose check already keeps the FMA pipes busy, and in a
 * transform short enough to be one in-register block (mode bit RF_M_ADDONLY), whose FMA pipes are
 * busy with RF_INTRA_ALL (there the fma schedule measured up to 8 % slower). */
#define RF_M_ADDONLY 4
#define RF_BSUB(a, b, fm)                                                          \
    ((RF_SCHED_FMA && (fm)) ? RF_FMA((b), RF_SET1(-1), (a)) : RF_SUB((a), (b)))
#define RF_W (1 << RF_LOGW)
#define RF_R (1 << RF_LOGR)

/* Butterfly levels k0 .. k0+nl-1 (strides 2**k in units of vectors) on the vectors v[0..2**nl).
 * With constant arguments this unrolls completely and v[] lives in registers. */
#define RF_VLEVEL(v, nvec, h, fm)                                                  \
    do {                                                                           \
        _Pragma("GCC unroll 16")                                                   \
        for (int i_ = 0; i_ < 16; ++i_) {                                          \
            if (i_ < (nvec) && (h) < (nvec) && !(i_ & (h))) {                      \
                RF_V a_ = (v)[i_], b_ = (v)[i_ + (h)];                             \
                (v)[i_] = RF_ADD(a_, b_);                                          \
                (v)[i_ + (h)] = RF_BSUB(a_, b_, fm);                               \
            }                                                                      \
        }                                                                          \
    } while (0)
#define RF_VBUTTERFLY(v, nvec, mode)                                               \
    do {                                                                           \
        const int fm_ = !((mode) & (RF_FWHT_CHECK | RF_M_ADDONLY));                \
        RF_VLEVEL(v, nvec, 1, fm_);                                                \
        RF_VLEVEL(v, nvec, 2, fm_);                                                \
        RF_VLEVEL(v, nvec, 4, fm_);                                                \
        RF_VLEVEL(v, nvec, 8, fm_);                                                \
    } while (0)

/* Modes of the passes (fwht.h's flags; compile-time constants at every call site of rf_block /
 * rf_pass, so each combination is its own unrolled code): RF_FWHT_SCALE multiplies the values the
 * pass stores by s; RF_FWHT_CHECK also reports whether a stored value is NaN or +-Inf.  The check
 * costs one FMA per stored vector, acc = v * 0 + acc, which is +-0 for a finite v and NaN for
 * NaN/Inf: it runs on the FMA pipes, which the additions of the butterflies leave idle, and the
 * NaN sticks in acc. Only the last pass of a transform gets these modes (it writes the result). */

/* Four independent check accumulators (a chain of FMAs would be latency-bound). */
#define RF_CK_DECL RF_V ck_[4] = {RF_ZERO(), RF_ZERO(), RF_ZERO(), RF_ZERO()}
#define RF_CK_ADD(k, v) (ck_[(k) & 3] = RF_FMA((v), RF_ZERO(), ck_[(k) & 3]))
/* NaN in one of the first `used` (1, 2 or 4) accumulators (x + 0 is not folded for floats) */
#define RF_CK_RESULT(used)                                                         \
    RF_ANY_NAN((used) >= 4 ? RF_ADD(RF_ADD(ck_[0], ck_[1]), RF_ADD(ck_[2], ck_[3]))  \
               : (used) == 2 ? RF_ADD(ck_[0], ck_[1]) : ck_[0])

/* First pass: nvec vectors read from src (x itself in place, else a disjoint row), all RF_LOGW +
 * log2(nvec) lowest levels in registers, stored to x; mode as above.  Returns 1 when
 * (mode & RF_FWHT_CHECK) and a stored value is not finite, else 0. */
static inline RF_ATTR RF_ALWAYS_INLINE int RF_FN(rf_block)(RF_T *x, const RF_T *src,
                                                           const int nvec, const int mode, RF_T s)
{
    RF_V v[16]; /* >= RF_R; 16 keeps -Warray-bounds quiet on dead unrolled paths */
    RF_CK_DECL;
    _Pragma("GCC unroll 16")
    for (int k = 0; k < nvec; ++k) v[k] = RF_INTRA_ALL(RF_LOAD(src + k * RF_W));
    RF_VBUTTERFLY(v, nvec, mode);
    _Pragma("GCC unroll 16")
    for (int k = 0; k < nvec; ++k) {
        RF_V o = (mode & RF_FWHT_SCALE) ? RF_SCALE(v[k], s) : v[k];
        RF_STORE(x + k * RF_W, o);
        if (mode & RF_FWHT_CHECK) RF_CK_ADD(k, o);
    }
    return (mode & RF_FWHT_CHECK) ? RF_CK_RESULT(nvec) : 0;
}

/* One memory pass of radix 2**r: levels of strides h, 2h, ..., 2**(r-1) h (h a multiple of
 * 4 RF_W) over the n values at x; mode and return value as rf_block's.  A checked radix-2 pass
 * does two columns per iteration, so that its four check accumulators take turns (one
 * accumulator per iteration would make the pass wait for the FMA's latency). */
static inline RF_ATTR RF_ALWAYS_INLINE int RF_FN(rf_pass)(RF_T *x, ptrdiff_t n, ptrdiff_t h,
                                                          const int r, const int mode, RF_T s)
{
    const int m = 1 << r;
    const int u = ((mode & RF_FWHT_CHECK) && m < 4) ? 4 / m : 1; /* columns per iteration */
    RF_CK_DECL;
    for (ptrdiff_t i = 0; i < n; i += h << r) {
        RF_T *p = x + i;
        for (ptrdiff_t j = 0; j < h; j += u * RF_W) {
            _Pragma("GCC unroll 4")
            for (int c = 0; c < u; ++c) {
                RF_V v[16];
                _Pragma("GCC unroll 16")
                for (int k = 0; k < m; ++k) v[k] = RF_LOAD(p + j + c * RF_W + k * h);
                RF_VBUTTERFLY(v, m, mode);
                _Pragma("GCC unroll 16")
                for (int k = 0; k < m; ++k) {
                    RF_V o = (mode & RF_FWHT_SCALE) ? RF_SCALE(v[k], s) : v[k];
                    RF_STORE(p + j + c * RF_W + k * h, o);
                    if (mode & RF_FWHT_CHECK) RF_CK_ADD(c * m + k, o);
                }
            }
        }
    }
    return (mode & RF_FWHT_CHECK) ? RF_CK_RESULT(u * m) : 0;
}

/* Calls CALL(M) with the compile-time constant M equal to the run-time mode. */
#define RF_WITH_MODE(mode, CALL)                                                   \
    switch (mode) {                                                                \
    case 0: CALL(0); break;                                                        \
    case RF_FWHT_SCALE: CALL(RF_FWHT_SCALE); break;                                      \
    case RF_FWHT_CHECK: CALL(RF_FWHT_CHECK); break;                                      \
    default: CALL(RF_FWHT_SCALE | RF_FWHT_CHECK); break;                                 \
    }

static RF_ATTR int RF_FN(rf_pass_any)(RF_T *x, ptrdiff_t n, ptrdiff_t h, int r, int mode, RF_T s)
{
    int bad = 0;
#define RF_PASS_M(M) bad = RF_FN(rf_pass)(x, n, h, R_, (M), s)
#define RF_PASS_CASE(R)                                                            \
    case R: {                                                                      \
        enum { R_ = R };                                                           \
        RF_WITH_MODE(mode, RF_PASS_M)                                              \
        break;                                                                     \
    }
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
#undef RF_PASS_M
    return bad;
}

/* Iterative transform of a length that fits in L1, read from src (== x, or a disjoint row):
 * blocks in registers, then radix passes.  The last pass runs in the given mode. */
static RF_ATTR int RF_FN(rf_leaf)(RF_T *x, const RF_T *src, int log_n, int mode, RF_T s)
{
    const ptrdiff_t n = (ptrdiff_t)1 << log_n;
    int rem, bad = 0;
    ptrdiff_t h;
    if (log_n <= RF_LOGW + RF_LOGR) {
#define RF_BLOCK_M(M) bad = RF_FN(rf_block)(x, src, NV_, (M) | RF_M_ADDONLY, s)
#define RF_BLOCK_CASE(K, NV)                                                       \
        case K: {                                                                  \
            enum { NV_ = NV };                                                     \
            RF_WITH_MODE(mode, RF_BLOCK_M)                                         \
            break;                                                                 \
        }
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
#undef RF_BLOCK_M
        return bad;
    }
    for (ptrdiff_t i = 0; i < n; i += RF_W * RF_R) RF_FN(rf_block)(x + i, src + i, RF_R, 0, s);
    rem = log_n - RF_LOGW - RF_LOGR;
    h = (ptrdiff_t)RF_W * RF_R;
    while (rem > 0) {
        /* balanced split of the remaining levels into ceil(rem / RF_MAXRAD) passes */
        int passes = (rem + RF_MAXRAD - 1) / RF_MAXRAD;
        int r = (rem + passes - 1) / passes;
        bad = RF_FN(rf_pass_any)(x, n, h, r, r == rem ? mode : 0, s);
        h <<= r;
        rem -= r;
    }
    return bad;
}

/* Cache-blocked recursion (as FFHT): transform the 2**r sub-blocks (reading them from src), then
 * one radix-2**r pass in the given mode. */
static RF_ATTR int RF_FN(rf_rec)(RF_T *x, const RF_T *src, int log_n, int mode, RF_T s)
{
    int r, sub;
    ptrdiff_t m;
    if (log_n <= RF_LEAF) return RF_FN(rf_leaf)(x, src, log_n, mode, s);
    r = log_n - RF_LEAF;
    if (r > RF_TOPRAD) r = RF_TOPRAD;
    sub = log_n - r;
    m = (ptrdiff_t)1 << sub;
    for (ptrdiff_t i = 0; i < ((ptrdiff_t)1 << r); ++i)
        RF_FN(rf_rec)(x + i * m, src + i * m, sub, 0, s);
    return RF_FN(rf_pass_any)(x, (ptrdiff_t)1 << log_n, m, r, mode, s);
}

/* Entry point (see rf_fwht_ex_* in fwht.h): log_n in [0, 30] (checked by the caller). */
static RF_ATTR int RF_FN(rf_fwht_ex)(RF_T *x, const RF_T *src, int log_n, RF_T s, int mode)
{
    if (log_n < RF_LOGW) return RF_CAT(rf_fwht_scalar_ex, RF_T)(x, src, log_n, s, mode);
    return RF_FN(rf_rec)(x, src, log_n, mode, s);
}

#undef RF_W
#undef RF_R
#undef RF_FN
#undef RF_CAT
#undef RF_CAT_
#undef RF_VBUTTERFLY
#undef RF_VLEVEL
#undef RF_CK_DECL
#undef RF_CK_ADD
#undef RF_CK_RESULT
#undef RF_WITH_MODE
#undef RF_BSUB
#undef RF_M_ADDONLY
