"""Stand-in for Cython's ``cython`` module where Cython is not installed (an FMU built
``--pure-python`` run by a host without it): the declarations of Cython's pure-Python mode
that ``solvers`` uses, without effect, as Cython's own ``cython`` module (its Shadow) has them
in an uncompiled module.  A compiled module never imports either: Cython reads
``import cython`` at compile time (compiled_modules)."""
import builtins

double = builtins.float
int = builtins.int
bint = builtins.bool


def locals(**types):
    """``@cython.locals(name=type, ...)``: the function unchanged."""
    return lambda function: function
