"""Stand-in for Cython's ``cython`` module where Cython is not installed (an uncompiled
module run by a host without Cython: a build ``--pure-python``, or a host Python the FMU
carries no compiled modules for): the declarations of Cython's pure-Python mode that the
shipped code uses, without effect, as Cython's own ``cython`` module (its Shadow) has them
in an uncompiled module.  A compiled module never imports either: Cython reads
``import cython`` at compile time (compiled_modules).  tests/numerics/test_cython_fallback.py checks
that every ``cython.X`` the shipped modules use is here."""
import builtins

double = builtins.float
int = builtins.int
bint = builtins.bool
Py_ssize_t = builtins.int       # a C index: a Python int uncompiled, as in Cython's Shadow


def locals(**types):
    """``@cython.locals(name=type, ...)``: the function unchanged."""
    return lambda function: function
