# The C declarations of solvers/friction_kernel.py (Cython reads them when it compiles that
# module and every module that cimports it: systems/system_kernel.py calls the step over C
# doubles without a Python object between).  The sizes are friction_kernel.MAX_MEMBERS (8)
# and MAX_INTERFACES (5); a matrix's row stride is one of them.

# A ChainState (solvers.friction_state) over C values: modes as BACKWARD -1, STUCK 0,
# FORWARD 1, FREE 2.
cdef struct ChainValues:
    double theta
    double w_mean
    double q[5]
    double s[5]
    int modes[5]
    double e_loss

cdef class FrictionKernel:
    cdef object system
    cdef object reference
    cdef readonly int n
    cdef readonly int k
    cdef double j_total
    cdef double two
    cdef double m[25]
    cdef double m_inv[25]
    cdef double k_members[40]
    cdef double free[8]
    cdef double input_rows[48]
    cdef double static_levers[5]
    cdef double kinetic_levers[5]
    cdef double d_visc[5]
    cdef double w_stribeck[5]
    cdef double alpha[5]
    cdef int one_way[5]
    cdef int _last_event

    # the per-step calls over C values (the methods of the same names without _into wrap them)
    cdef void capacities_into(self, double* normal_forces, double* t_s, double* t_c) noexcept
    cdef double step_inputs_into(self, double* torque, double* g) noexcept
    cdef int resolve_into(self, double* s, int* modes, double* g, double* t_s, double* t_c,
                          int* modes_out, double* tau) except -1
    cdef int advance_into(self, ChainValues* state, double* torque, double a_mean, double* g, double* t_s,
                          double* t_c, double h, int* start_modes, double* start_tau, list events,
                          ChainValues* out) except -1
    cdef void motion_into(self, ChainValues* state, double* motion) noexcept

    cdef void _matvec(self, double* a, int rows, double* x, double* out) noexcept
    cdef double _kinetic_energy(self, double w_mean, double* s) noexcept
    cdef double _dot(self, double* x, double* y) noexcept
    cdef double _advance_constant(self, double* s, double* q, int* modes, double* tau, double* g,
                                  double remaining) noexcept
    cdef int _resolve(self, double* s, double* g, double* t_s, double* t_c, int* modes, double* tau) noexcept

# a ChainState into C values, and back (the ChainState the reference would make)
cdef int chain_values(object state, int k, ChainValues* out) except -1
cdef object chain_state(ChainValues* values, int k)
