/* One copy of a kernel file per ISA level, and the table that dispatches among them (the one
 * pattern of rff_trig.c and fastfood_block.c).  Define before including this file:
 *   RF_VARIANTS_FILE   the kernel file, a string; it is included with RF_SFX set to scalar,
 *                      avx2 and avx512 (the last two under "#pragma GCC target" x86-64-v3 / v4,
 *                      where rf_isa.h enables them) and each copy must define its level's
 *                      table "static const RF_VARIANTS_IMPL RF_VARIANTS_IMPL_<RF_SFX>";
 *   RF_VARIANTS_IMPL   the table type's name.
 * It defines "RF_VARIANTS_IMPL_table[RF_ISA_COUNT]" (pointers to the levels' tables, indexed by
 * rf_isa_level(); the scalar copy stands for every level when there are no variants) and
 * undefines both macros.  Include rf_isa.h first. */
#define RF_VARIANTS_CAT2(a, b) a##_##b
#define RF_VARIANTS_CAT(a, b) RF_VARIANTS_CAT2(a, b)

#define RF_SFX scalar
#include RF_VARIANTS_FILE
#undef RF_SFX
#if RF_HAVE_VARIANTS
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
#define RF_SFX avx2
#include RF_VARIANTS_FILE
#undef RF_SFX
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4")
#define RF_SFX avx512
#include RF_VARIANTS_FILE
#undef RF_SFX
#pragma GCC pop_options
static const RF_VARIANTS_IMPL *const RF_VARIANTS_CAT(RF_VARIANTS_IMPL, table)[RF_ISA_COUNT] = {
    &RF_VARIANTS_CAT(RF_VARIANTS_IMPL, scalar), &RF_VARIANTS_CAT(RF_VARIANTS_IMPL, avx2),
    &RF_VARIANTS_CAT(RF_VARIANTS_IMPL, avx512)};
#else
static const RF_VARIANTS_IMPL *const RF_VARIANTS_CAT(RF_VARIANTS_IMPL, table)[RF_ISA_COUNT] = {
    &RF_VARIANTS_CAT(RF_VARIANTS_IMPL, scalar), &RF_VARIANTS_CAT(RF_VARIANTS_IMPL, scalar),
    &RF_VARIANTS_CAT(RF_VARIANTS_IMPL, scalar)};
#endif

#undef RF_VARIANTS_CAT
#undef RF_VARIANTS_CAT2
#undef RF_VARIANTS_FILE
#undef RF_VARIANTS_IMPL
