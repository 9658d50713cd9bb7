"""One record per FMU variable; registration, modelDescription and docs derive from it.

pythonfmu writes neither units nor output dependencies, so ``build_fmus.py`` adds
both to modelDescription.xml from these records.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

PARAMETER, INPUT, OUTPUT = "parameter", "input", "output"
REAL, INTEGER, BOOLEAN = "Real", "Integer", "Boolean"

#: SI base-unit exponents of every unit an FMU may use (FMI 2.0 BaseUnit attributes); None for a
#: unit whose exponents are not integers (FMI 2.0 has none for it): declared by its name alone,
#: without a BaseUnit, which FMI 2.0 allows.
UNITS: dict[str, dict[str, int] | None] = {
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
    "K": {"K": 1},
    "J/K": {"kg": 1, "m": 2, "s": -2, "K": -1},
    "W/K": {"kg": 1, "m": 2, "s": -3, "K": -1},
    "1/K": {"K": -1},
    "rad/s/sqrt(N.m)": None,     # a torque converter's capacity factor K: rad kg^-1/2 m^-1
}


@dataclass(frozen=True)
class Family:
    """Membership of a variable in an indexed family: member ``index`` (1, 2, ...) of the
    family ``stem`` (J_3 of a chain: stem "J", index 3).

    count   the Integer parameter that chooses how many members are in use, or None when
            every member always is (Clutch's two bodies)
    offset  members 1 .. (count - offset) are in use: 0 for the n bodies of a chain or the n
            points of a table, 1 for the n - 1 clutches between those bodies or the n - 1
            breakpoints between n regions

    Which variables an element uses is decided from these records by :func:`in_use` only,
    never from the shape of the names."""

    stem: str
    index: int
    count: str | None = None
    offset: int = 0

    def in_use(self, count: int) -> bool:
        """Whether this member is in use when the count parameter is ``count``."""
        return self.index <= int(count) - self.offset


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
    family      the indexed family the variable is a member of (:class:`Family`), or None
    active_if   inputs only: the Boolean parameter without which the input acts on nothing
                (a clutch's T_amb without its thermal model), or None: it always acts
    adds_to     inputs only: the torque input this one is the second connection of (the same
                member; the element acts with their sum, :func:`with_second_torques`), or None
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
    family: Family | None = None
    active_if: str | None = None
    adds_to: str | None = None

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


def in_use(values, var: Var) -> bool:
    """Whether ``var`` is in use with the count parameters in ``values`` (an element
    instance, or a mapping name -> value): a variable outside a counted family always is;
    member i of a family counted by ``c`` when i <= c - offset (:class:`Family`).  The one
    place that decides it: the range checks, the documentation and the tests call it."""
    family = var.family
    if family is None or family.count is None:
        return True
    count = values[family.count] if isinstance(values, Mapping) else getattr(values, family.count)
    return family.in_use(count)


def count_parameters(variables) -> tuple[str, ...]:
    """The names of the count parameters the families among ``variables`` declare, in order."""
    return tuple(dict.fromkeys(v.family.count for v in variables if v.family and v.family.count))


def full_counts(variables) -> dict[str, int]:
    """Each count parameter of ``variables`` at the least value that puts every member of
    its families in use (e.g. {"n_bodies": 6} for ClutchChain)."""
    counts: dict[str, int] = {}
    for v in variables:
        if v.family and v.family.count:
            counts[v.family.count] = max(counts.get(v.family.count, 0), v.family.index + v.family.offset)
    return counts


def parameter(name, unit, description, start, **kw) -> Var:
    return Var(name, PARAMETER, unit, description, start, **kw)


def input_(name, unit, description, start=0.0, **kw) -> Var:
    return Var(name, INPUT, unit, description, start, **kw)


def output(name, unit, description, depends=(), **kw) -> Var:
    return Var(name, OUTPUT, unit, description, depends=tuple(depends), **kw)


def second_torque(first: Var) -> Var:
    """The second external torque input on the member ``first`` acts on: ``<first>_2``, N.m,
    default 0, a member of the family ``second_<stem>`` where ``first`` is one of ``<stem>``
    (docs/contract.md, "Two torques per member")."""
    family = first.family and replace(first.family, stem=f"second_{first.family.stem}")
    return input_(f"{first.name}_2", "N.m", f"{first.description} (second connection, summed with {first.name})",
                  family=family, adds_to=first.name)


def with_second_torques(variables, firsts) -> tuple[Var, ...]:
    """``variables`` with a :func:`second_torque` for each external torque input named in
    ``firsts`` declared after all of them (every value reference of ``variables`` stays), and
    that second input added to the ``depends`` of each output that depends on its first."""
    seconds = [second_torque(v) for v in variables if v.name in firsts]
    if len(seconds) != len(firsts):
        raise ValueError(f"torque inputs {sorted(set(firsts) - {v.adds_to for v in seconds})} are not declared")
    also = {v.adds_to: v.name for v in seconds}
    return tuple(replace(v, depends=v.depends + tuple(also[d] for d in v.depends if d in also)) if v.depends else v
                 for v in variables) + tuple(seconds)


#: The smallest moment of inertia any element accepts [kg.m2], declared or derived (a gear
#: ratio's reflected inertia, a vehicle mass seen at the wheel).  Physically: a steel pinion of
#: 1 mm radius and 1 mm width has 1.2e-11 kg.m2, so 1e-12 lies below any drivetrain part
#: (catalog and tests: at least 1e-10).  Numerically: the solvers divide by inertias and by
#: sums of their reciprocals; inertias near the float minimum (5e-324) made 1/J infinite and
#: the mass matrices singular ("singular matrix (pivot inf)"), which no message could
#: relate to a parameter.  With J >= 1e-12, 1/J <= 1e12 leaves 296 decades of headroom.
J_MIN = 1e-12
#: the reason, appended to the description of every inertia parameter
J_MIN_NOTE = f"at least {J_MIN:g} kg.m2: below any drivetrain part, a 1 mm steel pinion has 1.2e-11"


#: The smallest mass any element accepts [kg], for the same reasons: that 1 mm steel pinion
#: weighs 2.5e-5 kg, the catalog's and the tests' smallest mass is 1e-3 kg; masses near the
#: float minimum made the vehicle's inverse mass matrix infinite ("pivoted_cholesky needs a
#: finite matrix" from a get of its accelerations).
M_MIN = 1e-6
M_MIN_NOTE = f"at least {M_MIN:g} kg: below any drivetrain part, a 1 mm steel pinion has 2.5e-5"


def inertia(name, description, start, **kw) -> Var:
    """A moment-of-inertia parameter, range [J_MIN, inf) kg.m2 (see J_MIN)."""
    return parameter(name, "kg.m2", f"{description} ({J_MIN_NOTE})", start, low=J_MIN, **kw)


def mass(name, description, start, **kw) -> Var:
    """A mass parameter, range [M_MIN, inf) kg (see M_MIN)."""
    return parameter(name, "kg", f"{description} ({M_MIN_NOTE})", start, low=M_MIN, **kw)


def derived_inertia_problem(expression: str, value: float, parts: dict) -> str | None:
    """None when an inertia derived from parameters (``expression`` = ``value`` kg.m2, from
    the parameters ``parts``) is finite and at least J_MIN like a declared one; else a
    message naming the expression and each parameter in it."""
    if J_MIN <= value < math.inf:
        return None
    given = ", ".join(f"{name} = {part!r}" for name, part in parts.items())
    return (f"{expression} = {value!r} kg.m2 (from {given}) must be finite and {J_MIN_NOTE}, "
            "like every inertia")


def dataclass_parameters(params_class, table: dict, positive=(), replace: dict | None = None,
                         inertias=(), masses=()) -> list[Var]:
    """One parameter per field of a solver's parameter dataclass, default from the
    dataclass: ``table[name] = (unit, description)``; fields in ``positive`` must be > 0,
    those in ``inertias`` at least J_MIN (:func:`inertia`), in ``masses`` at least M_MIN
    (:func:`mass`), the others >= 0; ``replace[name]`` is a ready Var used instead (other
    ranges or types)."""
    defaults, replace = params_class(), replace or {}
    return [replace.get(f.name)
            or (inertia(f.name, table[f.name][1], getattr(defaults, f.name)) if f.name in inertias else None)
            or (mass(f.name, table[f.name][1], getattr(defaults, f.name)) if f.name in masses else None)
            or parameter(f.name, table[f.name][0], table[f.name][1], getattr(defaults, f.name),
                         low=0.0, low_open=f.name in positive)
            for f in fields(params_class)]
