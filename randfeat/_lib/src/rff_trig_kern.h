/* The loops of rff_trig.c, included once per ISA level with RF_SFX set (and, for the SIMD
 * levels, a "#pragma GCC target"): every name below gets the suffix.  Ends with the level's
 * table of entry points (rf_trig_impl). */
#define RF_CAT2(a, b) a##_##b
#define RF_CAT(a, b) RF_CAT2(a, b)
#define RF_V(name) RF_CAT(name, RF_SFX)

/* ---- block kernels: inputs in a private buffer, outputs through restrict pointers ---------- */
/* One template per loop, instantiated per type: name, element type T, its polynomial kernel. */
#define RF_DEFINE_PAIRED_BLOCK(name, T, SINCOS)                                                \
    static void RF_V(name)(const T *restrict p, ptrdiff_t n, T scale, T *restrict co,       \
                           T *restrict si)                                                  \
    {                                                                                       \
        for (ptrdiff_t j = 0; j < n; j++) {                                                 \
            T s, c;                                                                         \
            SINCOS(p[j], &s, &c);                                                           \
            co[j] = scale * c;                                                              \
            si[j] = scale * s;                                                              \
        }                                                                                   \
    }

#define RF_DEFINE_PHASE_BLOCK(name, T, COS_SCALED)                                             \
    static void RF_V(name)(T *restrict x, const T *restrict b, ptrdiff_t n, T scale)        \
    {                                                                                       \
        for (ptrdiff_t j = 0; j < n; j++)                                                   \
            x[j] = COS_SCALED(x[j] + b[j], scale);                                          \
    }

RF_DEFINE_PAIRED_BLOCK(paired_block_d, double, rf_sincos_fast)
RF_DEFINE_PAIRED_BLOCK(paired_block_ff, float, rf_sincosf_fast)
RF_DEFINE_PHASE_BLOCK(phase_block_d, double, rf_cos_scaled)
RF_DEFINE_PHASE_BLOCK(phase_block_ff, float, rf_cosf_scaled)

/* float in, double-precision polynomial, float out (rounded once) */
static void
RF_V(paired_block_f)(const float *restrict p, ptrdiff_t n, float scale,
               float *restrict co, float *restrict si)
{
    double sc = (double)scale;
    for (ptrdiff_t j = 0; j < n; j++) {
        double s, c;
        rf_sincos_fast((double)p[j], &s, &c);
        co[j] = (float)(sc * c);
        si[j] = (float)(sc * s);
    }
}

static void
RF_V(phase_block_f)(float *restrict x, const float *restrict b, ptrdiff_t n, float scale)
{
    double sc = (double)scale;
    for (ptrdiff_t j = 0; j < n; j++)
        x[j] = (float)rf_cos_scaled((double)x[j] + (double)b[j], sc);
}

/* 1 when some |x[j]| exceeds t (> 0) or is NaN.  The bit patterns of non-negative floats are
   ordered like their values, NaN above +Inf, so this is an unsigned integer max reduction of
   the bits with the sign cleared (U the unsigned integer of T's width, ABS_MASK all bits but
   the sign), which vectorises without -ffast-math (2 vector operations per vector of input;
   the floating-point max or an OR of comparisons cost twice that). */
#define RF_DEFINE_ANY_ABOVE(name, T, U, ABS_MASK)                                              \
    static int RF_V(name)(const T *x, ptrdiff_t n, T t)                                     \
    {                                                                                       \
        U mx = 0, tb;                                                                       \
        memcpy(&tb, &t, sizeof tb);                                                         \
        for (ptrdiff_t j = 0; j < n; j++) {                                                 \
            U v;                                                                            \
            memcpy(&v, x + j, sizeof v);                                                    \
            v &= ABS_MASK;                                                                  \
            mx = v > mx ? v : mx;                                                           \
        }                                                                                   \
        return mx > tb;                                                                     \
    }

RF_DEFINE_ANY_ABOVE(any_above_d, double, uint64_t, 0x7fffffffffffffffULL)
RF_DEFINE_ANY_ABOVE(any_above_f, float, uint32_t, 0x7fffffffu)

/* ---- per-element path selection --------------------------------------------------------- */
/* Every element takes the code path its own magnitude selects (never its neighbours'), so the
   result of an element does not depend on where a row is cut into pieces (the RFF map cuts rows
   by frequency blocks whose size follows the thread count):
     float:  |p| <= RF_TRIGF_FAST_MAX single-precision polynomial, |p| <= RF_TRIG_FAST_MAX the
             double-precision polynomial, else (or NaN/Inf) libm in double;
     double: |p| <= RF_TRIG_FAST_MAX the polynomial, else libm.
   (The phase map compares the projection p before the offset b in [0, 2 pi) is added, with the
   limits lowered by 6.3.)  A piece whose elements are all small takes the vector loops alone;
   otherwise the vector loops run on inputs with the out-of-range elements replaced by 0 (so no
   out-of-range float-to-int conversion happens) and a select keeps, per element, the result of
   its own path; libm fixes up the rest one by one. */

/* dst[j] = x[j] where |x[j]| <= t, else 0 */
#define RF_DEFINE_CLAMP(name, T, CLAMP)                                                        \
    static void RF_V(name)(T *restrict dst, const T *restrict x, ptrdiff_t n, T t)          \
    {                                                                                       \
        for (ptrdiff_t j = 0; j < n; j++)                                                   \
            dst[j] = CLAMP(x[j], t);                                                        \
    }

RF_DEFINE_CLAMP(clamp_f, float, rf_clampf)
RF_DEFINE_CLAMP(clamp_d, double, rf_clamp)

/* dst[j] = a[j] where |p[j]| <= t, else b[j] (a, b, dst may alias each other, not p) */
static void RF_V(select_f)(float *dst, const float *restrict p, float t, const float *a,
                               const float *b, ptrdiff_t n)
{
    for (ptrdiff_t j = 0; j < n; j++)
        dst[j] = fabsf(p[j]) <= t ? a[j] : b[j];
}

/* ---- public row functions ------------------------------------------------------------------ */
static int RF_V(paired_split_d)(double *cos_io, double *sin_out, ptrdiff_t m, double scale)
{
    double buf[RF_BLOCK];
    int bad = 0;
    for (ptrdiff_t j0 = 0; j0 < m; j0 += RF_BLOCK) {
        ptrdiff_t n = m - j0 < RF_BLOCK ? m - j0 : RF_BLOCK;
        double *co = cos_io + j0, *si = sin_out + j0;
        if (!RF_V(any_above_d)(co, n, RF_TRIG_FAST_MAX)) {
            memcpy(buf, co, (size_t)n * sizeof(double));
            RF_V(paired_block_d)(buf, n, scale, co, si);
            continue;
        }
        RF_V(clamp_d)(buf, co, n, RF_TRIG_FAST_MAX);
        double p_big[RF_BLOCK];
        memcpy(p_big, co, (size_t)n * sizeof(double));
        RF_V(paired_block_d)(buf, n, scale, co, si);
        for (ptrdiff_t j = 0; j < n; j++) {
            double p = p_big[j];
            if (!(fabs(p) <= RF_TRIG_FAST_MAX)) {    /* also NaN */
                bad |= !isfinite(p);
                co[j] = scale * cos(p);
                si[j] = scale * sin(p);
            }
        }
    }
    return bad;
}

static int RF_V(paired_split_f)(float *cos_io, float *sin_out, ptrdiff_t m, float scale)
{
    float buf[RF_BLOCK], p0[RF_BLOCK], dco[RF_BLOCK], dsi[RF_BLOCK];
    int bad = 0;
    for (ptrdiff_t j0 = 0; j0 < m; j0 += RF_BLOCK) {
        ptrdiff_t n = m - j0 < RF_BLOCK ? m - j0 : RF_BLOCK;
        float *co = cos_io + j0, *si = sin_out + j0;
        if (!RF_V(any_above_f)(co, n, RF_TRIGF_FAST_MAX)) {
            memcpy(buf, co, (size_t)n * sizeof(float));
            RF_V(paired_block_ff)(buf, n, scale, co, si);
            continue;
        }
        memcpy(p0, co, (size_t)n * sizeof(float));
        /* the double-precision polynomial for elements up to RF_TRIG_FAST_MAX ... */
        RF_V(clamp_f)(buf, p0, n, (float)RF_TRIG_FAST_MAX);
        RF_V(paired_block_f)(buf, n, scale, dco, dsi);
        /* ... the single-precision one for those up to RF_TRIGF_FAST_MAX */
        RF_V(clamp_f)(buf, p0, n, RF_TRIGF_FAST_MAX);
        RF_V(paired_block_ff)(buf, n, scale, co, si);
        RF_V(select_f)(co, p0, RF_TRIGF_FAST_MAX, co, dco, n);
        RF_V(select_f)(si, p0, RF_TRIGF_FAST_MAX, si, dsi, n);
        for (ptrdiff_t j = 0; j < n; j++) {
            if (!(fabsf(p0[j]) <= (float)RF_TRIG_FAST_MAX)) {   /* also NaN */
                double p = (double)p0[j];
                bad |= !isfinite(p);
                co[j] = (float)((double)scale * cos(p));
                si[j] = (float)((double)scale * sin(p));
            }
        }
    }
    return bad;
}


static int RF_V(phase_d)(double *row, const double *b, ptrdiff_t m, double scale)
{
    double p0[RF_BLOCK];
    int bad = 0;
    for (ptrdiff_t j0 = 0; j0 < m; j0 += RF_BLOCK) {
        ptrdiff_t n = m - j0 < RF_BLOCK ? m - j0 : RF_BLOCK;
        double *x = row + j0;
        const double *bb = b + j0;
        if (!RF_V(any_above_d)(x, n, RF_PHASE_MAX)) {
            RF_V(phase_block_d)(x, bb, n, scale);
            continue;
        }
        memcpy(p0, x, (size_t)n * sizeof(double));
        RF_V(clamp_d)(x, p0, n, RF_PHASE_MAX);
        RF_V(phase_block_d)(x, bb, n, scale);
        for (ptrdiff_t j = 0; j < n; j++) {
            if (!(fabs(p0[j]) <= RF_PHASE_MAX)) {
                bad |= !isfinite(p0[j]);
                x[j] = scale * cos(p0[j] + bb[j]);
            }
        }
    }
    return bad;
}

static int RF_V(phase_f)(float *row, const float *b, ptrdiff_t m, float scale)
{
    float p0[RF_BLOCK], dx[RF_BLOCK];
    int bad = 0;
    for (ptrdiff_t j0 = 0; j0 < m; j0 += RF_BLOCK) {
        ptrdiff_t n = m - j0 < RF_BLOCK ? m - j0 : RF_BLOCK;
        float *x = row + j0;
        const float *bb = b + j0;
        if (!RF_V(any_above_f)(x, n, RF_PHASEF_MAX)) {
            RF_V(phase_block_ff)(x, bb, n, scale);
            continue;
        }
        memcpy(p0, x, (size_t)n * sizeof(float));
        RF_V(clamp_f)(dx, p0, n, (float)RF_PHASE_MAX);
        RF_V(phase_block_f)(dx, bb, n, scale);
        RF_V(clamp_f)(x, p0, n, RF_PHASEF_MAX);
        RF_V(phase_block_ff)(x, bb, n, scale);
        RF_V(select_f)(x, p0, RF_PHASEF_MAX, x, dx, n);
        for (ptrdiff_t j = 0; j < n; j++) {
            if (!(fabsf(p0[j]) <= (float)RF_PHASE_MAX)) {
                bad |= !isfinite(p0[j]);
                x[j] = (float)((double)scale * cos((double)p0[j] + (double)bb[j]));
            }
        }
    }
    return bad;
}

static const rf_trig_impl RF_V(rf_trig_impl) = {
    RF_V(paired_split_d), RF_V(paired_split_f), RF_V(phase_d), RF_V(phase_f)};

#undef RF_DEFINE_PAIRED_BLOCK
#undef RF_DEFINE_PHASE_BLOCK
#undef RF_DEFINE_ANY_ABOVE
#undef RF_DEFINE_CLAMP
#undef RF_V
#undef RF_CAT
#undef RF_CAT2
