# The C declarations of fmus/variables.py.  Its two records are declared extension types:
# Cython then writes their dataclass methods (__init__, __eq__, __hash__, __repr__, the frozen
# attributes) into C when it compiles the module, where the standard library's @dataclass
# writes them as source text and compiles it at every import (which was the largest share of
# an FMU's first instantiation).  Readonly attributes: both records are frozen dataclasses.
# The uncompiled module is the same @dataclass, made at import.

cdef class Family:
    cdef readonly object stem, index, count, offset

cdef class Var:
    cdef readonly object name, causality, unit, description, start, type, low, high, low_open
    cdef readonly object depends, family, active_if, adds_to
