"""Runtime of a system FMU: a whole system of element models as one FMI 2.0 co-simulation slave.

This module runs inside the FMU (``build_fmus.build_system_fmu`` ships it as
``resources/drivetrain_composite/slave.py``), so it imports the standard library, pythonfmu
and the element code (``fmus``, ``solvers``) only; the build side is ``systems/composite.py``.

The system travels in ``resources/composite.json`` (written from the system's .ssd by
``systems.composite.describe``; the .ssd itself is beside it for reference): its components
(element of ``fmus.MODELS`` and bound parameter values), its connections, the FMU's
interface (inputs, outputs) and the internal step.  The elements are their models, driven
here through the model protocol of :mod:`fmus.model` only; no FMI call passes between them.

Exchange and stepping are those of ``systems.master.run``: at a communication point the
connections whose source has no direct feedthrough are moved first (every get, then every
set), then those whose source has (same), then every element steps from t to t + h with
its inputs held.  Time is counted (t = t0 + n h), not accumulated.  A host step H = k h
runs k internal steps, each with that exchange, the FMU inputs held over H.  With k = 1 the
results are those of ``systems.master`` running the element FMUs (the same code, the same
operations in the same order).

Multi-rate (``rates``: {inst: H}, H = m h): such an element steps once per m internal
steps, at the end of its step, with each connection-driven Real input at the mean of the
m values the connections gave it at the internal steps of its step (for a step-mean
compliance's torque this is the impulse the fast side took, so momentum is exact); until
then its inputs stay those of the start of its step and its outputs are held for the
others, an angle a compliance reads (phi_X with its w_X from the same element) advanced
with the held speed.  ``iterations`` N: each internal step is repeated N times from the
saved states with the connections at the mean of their values at t and t + h, as
``systems.master.run(..., iterations=N)``.  docs/composite-fmu.md states both exactly.

Refused steps (fmi2Discard, the message naming the component and the cause) leave every
element at the state and inputs of the last communication point; so do interrupted ones
(fmus.shell, "Interrupts"), and a host step of more element steps than STEP_BUDGET is refused
before any is taken.  Values move through the models' variables (their attributes, read and
written as items of ``vars(model)``).
The FMI face is :mod:`fmus.shell`'s: its guard table, entry points and state (de)serialization.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import sys
from dataclasses import replace
from functools import partial

try:
    import cython
except ImportError:         # uncompiled, where Cython is not installed
    from drivetrain_fmu.solvers import cython_fallback as cython
from pythonfmu import Fmi2Slave
from pythonfmu.default_experiment import DefaultExperiment
from pythonfmu.enums import Fmi2Status

from drivetrain_fmu import fmus
from drivetrain_fmu.fmus.compliance import SLIVER, STEP_ROUNDING
from drivetrain_fmu.fmus.model import ParameterError, StateError
from drivetrain_fmu.fmus.shell import (CONVERT, INITIALIZED, INSTANTIATED, TERMINATED, FmiCallError, FmiCommonCalls, PlanCache,
                        fmi_entry, fmi_step_entry, fmi_variable, raise_to_host, repeat_until_done, state_from_bytes,
                        state_to_bytes, take_pending_signals)
from drivetrain_fmu.fmus.native_exit import order_native_exit
from drivetrain_fmu.fmus.variables import BOOLEAN, INPUT, INTEGER, OUTPUT, PARAMETER, REAL, Var
from drivetrain_fmu.solvers.budget import Budget

DESCRIPTION_FILE = "composite.json"
FORMAT = 1
#: the FMU parameter holding the internal step
INTERNAL_STEP = "internal_step"
#: the declared range of ``internal_step``, s: down to the smallest step the fuzz campaign
#: checks every element at (tests/elements/fuzz_campaign.py STEP_MIN; 50 times finer than the finest
#: internal step of a documented system, Fan F2's 5e-5 s; below it one simulated second is
#: more than 10^6 internal steps), up to its longest (STEP_MAX; the documented systems step
#: with 5e-5 to 2e-3 s, and the elements' budgets are set for such steps)
INTERNAL_STEP_RANGE = (1e-6, 1.0)
#: the element steps (internal steps x elements, x (iterations + 1)) one doStep may take: a
#: host step is a whole number of internal steps, counted before any is taken.  Measured
#: under fmpy on this machine (unloaded), an element step costs 2.1 us in Z3 (a 10 s step,
#: 5000 internal steps of 7 elements: 73 ms of CPU) and 6.7 us in Fan F2 (a 0.1 s step, 1000
#: of 5: 34 ms), so the cap keeps a doStep of those within 0.2 to 0.7 s, a few times that on a
#: loaded machine (solvers.budget: one to three seconds)
STEP_BUDGET = Budget("element steps", 100_000, 0.0, 100_000)
#: the element parameter a step-mean compliance averages over; it follows the internal step
T_COMM = "T_comm"
_ZERO = {REAL: 0.0, INTEGER: 0, BOOLEAN: False}


def source_fingerprint() -> str:
    """SHA-256 of this module's source (the composite runtime); the slave script compares it
    with the build's (one copy of this module per process, as for the element code).  The
    source lies beside the module also when the FMU runs it compiled (compiled_modules)."""
    source = os.path.join(os.path.dirname(__file__), __name__.rpartition(".")[2] + ".py")
    with open(source, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


_LOADED_FINGERPRINT = source_fingerprint()


def code_fingerprint() -> str:
    """The fingerprint of this module as loaded in this process."""
    return _LOADED_FINGERPRINT


def element_classes() -> dict:
    """The element models by name (fmus.MODELS)."""
    return {model.__name__: model for model in fmus.MODELS}


# ---------------------------------------------------------------------------- interface
def interface(description: dict) -> list[Var]:
    """The FMU's variables, in value-reference order: ``internal_step``, every element
    parameter as ``inst.name`` (bound value as start; a step-mean compliance's T_comm is not
    one: it follows the internal step), the FMU inputs, the FMU outputs with their
    feedthrough dependencies on the FMU inputs (through the connections)."""
    classes = element_classes()
    components = description["components"]
    declared = {inst: {v.name: v for v in classes[c["element"]].VARIABLES} for inst, c in components.items()}
    inputs, outputs = description["inputs"], description["outputs"]
    drivers = {(c[2], c[3]): (c[0], c[1]) for c in description["connections"]}

    def label(inst):
        return f"{inst} ({components[inst]['element']})"

    def depends(inst, name, seen=()):
        """FMU inputs the value of element variable inst.name depends on without delay."""
        key = f"{inst}.{name}"
        if key in seen:
            raise ValueError(f"algebraic loop through {key}: feedthrough outputs drive each other")
        var = declared[inst][name]
        if var.causality == INPUT:
            if key in inputs:
                return {key}
            source = drivers.get((inst, name))
            return depends(*source, seen + (key,)) if source else set()
        found = set()
        for dependency in var.depends:
            found |= depends(inst, dependency, seen + (key,))
        return found

    variables = [Var(INTERNAL_STEP, PARAMETER, "s", "internal step: every host step is a whole multiple of it "
                     "(each internal step exchanges the connections and steps every element)",
                     description["internal_step"], low=INTERNAL_STEP_RANGE[0], high=INTERNAL_STEP_RANGE[1])]
    for inst, component in components.items():
        bound = component["parameters"]
        for var in declared[inst].values():
            if var.causality != PARAMETER or (var.name == T_COMM and inst in description["step_mean"]):
                continue
            variables.append(replace(var, name=f"{inst}.{var.name}", description=f"{label(inst)}: {var.description}",
                                     start=bound.get(var.name, var.start)))
    for key in inputs:
        inst, name = key.split(".", 1)
        variables.append(replace(declared[inst][name], name=key,
                                 description=f"{label(inst)}: {declared[inst][name].description}"))
    order = {key: i for i, key in enumerate(inputs)}
    for key in outputs:
        inst, name = key.split(".", 1)
        var = declared[inst][name]
        variables.append(Var(key, OUTPUT, var.unit, f"{label(inst)}: {var.description}"
                             + (" (its input, as the connections set it)" if var.causality == INPUT else ""),
                             type=var.type, depends=tuple(sorted(depends(inst, name), key=order.get))))
    return variables


def _attribute_pairs(elements: dict, paths) -> list:
    """(vars(model), variable name) of each element variable of ``paths`` ('inst.var';
    ``elements``: instance name -> model).  Every variable is an attribute of its model (a
    feedthrough output once Model.update_feedthrough has written it); the names are interned,
    as the attributes' own."""
    return [(vars(elements[inst]), sys.intern(name)) for inst, name in (path.split(".", 1) for path in paths)]


@cython.locals(pairs=list, i=cython.Py_ssize_t, attributes=dict, values=list)
def _read_attributes(pairs, convert: type) -> list:
    """The values of ``pairs`` (_attribute_pairs) as the type ``convert`` (one already of that
    type as it is)."""
    values = []
    for i in range(len(pairs)):
        attributes, name = pairs[i]
        value = attributes[name]
        values.append(value if type(value) is convert else convert(value))
    return values


@cython.locals(moves=list, i=cython.Py_ssize_t, source=dict, target=dict, speeds=dict)
def _move(moves, lags: dict):
    """Move the values of a stage's connections (Composite._plan's ``moves``: source
    attributes, name, target attributes or inbox, name, and for an angle read ahead the
    attributes and name of its speed and the instance whose lag it is advanced over, else
    None).  systems.master.run gets every value of a stage, then sets them; here each value
    moves at once, which is the same: a stage's targets are inputs, its sources outputs."""
    for i in range(len(moves)):
        source, name, target, target_name, speeds, speed_name, inst = moves[i]
        if speeds is None:
            target[target_name] = source[name]
        else:
            target[target_name] = source[name] + speeds[speed_name] * lags[inst]


def _get_plan(elements: dict, table: dict, kind: str, vrs):
    """(models whose feedthrough to bring up to date, _attribute_pairs of the element variables, positions of
    internal_step) for the value references ``vrs`` of type ``kind`` (``elements``: instance name -> element;
    ``table``: value reference -> (inst.var or None for internal_step, element whose
    feedthrough output it is or None)); TypeError naming one that is not of that type."""
    try:
        sources = [table[vr] for vr in vrs]
    except KeyError as missing:
        raise TypeError(f"variable with valueReference={missing.args[0]} is not of type {kind}") from None
    through = _feedthrough_sources(element for _, element in sources if element is not None)
    own = [i for i, (path, _) in enumerate(sources) if path is None]
    return through, _attribute_pairs(elements, [path for path, _ in sources if path is not None]), own


def _feedthrough_sources(elements) -> list:
    """Each of ``elements`` once, in order of first appearance (whose feedthrough outputs
    Composite._refresh brings up to date)."""
    return list({id(element): element for element in elements}.values())


def read_description(resources: str) -> dict:
    with open(os.path.join(resources, DESCRIPTION_FILE), encoding="utf-8") as handle:
        description = json.load(handle)
    if description.get("format") != FORMAT:
        raise ValueError(f"{DESCRIPTION_FILE} has format {description.get('format')!r}; this runtime reads {FORMAT}")
    return description


class _Refused(Exception):
    """An internal step that an element refused (its messages are in its log queue)."""


class _Unconnected(Exception):
    """The connections could not be evaluated (args[0]: the cause)."""


# ---------------------------------------------------------------------------- the slave
class Composite(FmiCommonCalls, Fmi2Slave):
    """A whole system as one slave (module docstring).  The slave script binds a subclass
    named after the system (pythonfmu's model identifier); everything else comes from the
    FMU's resources."""

    # what every step reads and writes, as slots: a slot is found by the class's (cached)
    # look-up alone, an attribute in the instance dict also needs that dict's (internal_step
    # is not one: fmi2SetReal writes it into the instance dict, as an element's parameters)
    __slots__ = ("_n", "_extra", "_due", "_at", "_fresh", "_lags", "_stages", "_get_plans",
                 "_order", "_stepped", "iterations", "_slow", "_inbox",
                 "_fmu_inputs", "_fmi_phase", "_whole_steps", "_frame", "_restage", "_chained")
    _raise_to_host = raise_to_host
    _fmu_state_from_bytes = staticmethod(state_from_bytes)
    _fmu_state_to_bytes = staticmethod(state_to_bytes)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        if self.resources:
            order_native_exit(self.resources, type(self).__name__)
        self.system = read_description(self.resources)
        self.author, self.license, self.version = "drivetrain-fmu", "MIT", "0.1.0"
        self.description = (f"System {self.system['name']} as one FMU ({len(self.system['components'])} "
                            f"elements in-process): {self.system['description']}").strip().rstrip(":")
        self.default_experiment = DefaultExperiment(0.0, self.system.get("stop"), self.system["internal_step"])
        self.start_time = 0.0
        self.internal_step = float(self.system["internal_step"])
        self._fmi_phase = INSTANTIATED
        self._n, self._extra = 0, 0.0
        self._due = 2                       # 2: full exchange due, 1: stage 2 only, 0: none
        self.rates = {inst: float(h) for inst, h in self.system.get("rates", {}).items()}
        self.iterations = int(self.system.get("iterations", 0))
        self._slow, self._frame, self._at = [], 1, (0.0, 0.0)

        classes = element_classes()
        self.elements = {}
        for inst, component in self.system["components"].items():
            element = classes[component["element"]]()
            element.assign(component["parameters"])
            self.elements[inst] = element
        self._order = list(self.elements.values())
        self._labels = {id(el): f"{inst} ({type(el).__name__})" for inst, el in self.elements.items()}
        self._stepped = list(self._order)
        self._input_names = {id(el): [v.name for v in el.input_variables] for el in self._order}
        # the models whose feedthrough outputs are up to date in their variables (_refresh):
        # emptied by whatever changes a state or an input, as the exchange knows which
        self._fresh = set()

        self.variables = interface(self.system)
        self._vars = {v.name: v for v in self.variables}
        # value reference -> (inst.var or None for internal_step, element whose feedthrough
        # it is or None), per type; value reference -> (object, attribute, kind), settable
        self._sources = {kind: {} for kind in _ZERO}
        self._writers = {kind: {} for kind in _ZERO}
        self._get_plans = {kind: PlanCache(partial(_get_plan, self.elements, self._sources[kind], kind))
                           for kind in _ZERO}
        fmu_inputs = set(self.system["inputs"])
        for var in self.variables:
            fmi = fmi_variable(var)
            self.register_variable(fmi, nested=False)
            vr = fmi.value_reference
            if var.name == INTERNAL_STEP:
                self._sources[REAL][vr] = (None, None)
                self._writers[REAL][vr] = (self, INTERNAL_STEP, PARAMETER)
                continue
            inst, name = var.name.split(".", 1)
            element = self.elements[inst]
            through = var.causality == OUTPUT and self._is_feedthrough(inst, name)
            self._sources[var.type][vr] = (var.name, element if through else None)
            if var.causality != OUTPUT:
                self._writers[var.type][vr] = (element, name, var.causality)
        # FMU inputs whose value reaches a stage-2 connection (a new value re-runs stage 2)
        self._fmu_inputs = [(self._vars[key], self.elements[key.split(".")[0]], key.split(".", 1)[1])
                            for key in self.system["inputs"]]
        self._plan(fmu_inputs)

    def _is_feedthrough(self, inst: str, name: str) -> bool:
        """inst.name is an output with direct feedthrough (read through _refresh)."""
        return any(v.name == name and v.causality == OUTPUT and v.depends for v in self.elements[inst].VARIABLES)

    @cython.locals(fresh=set)
    def _refresh(self, elements):
        """Bring each model's feedthrough outputs up to date in its variables, unless they are
        already: a model in ``_fresh`` has had no new state or input since (_exchange,
        _set_values, _restore and _set_state keep the set)."""
        fresh = self._fresh
        for element in elements:     # _feedthrough_sources
            if element not in fresh:
                element.update_feedthrough()
                fresh.add(element)

    # ------------------------------------------------------------------ exchange plan
    def _plan(self, fmu_inputs):
        """The two exchange stages of systems.master.run, as (models whose feedthrough to
        bring up to date, moves, copies, models written).  ``moves`` (see _move) has one entry per connection:
        a connection to an element with its own rate writes into that element's inbox;
        ``copies`` moves a stage's inbox values into the element when its step starts (its
        lag is 0).  A compliance's angle phi_X driven by such an element, with its w_X from
        the same element, is read advanced by the held speed over the lag."""
        links = self.system["connections"]
        slow = set(self.rates)
        self._lags = {inst: 0.0 for inst in slow}
        self._inbox = {inst: {c[3]: getattr(self.elements[inst], c[3]) for c in links if c[2] == inst}
                       for inst in slow}
        speed_source = {(c[2], c[3]): (c[0], c[1]) for c in links}
        stages = [[c for c in links if not self._is_feedthrough(c[0], c[1])],
                  [c for c in links if self._is_feedthrough(c[0], c[1])]]
        self._stages = []
        for stage, chosen in enumerate(stages):
            moves = []
            for c in chosen:
                target = {v.name: v for v in self.elements[c[2]].VARIABLES if v.causality == INPUT}
                speed = "w_" + c[3][len("phi_"):]
                ahead = (c[0] in slow and c[3].startswith("phi_") and target[c[3]].unit == "rad"
                         and speed in target and target[speed].unit == "rad/s"
                         and speed_source.get((c[2], speed), ("",))[0] == c[0])
                speeds, speed_name = (vars(self.elements[c[0]]), sys.intern(speed_source[(c[2], speed)][1])) \
                    if ahead else (None, None)
                # names interned as in _attribute_pairs
                moves.append((vars(self.elements[c[0]]), sys.intern(c[1]),
                              self._inbox[c[2]] if c[2] in slow else vars(self.elements[c[2]]), sys.intern(c[3]),
                              speeds, speed_name, c[0]))
            through = _feedthrough_sources(self.elements[c[0]] for c in chosen if self._is_feedthrough(c[0], c[1]))
            copies = [(inst, vars(self.elements[inst]), self._inbox[inst], [c[3] for c in chosen if c[2] == inst])
                      for inst in self.rates if any(c[2] == inst for c in chosen)]
            # the models whose inputs this stage sets (directly or from an inbox)
            written = {self.elements[c[2]] for c in chosen}
            self._stages.append((through, moves, copies, written))
        # does a stage-2 source's value depend without delay on a stage-2 target?  Then an
        # exchange cut short (an interrupt) and run again moves other values than one run once:
        # a step then saves the inputs before its exchange (do_step)
        targets = {f"{c[2]}.{c[3]}" for c in stages[1]}
        self._chained = any(targets & self._input_reach(c[0], c[1]) for c in stages[1])
        # does a new FMU input value change what stage 2 moves?
        sources = {f"{c[0]}.{c[1]}" for c in stages[1]}
        reach = set()
        for inst, element in self.elements.items():
            for var in element.VARIABLES:
                if var.causality == OUTPUT and f"{inst}.{var.name}" in sources:
                    reach |= self._input_reach(inst, var.name)
        self._restage = bool(reach & fmu_inputs)

    def _input_reach(self, inst, name, seen=()):
        """FMU inputs (and element inputs) an element output depends on without delay."""
        drivers = {(c[2], c[3]): (c[0], c[1]) for c in self.system["connections"]}
        found = set()
        for var in self.elements[inst].VARIABLES:
            if var.name == name and var.causality == OUTPUT:
                for dependency in var.depends:
                    key = f"{inst}.{dependency}"
                    found.add(key)
                    source = drivers.get((inst, dependency))
                    if source and key not in seen:
                        found |= self._input_reach(*source, seen + (key,))
        return found

    def _exchange(self, stages=None):
        lags, fresh = self._lags, self._fresh
        fresh.clear()
        for through, moves, copies, written in (self._stages if stages is None else stages):
            self._refresh(through)
            _move(moves, lags)
            for inst, element_values, inbox, names in copies:
                if not lags[inst]:            # its step starts: these are its inputs
                    for name in names:
                        element_values[name] = inbox[name]
            fresh.difference_update(written)
        self._due = 0

    def _targets(self) -> list:
        """The values the connections have set, per stage (an element with its own rate:
        its inbox)."""
        return [[move[2][move[3]] for move in moves] for _, moves, _, _ in self._stages]

    # ------------------------------------------------------------------ FMI
    @fmi_entry("fmi2ExitInitializationMode")
    def exit_initialization_mode(self):
        problems = []
        step = self._vars[INTERNAL_STEP].violation(self.internal_step)
        if step is not None:
            problems.append(step)
        for inst, element in self.elements.items():
            for var in element.checked_variables():
                if var.causality == PARAMETER:
                    problem = replace(var, name=f"{inst}.{var.name}").violation(getattr(element, var.name))
                    if problem is not None:
                        problems.append(problem)
            problems += [f"{self._labels[id(element)]}: {text}" for text in element.cross_check()]
        if problems:
            raise ParameterError("invalid parameters: " + "; ".join(problems))
        for inst, rate in self.rates.items():
            multiple = round(rate / self.internal_step)
            if multiple < 1 or abs(rate - multiple * self.internal_step) > STEP_ROUNDING * rate:
                raise ParameterError(f"invalid parameters: the rate of {self._labels[id(self.elements[inst])]}, "
                                     f"{rate!r} s, is not a whole multiple of {INTERNAL_STEP} = "
                                     f"{self.internal_step!r} s")
        for inst in self.system["step_mean"]:
            setattr(self.elements[inst], T_COMM, self.internal_step)
        for inst, element in self.elements.items():
            element.start_time = self.start_time
            try:
                element.initialize()
            except ParameterError as exc:
                raise ParameterError(f"{self._labels[id(element)]}: {exc}") from None
            except Exception as exc:
                raise FmiCallError(f"{self._labels[id(element)]} cannot be initialized: "
                                   f"{type(exc).__name__}: {exc}") from None
        self._prepare_stepping()
        self._n, self._extra = 0, 0.0
        self._exchange()

    def _prepare_stepping(self):
        """What doStep uses, from the initialized elements and the internal step (at
        fmi2ExitInitializationMode, and when the state of an initialized instance is set into
        one that is not)."""
        # an FMU input is range-checked where its element checks it (a Table's unused points,
        # a ClutchChain's clamps beyond n_bodies are not), and always refused when not finite
        self._input_checks = [(var, element, name, any(v.name == name for v in element.checked_inputs))
                              for var, element, name in self._fmu_inputs]
        # a stateless model (fmus.model: no state, outputs follow the inputs) that takes the
        # internal step has nothing to advance: it is not stepped
        self._stepped = [el for el in self._order if not (el.stateless and el.accepts_step(self.internal_step))]
        # multi-rate: [inst, element, multiple, Real inputs the connections drive, their sums]
        slow = {id(self.elements[inst]) for inst in self.rates}
        self._fast_steps = [el for el in self._stepped if id(el) not in slow]
        self._slow = []
        for inst, rate in self.rates.items():
            element = self.elements[inst]
            kinds = {v.name: v.type for v in element.VARIABLES}
            self._slow.append([inst, element, round(rate / self.internal_step),
                               [name for name in self._inbox[inst] if kinds[name] == REAL], []])
        self._frame = math.lcm(1, *(s[2] for s in self._slow))
        self._whole_steps = {}          # host step size -> (count, h) of _sub_steps
        if self._fmi_phase is not TERMINATED:
            self._fmi_phase = INITIALIZED

    def _time(self) -> float:
        return self.start_time + self._n * self.internal_step + self._extra

    def _refuse(self, message: str) -> bool:
        self.log(message, Fmi2Status.error)
        take_pending_signals()
        return False

    @cython.locals(current_time=cython.double, step_size=cython.double, expected=cython.double,
                   h=cython.double)
    def _sub_steps(self, current_time: float, step_size: float):
        """(count, h) of internal steps for a host step, or the reason it is refused (not on
        this FMU's time, not a whole number of internal steps, more than STEP_BUDGET)."""
        h = self.internal_step
        expected = self.start_time + self._n * h + self._extra          # _time()
        if abs(current_time - expected) > 1e-9 * max(abs(expected), step_size, h):
            return (f"communication point t = {current_time!r} does not continue from the last one "
                    f"(t = {expected!r}): the system FMU counts its internal steps")
        if step_size <= SLIVER * h:           # a host's final remainder (e.g. OMSimulator's 1e-13 s)
            # it ends at the host's current_time + step_size: only what lies beyond this FMU's own
            # time is stepped (none when the host's accumulated time lagged the count n h)
            remainder = min(step_size, current_time + step_size - expected)
            return (1, remainder) if remainder > 0.0 else (0, h)
        known = self._whole_steps.get(step_size)    # a host repeats its step size: decided once
        if known is not None and known[1] == h:
            return known
        count = round(step_size / h)
        if count >= 1 and abs(step_size - count * h) <= STEP_ROUNDING * step_size:
            if count % self._frame:
                return self._frame_problem(step_size, h)
            work = count * (self.iterations + 1) * len(self._order)
            if work > STEP_BUDGET.cap:         # counted before any is taken; never kept as a plan
                return self._over_budget(step_size, count, h, work)
            if len(self._whole_steps) < 16:
                self._whole_steps[step_size] = (count, h)
            return count, h
        return (f"communication step h = {step_size!r} is not a whole multiple of the internal step "
                f"{h!r} s (nearest: {max(count, 1)} x {h!r} = {max(count, 1) * h!r} s): give the host a step "
                f"of n x {h:g} s, or set {INTERNAL_STEP} (or build with --internal-step) to a divisor of it")

    def _frame_problem(self, step_size: float, h: float) -> str:
        """Why a host step of ``step_size`` (a whole number of internal steps ``h``) does not
        fit the steps of the elements with their own rate."""
        longest = ", ".join(f"{s[0]} {s[2] * h!r} s" for s in self._slow)
        return (f"communication step h = {step_size!r} is not a whole multiple of {self._frame * h!r} s, "
                f"the steps of the elements with their own rate ({longest}): give the host a step of "
                f"n x {self._frame * h:g} s")

    def _input_problem(self) -> str | None:
        for var, element, name, checked in self._input_checks:
            value = getattr(element, name)
            if (var.type == REAL and not math.isfinite(value)) or checked:
                problem = var.violation(value)
                if problem is not None:
                    return problem
        return None

    @fmi_step_entry("fmi2DoStep")
    @cython.locals(t=cython.double, h=cython.double)
    def do_step(self, current_time: float, step_size: float) -> bool:
        t, h = current_time, step_size
        # x - x == 0 exactly when x is finite: 0 < h < inf and t finite
        if self._fmi_phase is not INITIALIZED or not (0.0 < h and h - h == 0.0 and t - t == 0.0):
            return self._refuse(self._step_call_problem(current_time, step_size))
        plan = self._sub_steps(current_time, step_size)
        if isinstance(plan, str):
            return self._refuse(plan)
        count, h = plan
        if self._fmu_inputs:
            problem = self._input_problem()
            if problem is not None:
                return self._refuse(f"input {problem}; step from t = {current_time} refused")
        # what a refused or interrupted step puts back: the states, the time, the exchange due
        # and, where the connections move within the step (several internal steps, iterations,
        # multi-rate) or an exchange run again would not move the same values, the inputs
        # before this step's exchange (otherwise the exchange is due again and moves the same)
        saved = self._snapshot(count > 1 or bool(self.iterations) or bool(self._slow) or self._chained)
        inboxes = [dict(inbox) for inbox in self._inbox.values()] if self._inbox else None
        n, extra, due = self._n, self._extra, self._due
        try:
            if due:
                try:
                    self._exchange(None if due == 2 else self._stages[1:])
                except Exception as exc:
                    raise _Unconnected(exc) from None
            if self._slow and h == self.internal_step:
                self._multirate(count, h)
            else:
                self._uniform(count, h)
        except BaseException as exc:             # refused, failed or interrupted: undone
            repeat_until_done(self._put_back, saved, inboxes, n, extra, due)
            if not isinstance(exc, Exception):    # an interrupt: the entry passes it on
                raise
            if isinstance(exc, _Unconnected):
                return self._refuse(f"the connections cannot be evaluated at t = {self._time()!r}: "
                                    f"{type(exc.args[0]).__name__}: {exc.args[0]}; step refused")
            t, h = self._at
            where = f"the internal step from t = {t!r} with h = {h!r}"
            if isinstance(exc, _Refused):
                element, problem = exc.args
                self.log(f"{self._labels[id(element)]}: {problem}", Fmi2Status.error)
                return self._refuse(f"{self._labels[id(element)]} refused {where}; the system keeps the state "
                                    f"of t = {self._time()!r}")
            return self._refuse(f"{where} failed ({type(exc).__name__}: {exc}); the system keeps the state of "
                                f"t = {self._time()!r}")
        return True

    def _put_back(self, saved, inboxes, n: int, extra: float, due: int):
        """The system as at the start of a doStep (do_step's ``saved`` etc.)."""
        self._restore(saved)
        if inboxes:
            for inbox, values in zip(self._inbox.values(), inboxes):
                inbox.clear()
                inbox.update(values)
        for inst in self._lags:
            self._lags[inst] = 0.0
        self._n, self._extra, self._due = n, extra, due

    def _over_budget(self, step_size: float, count: int, h: float, work: int) -> str:
        """Why a host step of ``count`` internal steps of ``h`` (``work`` element steps) is refused."""
        per_step = (self.iterations + 1) * len(self._order)
        longest = max(STEP_BUDGET.cap // per_step // self._frame, 1) * self._frame
        repeated = f" x {self.iterations + 1} (iterations)" if self.iterations else ""
        return str(STEP_BUDGET.exceeded(
            f"system {self.system['name']}", step_size,
            f"h = {step_size!r} s is {count} internal steps of {h!r} s x {len(self._order)} elements{repeated} = "
            f"{work} element steps; give the host a step of at most {longest} x {h!r} = {longest * h!r} s, "
            f"or a longer {INTERNAL_STEP}")) + "; step refused, the state is kept"

    def _uniform(self, count: int, h: float):
        """``count`` internal steps of every element with h (systems.master.run's step)."""
        start, internal_step = self.start_time, self.internal_step
        iterated, stepped, internal = self.iterations, self._stepped, h == internal_step
        for j in range(count):
            t = start + self._n * internal_step + self._extra        # _time()
            self._at = (t, h)
            if j:
                self._exchange()
            if iterated:
                self._iterated(t, h)
            else:
                for element in stepped:
                    problem = element.take_step(t, h)
                    if problem is not None:
                        raise _Refused(element, problem)
            if internal:
                self._n += 1
            else:
                self._extra += h
            self._due = 2

    def _iterated(self, t: float, h: float):
        """One internal step repeated ``iterations`` times from the saved states with every
        connection at the mean of its values at t and at t + h (systems.master.run's
        ``iterate``: the same operations in the same order)."""
        start = self._targets()
        saved = self._snapshot(True)
        for round_ in range(self.iterations + 1):
            if round_:
                self._exchange()
                end = self._targets()
                self._restore(saved)
                for (_, moves, _, _), first, last in zip(self._stages, start, end):
                    for (_, _, target, name, *_), a, b in zip(moves, first, last):
                        target[name] = 0.5 * (a + b)
            for element in self._stepped:
                problem = element.take_step(t, h)
                if problem is not None:
                    raise _Refused(element, problem)

    def _multirate(self, count: int, h: float):
        """``count`` internal steps (a whole number of frames): the elements without a rate
        step every internal step; one with a rate (multiple m) steps at the end of its m
        internal steps from their start, with its Real inputs the mean of the m values the
        connections gave it (summed in order, divided by m)."""
        lags, slow, fast = self._lags, self._slow, self._fast_steps
        start, extra = self.start_time, self._extra
        try:
            for j in range(count):
                n = self._n
                t = start + n * h + extra
                self._at = (t, h)
                for inst, _, m, _, _ in slow:
                    lags[inst] = (n % m) * h
                if j:
                    self._exchange()
                for entry in slow:
                    inbox, keys = self._inbox[entry[0]], entry[3]
                    if n % entry[2]:
                        entry[4] = [a + inbox[k] for a, k in zip(entry[4], keys)]
                    else:
                        entry[4] = [inbox[k] for k in keys]
                for element in fast:
                    problem = element.take_step(t, h)
                    if problem is not None:
                        raise _Refused(element, problem)
                self._n = n + 1
                for inst, element, m, keys, sums in slow:
                    if (n + 1) % m == 0:
                        values = vars(element)
                        for k, a in zip(keys, sums):
                            values[k] = a / m
                        self._at = (start + (n + 1 - m) * h + extra, m * h)
                        problem = element.take_step(self._at[0], m * h)
                        if problem is not None:
                            raise _Refused(element, problem)
                self._due = 2
        finally:
            for inst in lags:
                lags[inst] = 0.0

    def _snapshot(self, with_inputs: bool):
        """(the elements' states, their inputs if ``with_inputs`` else None), for _restore."""
        states = [el.state for el in self._order]
        return states, [el.read_inputs(el) for el in self._order] if with_inputs else None

    def _restore(self, snapshot):
        """Put the elements back at the states (and inputs, when saved) of ``snapshot``."""
        states, inputs = snapshot
        if inputs is not None:
            for element, values in zip(self._order, inputs):
                vars(element).update(zip(self._input_names[id(element)], values))
        for element, state in zip(self._order, states):
            element.put_back(state)
        self._fresh.clear()

    # ------------------------------------------------------------------ get / set
    def _get_values(self, vrs, kind: str):
        plans, key = self._get_plans[kind], tuple(vrs)
        # a dict subclass's [] goes through a Python-level slot: get is the fast path, [] makes
        # (and keeps) a plan asked for the first time
        through, pairs, own = plans.get(key) or plans[key]
        if self._due and self._fmi_phase is not INSTANTIATED:
            if self._chained:       # an interrupted get is run again (fmus.shell): the same exchange
                saved, due = self._snapshot(True), self._due
                try:
                    self._exchange(None if due == 2 else self._stages[1:])
                except BaseException:
                    repeat_until_done(self._put_back, saved, None, self._n, self._extra, due)
                    raise
            else:
                self._exchange(None if self._due == 2 else self._stages[1:])
        self._refresh(through)
        values = _read_attributes(pairs, CONVERT[kind])
        for position in own:
            values.insert(position, self.internal_step)
        return values

    def _set_values(self, vrs, values, kind: str):
        table = self._writers[kind]
        try:
            targets = [table[vr] for vr in vrs]
        except KeyError as missing:
            raise TypeError(f"variable with valueReference={missing.args[0]} is not a settable {kind} "
                            "(a parameter or input of this type)") from None
        if self._fmi_phase is not INSTANTIATED:
            fixed = [self.variables[vr].name for vr, (_, _, causality) in zip(vrs, targets) if causality == PARAMETER]
            if fixed:
                raise StateError(f"parameter {', '.join(fixed)} is fixed: it can be set only before "
                                 "fmi2ExitInitializationMode")
        for (target, name, _), value in zip(targets, values):
            vars(target)[name] = value
        self._fresh.clear()
        if self._fmi_phase is not INSTANTIATED and self._restage and not self._due:
            self._due = 1


    # ------------------------------------------------------------------ FMU state
    @fmi_entry("fmi2GetFMUstate")
    def _get_fmu_state(self):
        return {
            "system": self.system["name"],
            "code": code_fingerprint()[:12],
            "internal_step": self.internal_step,
            "initialized": self._fmi_phase is not INSTANTIATED,
            "start_time": self.start_time,
            "time": [self._n, self._extra],
            "due": self._due,
            "elements": {inst: el.record() for inst, el in self.elements.items()},
        }

    @fmi_entry("fmi2SetFMUstate")
    def _set_fmu_state(self, saved):
        if not isinstance(saved, dict):
            raise StateError(f"not an FMU state: {saved!r}")
        if "invalid" in saved:
            raise StateError(saved["invalid"])
        if saved.get("system") != self.system["name"] or not isinstance(saved.get("elements"), dict) \
                or set(saved["elements"]) != set(self.elements):
            raise StateError(f"not a state of the system {self.system['name']!r} (components "
                             f"{sorted(self.elements)}): it was not written by this FMU's fmi2GetFMUstate")
        if saved.get("code") != code_fingerprint()[:12]:
            raise StateError(f"the state was written by system code {saved.get('code')!r}, this FMU runs "
                             f"{code_fingerprint()[:12]}: set states of the same build only")
        for inst, element in self.elements.items():
            record = saved["elements"][inst]
            problem = (f"not an FMU state: {record!r}" if not isinstance(record, dict)
                       else element.record_problem(record, type(element).__name__))
            if problem is not None:
                raise StateError(f"{self._labels[id(element)]}: {problem}")
        before = self._get_fmu_state.__wrapped__(self)
        self._fresh.clear()
        try:
            self._set_state(saved)
        except BaseException:       # an error, or an interrupt (the call is then run again)
            repeat_until_done(self._set_state, before)
            raise

    def _set_state(self, saved):
        """Set a state checked by _set_fmu_state.  The state of an initialized instance set
        into one that is not (instantiated, parameters maybe set) initializes it as that
        instance was, as an element's state does (fmus.shell): the elements' parameters and
        states, the internal step, the start time and the time count."""
        for inst, element in self.elements.items():
            try:
                element.restore(saved["elements"][inst], lambda: "it was altered after fmi2GetFMUstate")
            except StateError as exc:
                raise StateError(f"{self._labels[id(element)]}: {exc}") from None
        self.internal_step = float(saved["internal_step"])
        self.start_time = float(saved["start_time"])
        self._n, self._extra = int(saved["time"][0]), float(saved["time"][1])
        self._due = int(saved["due"])
        if self._fmi_phase is not TERMINATED:
            self._fmi_phase = INSTANTIATED
        if saved["initialized"]:        # what doStep uses, for these elements and internal step
            self._prepare_stepping()
        for inst, inbox in self._inbox.items():       # a communication point: the inputs set
            inbox.update((name, getattr(self.elements[inst], name)) for name in inbox)
        self._fresh.clear()
