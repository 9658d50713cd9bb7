# The C declarations of fmus/fmi_kernel.py: the table of C functions the FMU's binary calls
# (native/fmi2_forwarding.h declares the same layout as struct drivetrain_fmu_fast_calls).
from drivetrain_fmu.fmus.element_kernel cimport Run

ctypedef struct FastCalls:
    int version
    void* (*bind)() noexcept
    void (*release)(void* entry) noexcept
    int (*do_step)(void* entry, double t, double h) noexcept
    int (*get_real)(void* entry, const unsigned int* vr, size_t n, double* values) noexcept
    int (*get_boolean)(void* entry, const unsigned int* vr, size_t n, int* values) noexcept
    int (*set_real)(void* entry, const unsigned int* vr, size_t n, const double* values) noexcept

cdef class Plan:
    cdef Py_ssize_t n
    cdef unsigned int* vr               # the value references it was made for
    cdef int* slots                     # their slots in the run's array
    cdef list names                     # their names (a set writes the model's attributes too)
    cdef bint usable                    # every one a variable of the run's array of the call's kind
    cdef object preparation             # what the run needs to get (set) them (Run.preparation)

cdef class Entry:
    cdef object slave
    cdef Run run                        # the run the plans were made for
    cdef list gets                      # Plans of fmi2GetReal, fmi2GetBoolean, fmi2SetReal
    cdef list booleans
    cdef list sets

    cdef Plan plan(self, list plans, const unsigned int* vr, size_t n, str kind, bint write)
    cdef int current(self) except -1

cdef FastCalls API

cdef void* bind() noexcept
cdef void release(void* entry) noexcept
cdef int do_step(void* entry, double t, double h) noexcept
cdef int get_real(void* entry, const unsigned int* vr, size_t n, double* values) noexcept
cdef int get_boolean(void* entry, const unsigned int* vr, size_t n, int* values) noexcept
cdef int set_real(void* entry, const unsigned int* vr, size_t n, const double* values) noexcept
cdef Plan _readable(Entry entry, const unsigned int* vr, size_t n, str kind)
cdef int _interrupted(object exc) noexcept
