"""The compiled core: the C kernels, their one SIMD dispatcher and the build facts.

Private (see ``_cpu.pxd``); :func:`randfeat.show_config` reports what is here.  ``set_isa``
selects the code path of every kernel at once: the FWHT (also inside Fastfood), the RFF
sin/cos and the Fastfood elementwise passes.
"""
from randfeat._lib._openmp cimport RANDFEAT_OPENMP_ENABLED, omp_get_max_threads


cdef extern from "rf_isa.h" nogil:
    int rf_isa_level() noexcept
    int rf_isa_best() noexcept
    const char *rf_isa_name(int level) noexcept
    int rf_isa_set(const char *name) noexcept
    int RF_HAVE_VARIANTS
    int RF_ISA_COUNT

cdef extern from "fwht.h" nogil:
    int rf_fwht_float(float *x, int log_n) noexcept
    int rf_fwht_double(double *x, int log_n) noexcept
    int rf_fwht_ex_float(float *x, const float *src, int log_n, float s, int flags) noexcept
    int rf_fwht_ex_double(double *x, const double *src, int log_n, double s,
                          int flags) noexcept
    const char *rf_fwht_isa() noexcept
    const char *rf_fwht_schedule() noexcept
    int rf_fwht_set_schedule(const char *name) noexcept

cdef extern from "rff_trig.h" nogil:
    int rf_rff_paired_split_double(double *c, double *s, Py_ssize_t m, double scale) noexcept
    int rf_rff_paired_split_float(float *c, float *s, Py_ssize_t m, float scale) noexcept
    int rf_rff_phase_double(double *row, const double *b, Py_ssize_t m, double scale) noexcept
    int rf_rff_phase_float(float *row, const float *b, Py_ssize_t m, float scale) noexcept
    const char *rf_rff_trig_isa() noexcept

cdef extern from "fastfood_block.h" nogil:
    void rf_ff_sign_tables_init() noexcept
    void rf_ff_apply_signs_double(double *u, const double *x, const unsigned char *bits,
                                  Py_ssize_t n) noexcept
    void rf_ff_apply_signs_float(float *u, const float *x, const unsigned char *bits,
                                 Py_ssize_t n) noexcept
    void rf_ff_gather_double(double *w, const double *u, const int *P, const double *G,
                             Py_ssize_t d) noexcept
    void rf_ff_gather_float(float *w, const float *u, const int *P, const float *G,
                            Py_ssize_t d) noexcept
    void rf_ff_scale_double(double *out, const double *w, const double *S, double scale,
                            Py_ssize_t m) noexcept
    void rf_ff_scale_float(float *out, const float *w, const float *S, float scale,
                           Py_ssize_t m) noexcept

rf_ff_sign_tables_init()  # the +-1 tables of the packed signs (before any transform)


cdef int fwht_float(float *x, int log_n) noexcept nogil:
    return rf_fwht_float(x, log_n)

cdef int fwht_double(double *x, int log_n) noexcept nogil:
    return rf_fwht_double(x, log_n)

cdef int fwht_ex_float(float *x, const float *src, int log_n, float s, int flags) noexcept nogil:
    return rf_fwht_ex_float(x, src, log_n, s, flags)

cdef int fwht_ex_double(double *x, const double *src, int log_n, double s,
                        int flags) noexcept nogil:
    return rf_fwht_ex_double(x, src, log_n, s, flags)

cdef int rff_paired_split_float(float *c, float *s, Py_ssize_t m, float scale) noexcept nogil:
    return rf_rff_paired_split_float(c, s, m, scale)

cdef int rff_paired_split_double(double *c, double *s, Py_ssize_t m, double scale) noexcept nogil:
    return rf_rff_paired_split_double(c, s, m, scale)

cdef int rff_phase_float(float *row, const float *b, Py_ssize_t m, float scale) noexcept nogil:
    return rf_rff_phase_float(row, b, m, scale)

cdef int rff_phase_double(double *row, const double *b, Py_ssize_t m,
                          double scale) noexcept nogil:
    return rf_rff_phase_double(row, b, m, scale)

cdef void ff_signs_float(float *u, const float *x, const unsigned char *bits,
                         Py_ssize_t n) noexcept nogil:
    rf_ff_apply_signs_float(u, x, bits, n)

cdef void ff_signs_double(double *u, const double *x, const unsigned char *bits,
                          Py_ssize_t n) noexcept nogil:
    rf_ff_apply_signs_double(u, x, bits, n)

cdef void ff_gather_float(float *w, const float *u, const int *P, const float *G,
                          Py_ssize_t d) noexcept nogil:
    rf_ff_gather_float(w, u, P, G, d)

cdef void ff_gather_double(double *w, const double *u, const int *P, const double *G,
                           Py_ssize_t d) noexcept nogil:
    rf_ff_gather_double(w, u, P, G, d)

cdef void ff_scale_float(float *out, const float *w, const float *S, float scale,
                         Py_ssize_t m) noexcept nogil:
    rf_ff_scale_float(out, w, S, scale, m)

cdef void ff_scale_double(double *out, const double *w, const double *S, double scale,
                          Py_ssize_t m) noexcept nogil:
    rf_ff_scale_double(out, w, S, scale, m)


def openmp_enabled():
    """Whether the compiled kernels were built with OpenMP (else every kernel runs on one
    thread)."""
    return bool(RANDFEAT_OPENMP_ENABLED)


def openmp_max_threads():
    """The OpenMP runtime's default team size (1 without OpenMP)."""
    return omp_get_max_threads()


def isa():
    """The selected SIMD level, one of :func:`available_isas`."""
    return rf_isa_name(rf_isa_level()).decode("ascii")


def available_isas():
    """The levels this CPU and build support, from "scalar" to the best."""
    return [rf_isa_name(i).decode("ascii") for i in range(rf_isa_best() + 1)]


def kernel_isas():
    """The code path each kernel runs now: {"fwht": ..., "rff_trig": ..., "fastfood": ...}
    (a kernel without variants for a level runs its "scalar" code there)."""
    trig = rf_rff_trig_isa().decode("ascii")
    return {"fwht": rf_fwht_isa().decode("ascii"), "rff_trig": trig, "fastfood": trig}


def fwht_schedule():
    """The FWHT's butterfly schedule on the SIMD paths: "add" (vector additions and
    subtractions) or "fma" (the subtractions as exact FMAs by -1, for cores whose FMA pipes are
    apart from their add pipes); the same bits either way.  Chosen at the first transform from
    ``RANDFEAT_FWHT_SCHEDULE`` (add, fma or auto: "fma" on AMD Zen 4, where it was measured
    faster, "add" elsewhere)."""
    return rf_fwht_schedule().decode("ascii")


def set_fwht_schedule(name):
    """Select the FWHT's butterfly schedule ("add", "fma" or "auto"; tests and benchmarks only,
    not thread-safe).  Raises ValueError for an unknown name."""
    cdef bytes b = str(name).encode("ascii")
    if rf_fwht_set_schedule(b) != 0:
        raise ValueError(f"unknown FWHT schedule {name!r}; use 'add', 'fma' or 'auto'")


def set_isa(name):
    """Select the SIMD level of every kernel by name (tests and benchmarks only; not
    thread-safe).

    ``name`` is "scalar", "avx2", "avx512" or "auto" (the best this CPU supports).  The FWHT and
    the Fastfood passes return bit-identical results on every level; the RFF sin/cos may differ
    by an ulp between levels.  Raises ValueError for an unknown name or one this CPU lacks.
    The environment variable ``RANDFEAT_ISA`` (read once, at the first kernel call) caps the
    default level.
    """
    cdef bytes b = str(name).encode("ascii")
    cdef int rc = rf_isa_set(b)
    if rc == -1:
        raise ValueError(f"unknown SIMD code path {name!r}; use 'scalar', 'avx2', 'avx512' "
                         "or 'auto'")
    if rc == -2:
        raise ValueError(f"SIMD code path {name!r} is not supported by this CPU or build; "
                         f"available: {available_isas()}")
