/* See rf_isa.h. */
#include "rf_isa.h"
#include <stdlib.h>
#include <string.h>

static const char *const rf_isa_names[RF_ISA_COUNT] = {"scalar", "avx2", "avx512"};

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define RF_X86_DETECT 1
#endif

int rf_isa_best(void)
{
#ifdef RF_X86_DETECT
    __builtin_cpu_init();
    int v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    int v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
#if RF_HAVE_VARIANTS
    /* the RFF/Fastfood loops are compiled for the whole x86-64-v3/v4 levels */
    v3 = v3 && __builtin_cpu_supports("x86-64-v3");
    v4 = v4 && v3 && __builtin_cpu_supports("x86-64-v4");
#endif
    if (v4) return RF_ISA_AVX512;
    if (v3) return RF_ISA_AVX2;
#endif
    return RF_ISA_SCALAR;
}

const char *rf_isa_name(int level)
{
    return (level >= 0 && level < RF_ISA_COUNT) ? rf_isa_names[level] : NULL;
}

/* Index of a name, -1 when unknown; "auto" and "" give RF_ISA_COUNT (no cap). */
static int rf_isa_index(const char *name)
{
    if (name == NULL || name[0] == '\0' || strcmp(name, "auto") == 0) return RF_ISA_COUNT;
    for (int i = 0; i < RF_ISA_COUNT; ++i)
        if (strcmp(name, rf_isa_names[i]) == 0) return i;
    return -1;
}

/* -1 until resolved.  Resolution is idempotent (every thread computes the same value), so a
 * race between first callers is harmless; the atomics keep it well defined. */
static int rf_isa_selected = -1;

#if defined(__GNUC__) || defined(__clang__)
#define RF_LOAD_SEL() __atomic_load_n(&rf_isa_selected, __ATOMIC_ACQUIRE)
#define RF_STORE_SEL(v) __atomic_store_n(&rf_isa_selected, (v), __ATOMIC_RELEASE)
#else
#define RF_LOAD_SEL() (*(volatile int *)&rf_isa_selected)
#define RF_STORE_SEL(v) (*(volatile int *)&rf_isa_selected = (v))
#endif

int rf_isa_level(void)
{
    int sel = RF_LOAD_SEL();
    if (sel >= 0) return sel;
    int best = rf_isa_best();
    const char *env = getenv("RANDFEAT_ISA");
    if (env == NULL || env[0] == '\0') env = getenv("RANDFEAT_FWHT_ISA");
    int cap = rf_isa_index(env);
    sel = (cap >= 0 && cap < best) ? cap : best;  /* unknown name: ignored (auto) */
    RF_STORE_SEL(sel);
    return sel;
}

int rf_isa_set(const char *name)
{
    int idx = rf_isa_index(name);
    int best = rf_isa_best();
    if (idx < 0) return -1;
    if (idx == RF_ISA_COUNT) idx = best;
    if (idx > best) return -2;
    RF_STORE_SEL(idx);
    return 0;
}
