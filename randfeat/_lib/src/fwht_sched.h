/* Two schedules of one SIMD variant of the FWHT (fwht.c includes this file once per ISA and
 * type, with the parameters of fwht_simd.h defined): the "add" schedule, whose butterflies are
 * vector additions and subtractions, and the "fma" schedule, whose subtractions a - b are issued
 * as fma(b, -1, a) (exact: the same bits), so that cores with separate add and FMA pipes (AMD
 * Zen 1-4) can use both.  Then the parameters end with this instance. */
#define RF_SCHED_FMA 0
#include "fwht_simd.h"
#undef RF_SCHED_FMA
#define RF_SCHED_FMA 1
#include "fwht_simd.h"
#undef RF_SCHED_FMA

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
#undef RF_FMA
#undef RF_ZERO
#undef RF_SET1
#undef RF_ANY_NAN
