"""One record per FMU variable; registration, modelDescription and docs derive from it.

pythonfmu writes neither units nor output dependencies, so ``build_fmus.py`` adds
both to modelDescription.xml from these records.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

PARAMETER, INPUT, OUTPUT = "parameter", "input", "output"
REAL, INTEGER, BOOLEAN = "Real", "Integer", "Boolean"

#: SI base-unit exponents of every unit an FMU may use (FMI 2.0 BaseUnit attributes).
UNITS: dict[str, dict[str, int]] = {
    "1": {},                     # dimensionless, declared where a name alone does not say so
    "s": {"s": 1},
    "m": {"m": 1},
    "kg": {"kg": 1},
    "rad": {"rad": 1},
    "rad/s": {"rad": 1, "s": -1},
    "rad/s2": {"rad": 1, "s": -2},
    "m/s": {"m": 1, "s": -1},
    "m/s2": {"m": 1, "s": -2},
    "N": {"kg": 1, "m": 1, "s": -2},
    "N.m": {"kg": 1, "m": 2, "s": -2},
    "N.m.s": {"kg": 1, "m": 2, "s": -1},
    "N.m/rad": {"kg": 1, "m": 2, "s": -2, "rad": -1},
    "N.m.s/rad": {"kg": 1, "m": 2, "s": -1, "rad": -1},
    "N/m": {"kg": 1, "s": -2},
    "N.s/m": {"kg": 1, "s": -1},
    "1/s": {"s": -1},
    "m2": {"m": 2},
    "kg/m3": {"kg": 1, "m": -3},
    "1/s2": {"s": -2},
    "kg.m2": {"kg": 1, "m": 2},
    "W": {"kg": 1, "m": 2, "s": -3},
    "J": {"kg": 1, "m": 2, "s": -2},
}


@dataclass(frozen=True)
class Var:
    """An FMU variable.

    name        flat FMI name (letters, digits, underscore)
    causality   PARAMETER, INPUT or OUTPUT
    unit        a key of UNITS, or None for a dimensionless quantity
    description one line shown by every FMI tool
    start       default of a parameter or input (outputs are calculated)
    type        REAL, INTEGER or BOOLEAN
    low, high   allowed closed range of a parameter or input (None = unbounded)
    low_open    True when ``low`` itself is not allowed (e.g. an inertia > 0)
    depends     outputs only: names of the inputs that act on it without delay
                (direct feedthrough); () means none
    """

    name: str
    causality: str
    unit: str | None
    description: str
    start: float | int | bool | None = None
    type: str = REAL
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    depends: tuple[str, ...] = ()

    def __post_init__(self):
        if self.unit is not None and self.unit not in UNITS:
            raise ValueError(f"{self.name}: unit {self.unit!r} is not declared in UNITS")
        if self.causality != OUTPUT and self.start is None:
            raise ValueError(f"{self.name}: a {self.causality} needs a start value")

    def allowed(self) -> str:
        """The allowed range as text, e.g. '(0, inf) kg.m2'."""
        lo = "-inf" if self.low is None else f"{self.low:g}"
        hi = "inf" if self.high is None else f"{self.high:g}"
        left = "(" if self.low_open or self.low is None else "["
        right = "]" if self.high is not None else ")"
        return f"{left}{lo}, {hi}{right}" + (f" {self.unit}" if self.unit else "")

    def bounds(self) -> tuple[float, float]:
        """(lo, hi) such that a value is allowed exactly when ``lo <= value <= hi`` and it
        is finite (an open lower bound becomes the next float above it)."""
        lo = -math.inf if self.low is None else (math.nextafter(self.low, math.inf) if self.low_open
                                                  else self.low)
        return lo, math.inf if self.high is None else self.high

    def violation(self, value) -> str | None:
        """None if ``value`` is allowed, else a message naming the variable and range."""
        if self.type == REAL and not math.isfinite(value):
            return f"{self.name} = {value!r} is not finite; allowed range {self.allowed()}"
        bad_low = self.low is not None and (value < self.low or (self.low_open and value == self.low))
        bad_high = self.high is not None and value > self.high
        if bad_low or bad_high:
            return f"{self.name} = {value!r} is outside the allowed range {self.allowed()}"
        return None


def parameter(name, unit, description, start, **kw) -> Var:
    return Var(name, PARAMETER, unit, description, start, **kw)


def input_(name, unit, description, start=0.0, **kw) -> Var:
    return Var(name, INPUT, unit, description, start, **kw)


def output(name, unit, description, depends=(), **kw) -> Var:
    return Var(name, OUTPUT, unit, description, depends=tuple(depends), **kw)


def dataclass_parameters(params_class, table: dict, positive=(), replace: dict | None = None) -> list[Var]:
    """One parameter per field of a solver's parameter dataclass, default from the
    dataclass: ``table[name] = (unit, description)``; fields in ``positive`` must be > 0,
    the others >= 0; ``replace[name]`` is a ready Var used instead (other ranges or types)."""
    from dataclasses import fields

    defaults, replace = params_class(), replace or {}
    return [replace.get(f.name) or parameter(f.name, table[f.name][0], table[f.name][1], getattr(defaults, f.name),
                                             low=0.0, low_open=f.name in positive)
            for f in fields(params_class)]
