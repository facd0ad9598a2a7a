/* The Fastfood passes of fastfood_block.c, included once per ISA level with RF_SFX set (and, for
 * the SIMD levels, a "#pragma GCC target"); ends with the level's table of entry points. */
#define RF_CAT2(a, b) a##_##b
#define RF_CAT(a, b) RF_CAT2(a, b)
#define RF_V(name) RF_CAT(name, RF_SFX)

#define RF_DEFINE_SIGNS(T)                                                                     \
    static void RF_V(rf_ff_apply_signs_##T)(T *restrict u, const T *restrict x,                   \
                                         const unsigned char *restrict bits, ptrdiff_t n)      \
    {                                                                                          \
        ptrdiff_t j, n8 = n >> 3;                                                              \
        for (j = 0; j < n8; j++) {                                                             \
            rf_v8_##T a, m;                                                                    \
            memcpy(&a, x + 8 * j, sizeof a);                                                   \
            memcpy(&m, rf_sign_table_##T + 8 * (ptrdiff_t)bits[j], sizeof m);                  \
            a = a * m;                                                                         \
            memcpy(u + 8 * j, &a, sizeof a);                                                   \
        }                                                                                      \
        for (j = 8 * n8; j < n; j++)                                                           \
            u[j] = x[j] * rf_sign_table_##T[8 * (ptrdiff_t)bits[j >> 3] + (j & 7)];            \
    }

RF_DEFINE_SIGNS(double)
RF_DEFINE_SIGNS(float)

#define RF_DEFINE_BLOCK(T)                                                                     \
    static void RF_V(rf_ff_gather_##T)(T *restrict w, const T *restrict u, const int *restrict P, \
                                    const T *restrict G, ptrdiff_t d)                          \
    {                                                                                          \
        ptrdiff_t k;                                                                           \
        for (k = 0; k < d; k++)                                                                \
            w[k] = u[P[k]] * G[k];                                                             \
    }                                                                                          \
    static void RF_V(rf_ff_scale_##T)(T *restrict out, const T *restrict w, const T *restrict S,  \
                                   T scale, ptrdiff_t m)                                       \
    {                                                                                          \
        ptrdiff_t k;                                                                           \
        for (k = 0; k < m; k++)                                                                \
            out[k] = (w[k] * S[k]) * scale;                                                    \
    }

RF_DEFINE_BLOCK(double)
RF_DEFINE_BLOCK(float)

static const rf_ff_impl RF_V(rf_ff_impl) = {
    RF_V(rf_ff_apply_signs_double), RF_V(rf_ff_apply_signs_float),
    RF_V(rf_ff_gather_double), RF_V(rf_ff_gather_float),
    RF_V(rf_ff_scale_double), RF_V(rf_ff_scale_float)};

#undef RF_DEFINE_SIGNS
#undef RF_DEFINE_BLOCK
#undef RF_V
#undef RF_CAT
#undef RF_CAT2
