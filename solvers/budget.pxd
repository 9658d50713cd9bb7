# The C declarations of solvers/budget.py: Budget, a frozen dataclass, as an extension type
# whose dataclass methods Cython writes into C (fmus/variables.pxd says why).
cdef class Budget:
    cdef readonly object what, floor, per_second, cap, _limits
