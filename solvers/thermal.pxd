# The C declarations of solvers/thermal.py: InterfaceHeat, a frozen dataclass, as an extension
# type whose dataclass methods Cython writes into C (fmus/variables.pxd says why).
cdef class InterfaceHeat:
    cdef readonly object c_th, g_th, t_ref, c_mu_t
