# The C declarations of solvers/friction.py: InterfaceLaw, a frozen dataclass, as an extension
# type whose dataclass methods Cython writes into C (fmus/variables.pxd says why).
cdef class InterfaceLaw:
    cdef readonly object mu_s, mu_k, r_eff, n_surfaces, w_stribeck, alpha_stribeck, d_visc
