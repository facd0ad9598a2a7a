# Guarded access to OpenMP (the scikit-learn _openmp_helpers pattern): when the extension is built
# without OpenMP the functions below are no-op stubs and every prange runs on one thread.
cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    #define RANDFEAT_OPENMP_ENABLED 1
    #else
    #define RANDFEAT_OPENMP_ENABLED 0
    static int omp_get_max_threads(void) { return 1; }
    static int omp_get_thread_num(void) { return 0; }
    #endif
    """
    bint RANDFEAT_OPENMP_ENABLED
    int omp_get_max_threads() noexcept nogil
    int omp_get_thread_num() noexcept nogil
