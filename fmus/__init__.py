"""Element FMUs: thin pythonfmu slaves over :mod:`solvers`.

``ELEMENTS`` is the single list that the build, the validation and the tests loop over.
"""
from .clutch import Clutch, ClutchChain, DualClutch
from .inertia import Engine, Inertia
from .nonlinear_spring import NonlinearSpring
from .shaft import Shaft

ELEMENTS = (Clutch, DualClutch, ClutchChain, Inertia, Engine, Shaft, NonlinearSpring)

__all__ = ["ELEMENTS"] + [e.__name__ for e in ELEMENTS]
