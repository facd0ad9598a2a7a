/* RF_CLONES: compile a function for x86-64-v4 (AVX-512), x86-64-v3 (AVX2 + FMA) and the
 * baseline, the copy chosen at load time for the CPU (GCC >= 12 target_clones, x86-64 Linux);
 * elsewhere it expands to nothing (one portable build).  No -march=native is ever needed.
 * Shared by rff_trig.c and fastfood_block.c. */
#ifndef RANDFEAT_RF_CLONES_H
#define RANDFEAT_RF_CLONES_H
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) \
    && (__GNUC__ >= 12)
#define RF_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define RF_HAVE_CLONES 1
#else
#define RF_CLONES
#define RF_HAVE_CLONES 0
#endif
#endif
