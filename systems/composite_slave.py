"""Runtime of a system FMU: a whole system of element models as one model, in the FMI shell.

The system FMU is the one FMI shell (:class:`fmus.shell.Shell`: its guard table, get/set
tables, FMU-state and error funnels, interrupts) around :class:`SystemModel`, as an element
FMU is the shell around its element model: ``Composite``.  :class:`SystemModel` gives the
shell what its protocol asks (fmus.shell's docstring) and holds everything of the system,
nothing FMI.

This module runs inside the FMU (``build_fmus.build_system_fmu`` ships it as
``resources/drivetrain_composite/slave.py``), so it imports the standard library and the
element code (``fmus``, ``solvers``) only; the build side
is ``systems/composite.py``.

The system travels in ``resources/composite.json`` (written from the system's .ssd by
``systems.composite.describe``; the .ssd itself is beside it for reference): its components
(element of ``fmus.MODELS`` and bound parameter values), its connections, the FMU's
interface (inputs, outputs) and the internal step.  The elements are their models, driven
here through the model protocol of :mod:`fmus.model` only; no FMI call passes between them.

Exchange and stepping are the one co-simulation algorithm (:mod:`systems.algorithm`,
shipped beside this module), each element model a port of it (:class:`ModelPort`), as
``systems.master.run`` drives it over the element FMUs: at a communication point the
connections whose source has no direct feedthrough are moved first, then those whose
source has, then every element steps from t to t + h with its inputs held.  Time is
counted (t = t0 + n h), not accumulated.  A host step H = k h runs k internal steps, each
with that exchange, the FMU inputs held over H.  With k = 1 the results are those of
``systems.master`` running the element FMUs (the same code).

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
"""
from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import replace

from drivetrain_fmu import fmus
from drivetrain_fmu.fmus.compliance import SLIVER, STEP_ROUNDING
from drivetrain_fmu.fmus.model import ParameterError, StateError
from drivetrain_fmu.fmus.shell import Shell, repeat_until_done
from drivetrain_fmu.fmus.variables import INPUT, OUTPUT, PARAMETER, REAL, Var
from drivetrain_fmu.solvers.budget import Budget

from .algorithm import Algorithm, Refused, UseReference, Variable, stages

try:            # compiled, the algorithm's single-rate kernel runs the elements (system_kernel's docstring)
    from .system_kernel import SystemLoop
except ImportError:
    SystemLoop = None

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


def source_fingerprint() -> str:
    """SHA-256 of the composite runtime's sources: this module, the co-simulation algorithm
    and its kernel beside it (systems/algorithm.py and system_kernel.py, shipped in
    drivetrain_composite);
    the slave script compares it with the build's (one copy of the runtime per process, as
    for the element code).  The sources lie beside the modules also when the FMU runs them
    compiled (compiled_modules)."""
    import hashlib              # here: an FMU's first instantiation does without it (fmus.FINGERPRINT_FILE)

    digest = hashlib.sha256()
    for module in (__name__.rpartition(".")[2], "algorithm", "system_kernel"):
        with open(os.path.join(os.path.dirname(__file__), module + ".py"), "rb") as handle:
            digest.update(handle.read())
    return digest.hexdigest()


_LOADED_FINGERPRINT = fmus.stored_or_hashed(os.path.dirname(__file__), source_fingerprint)


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
    components = description["components"]
    declared = {inst: {v.name: v for v in fmus.model_class(c["element"]).VARIABLES}
                for inst, c in components.items()}
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


def _feedthrough_sources(elements) -> list:
    """Each of ``elements`` once, in order of first appearance (whose feedthrough outputs
    a get brings up to date)."""
    return list({id(element): element for element in elements}.values())


def read_description(resources: str) -> dict:
    with open(os.path.join(resources, DESCRIPTION_FILE), encoding="utf-8") as handle:
        description = json.load(handle)
    if description.get("format") != FORMAT:
        raise ValueError(f"{DESCRIPTION_FILE} has format {description.get('format')!r}; this runtime reads {FORMAT}")
    return description


class _Unconnected(Exception):
    """The connections could not be evaluated (args[0]: the cause)."""


class ModelPort:
    """An element model in-process as a port of the co-simulation algorithm
    (systems.algorithm), driven through the model protocol (fmus.model) only: its readers and
    writers are the model's variables (items of ``vars(model)``, names interned as the
    attributes' own), a reader of a feedthrough output first brings the model's feedthrough
    outputs up to date (its refresh is the model's ``update_feedthrough``), its step is
    ``take_step`` (Refused, with ``label``, when the model refuses it), its saved state the
    model's immutable state and its inputs.  The model's methods a step calls are bound once."""

    __slots__ = ("label", "model", "_declared", "_input_names", "_take_step")   # as SystemModel's

    def __init__(self, label: str, model):
        self.label, self.model = label, model
        self._declared = {v.name: v for v in model.VARIABLES}
        self._input_names = [v.name for v in model.input_variables]
        self._take_step = model.take_step

    def variable(self, name: str) -> Variable | None:
        var = self._declared.get(name)
        return None if var is None else Variable(var.causality, var.type, var.unit, tuple(var.depends))

    def reader(self, names):
        through = any(self._declared[name].causality == OUTPUT and self._declared[name].depends for name in names)
        return (vars(self.model), [sys.intern(name) for name in names],
                self.model.update_feedthrough if through else None)

    def writer(self, names):
        return vars(self.model), [sys.intern(name) for name in names], self.written

    def written(self):
        """Inputs were written into the model's variables: its feedthrough outputs are stale."""
        self.model.fresh = False

    def skips(self, h: float) -> bool:
        """A stateless model (no state, outputs follow the inputs) that takes steps of h has
        nothing to advance."""
        return self.model.stateless and self.model.accepts_step(h)

    def step(self, t: float, h: float):
        problem = self._take_step(t, h)
        if problem is not None:
            raise Refused(self.label, problem)

    def save(self):
        model = self.model
        return model.state, model.read_inputs(model)

    def restore(self, saved):
        state, inputs = saved
        if inputs is not None:
            vars(self.model).update(zip(self._input_names, inputs))
        self.model.put_back(state)

    def release(self, saved):
        pass


# ---------------------------------------------------------------------------- the system as a model
class SystemModel:
    """A whole system as one model (module docstring): what the FMI shell (:mod:`fmus.shell`)
    asks of a model, over the element models of ``resources/composite.json``:

    * ``interface()``: the FMU's variables (:func:`interface`); ``parameter_names``;
    * ``reader(names, convert)`` / ``writer(names)``: reading FMU variables (the exchange first
      when one is due, then the feedthrough outputs read brought up to date) and writing
      parameters and inputs into the element models;
    * ``initialize()``: the parameters checked naming ``inst.name``, the rates, the internal
      step as the step-mean compliances' ``T_comm``, every element initialized, the exchange;
    * ``take_step(t, h)``: a host step of whole internal steps, None when taken, else why it is
      refused (every element then as before, also when interrupted); ``undo_step()``;
    * ``record()`` / ``record_problem(saved, name)`` / ``restore(saved, why_not)``: the state.

    ``state`` is None before initialization."""

    # what every step reads and writes, as slots: a slot is found by the class's (cached)
    # look-up alone, an attribute in the instance dict also needs that dict's (internal_step
    # is not one: a writer puts it into the instance dict, as an element's parameters)
    __slots__ = ("_n", "_extra", "_due", "_order", "_ports", "_driven", "algorithm", "_run", "iterations",
                 "_fmu_inputs", "_whole_steps", "_frame", "_restage", "_chained", "_undo")

    def __init__(self, resources: str | None = None):
        self.system = read_description(resources)
        self.description = (f"System {self.system['name']} as one FMU ({len(self.system['components'])} "
                            f"elements in-process): {self.system['description']}").strip().rstrip(":")
        self.DEFAULT_STOP, self.DEFAULT_STEP = self.system.get("stop"), self.system["internal_step"]
        self.start_time = 0.0
        self.internal_step = float(self.system["internal_step"])
        self._n, self._extra = 0, 0.0
        self._due = 2                       # 2: full exchange due, 1: stage 2 only, 0: none
        self._undo = None
        self.rates = {inst: float(h) for inst, h in self.system.get("rates", {}).items()}
        self.iterations = int(self.system.get("iterations", 0))
        self.algorithm, self._run, self._frame = None, None, 1

        self.elements = {}
        for inst, component in self.system["components"].items():
            element = fmus.model_class(component["element"])()     # its module alone (fmus.REGISTRY)
            element.assign(component["parameters"])
            self.elements[inst] = element
        self._order = list(self.elements.values())
        self._labels = {id(el): f"{inst} ({type(el).__name__})" for inst, el in self.elements.items()}
        self._ports = {inst: ModelPort(self._labels[id(el)], el) for inst, el in self.elements.items()}
        self._driven = list(self._ports.values())       # the ports whose models a step moves (_snapshot)

        self.variables = interface(self.system)
        self._vars = {v.name: v for v in self.variables}
        self.parameter_names = frozenset(v.name for v in self.variables if v.causality == PARAMETER)
        self._fmu_inputs = [(self._vars[key], self.elements[key.split(".")[0]], key.split(".", 1)[1])
                            for key in self.system["inputs"]]
        self._plan(set(self.system["inputs"]))

    @property
    def state(self):
        """None before initialization (the co-simulation algorithm once initialized)."""
        return self.algorithm

    def interface(self) -> list[Var]:
        return self.variables

    # ------------------------------------------------------------------ exchange plan
    def _is_feedthrough(self, inst: str, name: str) -> bool:
        """inst.name is an output with direct feedthrough (a get brings it up to date first)."""
        return any(v.name == name and v.causality == OUTPUT and v.depends for v in self.elements[inst].VARIABLES)

    def _plan(self, fmu_inputs):
        """What the exchange means for the FMI calls: does a stage-2 source's value depend
        without delay on a stage-2 target?  Then an exchange cut short (an interrupt) and run
        again moves other values than one run once: a step then saves the inputs before its
        exchange (do_step).  Does a new FMU input value change what stage 2 moves?  Then a set
        of it makes stage 2 due again."""
        links = self.system["connections"]
        late = stages(self._ports, links)[1]
        targets = {f"{c[2]}.{c[3]}" for c in late}
        self._chained = any(targets & self._input_reach(c[0], c[1]) for c in late)
        sources = {f"{c[0]}.{c[1]}" for c in late}
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

    def _exchange(self):
        """The exchange due at the communication point now: the whole one (``_due`` 2) or
        stage 2 only (1: after a new FMU input); none is due after it.  The kernel's where
        there is one, the algorithm's where it leaves the exchange to it."""
        first_stage = 0 if self._due == 2 else 1
        loop = self._run
        if loop is not None:
            try:
                loop.exchange(first_stage)
                self._due = 0
                return
            except UseReference:
                self._leave_to_algorithm()
        self.algorithm.exchange(0, first_stage)
        self._due = 0

    # ------------------------------------------------------------------ reading and writing
    def reader(self, names, convert):
        """model -> list of the values of the FMU variables ``names`` as ``convert``: the
        exchange first when one is due (initialized), then the feedthrough outputs among them
        brought up to date where stale, then the element variables (items of ``vars(model)``)
        and ``internal_step``.  It holds the element models' variables, not the system."""
        own = [i for i, name in enumerate(names) if name == INTERNAL_STEP]
        paths = [name for name in names if name != INTERNAL_STEP]
        through = _feedthrough_sources(self.elements[path.split(".", 1)[0]] for path in paths
                                       if self._is_feedthrough(*path.split(".", 1)))
        pairs = _attribute_pairs(self.elements, paths)
        models = [(self.elements[inst], sys.intern(name)) for inst, name in (path.split(".", 1) for path in paths)]
        planned = [None, None]          # the kernel's plan of these variables, and its kernel

        def read(model):
            if model._due and model.algorithm is not None:
                if model._chained:
                    model._exchange_repeatable()
                else:
                    model._exchange()
            loop = model._run
            if loop is not None:        # its elements' values are the kernel's (system_kernel's docstring)
                if planned[1] is not loop:
                    planned[:] = loop.plan(models), loop
                values = loop.read(planned[0], convert)
            else:
                for element in through:
                    if not element.fresh:       # every writer of inputs clears it (ModelPort.written, writer)
                        element.update_feedthrough()
                values = [attributes[name] for attributes, name in pairs]
                for i, value in enumerate(values):
                    if type(value) is not convert:      # converted only where not of the type already
                        values[i] = convert(value)
            for position in own:
                values.insert(position, model.internal_step)
            return values
        return read

    def _exchange_repeatable(self):
        """The exchange due before a get where a stage-2 source depends without delay on a
        stage-2 target (``_chained``): undone when it fails or is interrupted, so that the
        get run again (fmus.shell) moves the same values."""
        saved, due = self._snapshot(True), self._due
        try:
            self._exchange()
        except BaseException:
            repeat_until_done(self._put_back, saved, None, self._n, self._extra, due)
            raise

    def writer(self, names):
        """(model, values) -> None writing the parameters and inputs ``names`` into the
        element models (an input makes its element's feedthrough stale; once initialized,
        where a new FMU input changes what stage 2 moves, it makes stage 2 due)."""
        targets = [(None, INTERNAL_STEP) if name == INTERNAL_STEP else     # None: the system's own
                   (vars(self.elements[name.split(".", 1)[0]]), sys.intern(name.split(".", 1)[1])) for name in names]
        inputs = _feedthrough_sources(self.elements[name.split(".", 1)[0]] for name in names
                                      if self._vars[name].causality == INPUT)

        def write(model, values):
            for (attributes, name), value in zip(targets, values):
                (vars(model) if attributes is None else attributes)[name] = value
            for element in inputs:
                element.fresh = False
            if model._run is not None:     # the FMU's inputs: the kernel reads them again
                model._run.inputs_set = True
            if model.algorithm is not None and model._restage and not model._due:
                model._due = 1
        return write

    # ------------------------------------------------------------------ initialization
    def initialize(self):
        """The parameters checked (each named ``inst.name``, or the element and the relation),
        the rates, the internal step as the step-mean compliances' T_comm, every element
        initialized, the exchange at the start."""
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
                raise RuntimeError(f"{self._labels[id(element)]} cannot be initialized: "
                                   f"{type(exc).__name__}: {exc}") from None
        self._prepare_stepping()
        self._n, self._extra, self._due = 0, 0.0, 2
        try:
            self._exchange()
        except BaseException:
            self.algorithm = self._run = None
            raise

    def _prepare_stepping(self):
        """What a step uses, from the initialized elements and the internal step (at
        initialization, and when the state of an initialized instance is set into one that
        is not)."""
        # an FMU input is range-checked where its element checks it (a Table's unused points,
        # a ClutchChain's clamps beyond n_bodies are not), and always refused when not finite
        self._input_checks = [(var, element, name, any(v.name == name for v in element.checked_inputs))
                              for var, element, name in self._fmu_inputs]
        multiples = {inst: round(rate / self.internal_step) for inst, rate in self.rates.items()}
        self.algorithm = Algorithm(self._ports, self.system["connections"], self.internal_step, multiples,
                                   self.iterations)
        single = not multiples and not self.iterations and not self._chained
        # the compiled loop, where there is one: the steps' and the FMU binary's hot calls
        # (fmus/fmi_kernel.py, SystemLoop.take and ready) run on it
        self._run = (SystemLoop(self._ports, self.system["connections"], self.internal_step, self.algorithm)
                     if SystemLoop is not None and single else None)
        # the kernel keeps (SystemLoop.save) what its elements hold: a snapshot holds the others
        self._driven = [port for port in self._ports.values() if self._run is None or not self._run.runs(port.model)]
        self._frame = self.algorithm.frame
        for inst, own in self.algorithm.own.items():     # a communication point: the inputs set
            own.inbox.update((name, getattr(self.elements[inst], name)) for name in own.inbox)
        self._whole_steps = {}          # host step size -> (count, h) of _sub_steps

    # ------------------------------------------------------------------ stepping
    def take_step(self, current_time: float, step_size: float):
        """A host step from ``current_time`` over ``step_size`` (finite, > 0): None when taken,
        else why it is refused (a message, or the element's and then the system's), every
        element then at the state and inputs of the last communication point (also when
        interrupted: undone, and the interrupt raised on)."""
        plan = self._sub_steps(current_time, step_size)
        if isinstance(plan, str):
            return plan
        count, h = plan
        if self._fmu_inputs:
            problem = self._input_problem()
            if problem is not None:
                return f"input {problem}; step from t = {current_time} refused"
        # what a refused or interrupted step puts back: the states, the time, the exchange due
        # and, where the connections move within the step (several internal steps, iterations,
        # multi-rate) or an exchange run again would not move the same values, the inputs
        # before this step's exchange (otherwise the exchange is due again and moves the same)
        own = self.algorithm.own
        saved = self._snapshot(count > 1 or bool(self.iterations) or bool(own) or self._chained)
        inboxes = [dict(rate.inbox) for rate in own.values()] if own else None
        due = self._due
        loop = self._run
        undo = (saved, inboxes, self._n, self._extra, due, None if loop is None else loop.save())
        try:
            try:
                self._advance(due, count, h, loop)
            except UseReference:        # the kernel leaves this step to the algorithm: taken again
                repeat_until_done(self._put_back, *undo)
                self._leave_to_algorithm()
                self._advance(due, count, h, None)
        except BaseException as exc:             # refused, failed or interrupted: undone
            repeat_until_done(self._put_back, *undo)
            if not isinstance(exc, Exception):    # an interrupt: the shell passes it on
                raise
            if isinstance(exc, _Unconnected):
                return (f"the connections cannot be evaluated at t = {self._time()!r}: "
                        f"{type(exc.args[0]).__name__}: {exc.args[0]}; step refused")
            t, h = self.algorithm.at
            where = f"the internal step from t = {t!r} with h = {h!r}"
            if isinstance(exc, Refused):
                label, problem = exc.args
                return (f"{label}: {problem}",
                        f"{label} refused {where}; the system keeps the state of t = {self._time()!r}")
            return (f"{where} failed ({type(exc).__name__}: {exc}); the system keeps the state of "
                    f"t = {self._time()!r}")
        self._undo = undo
        return None

    def _advance(self, due: int, count: int, h: float, loop):
        """The exchange if ``due``, then ``count`` internal steps of h (by ``loop``, the
        kernel, when not None and h is the internal step)."""
        if due:
            try:
                self._exchange()
            except Exception as exc:
                raise _Unconnected(exc) from None
        if loop is not None and h == self.internal_step and count:
            loop.run(self._n, count, self.start_time, h, self._extra)
            self._n += count
            self._due = 2
        else:
            self._internal_steps(count, h)

    def _leave_to_algorithm(self):
        """Before the algorithm drives the element models: they are given what the kernel
        holds, and the kernel reads them again after."""
        if self._run is not None:
            self._run.sync()
            self._run.stale = True

    def undo_step(self):
        """The system as before the last step :meth:`take_step` took: the shell's do_step
        undoes the step it has just taken (a step the FMU's binary made on the loop,
        SystemLoop.take, is not one: nothing undoes it)."""
        self._put_back(*self._undo)

    def _time(self) -> float:
        return self.start_time + self._n * self.internal_step + self._extra

    def _sub_steps(self, current_time: float, step_size: float):
        """(count, h) of internal steps for a host step, or the reason it is refused (not on
        this FMU's time, not a whole number of internal steps, more than STEP_BUDGET)."""
        h = self.internal_step
        expected = self.start_time + self._n * h + self._extra          # _time()
        if current_time != expected and abs(current_time - expected) > 1e-9 * max(abs(expected), step_size, h):
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
        longest = ", ".join(f"{inst} {own.multiple * h!r} s" for inst, own in self.algorithm.own.items())
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

    def _put_back(self, saved, inboxes, n: int, extra: float, due: int, kernel=None):
        """The system as at the start of a doStep (do_step's ``saved`` etc.; ``kernel``: what
        the kernel held, SystemLoop.save)."""
        self._restore(saved)
        if self._run is not None:
            if kernel is not None:
                self._run.restore(kernel)
            else:
                self._run.stale = True
        if inboxes:
            for own, values in zip(self.algorithm.own.values(), inboxes):
                own.inbox.clear()
                own.inbox.update(values)
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

    def _internal_steps(self, count: int, h: float):
        """``count`` internal steps of h, each after the exchange (the first's is done):
        the algorithm's step (multi-rate when h is the internal step, the ports with their
        own rate stepping at the end of their steps; iterated), or, for a host's final
        remainder, every element over h."""
        algorithm, start, internal_step = self.algorithm, self.start_time, self.internal_step
        self._leave_to_algorithm()
        internal = h == internal_step
        whole = internal or bool(self.iterations)
        for j in range(count):
            n = self._n
            t = start + n * internal_step + self._extra        # _time()
            if j:
                algorithm.at = (t, h)       # where an exchange that fails is (a step sets it itself)
                algorithm.exchange(n if internal else 0)
            if whole:
                algorithm.step(n, t, h, start, self._extra)
            else:
                algorithm.step_all(t, h)
            if internal:
                self._n = n + 1
            else:
                self._extra += h
            self._due = 2

    def _snapshot(self, with_inputs: bool):
        """(the states of the elements a step moves, not those the kernel runs, their inputs if
        ``with_inputs`` else None: kept), for _restore; a state is immutable, so this is all a
        snapshot copies."""
        models = [port.model for port in self._driven]
        return [model.state for model in models], [model.read_inputs(model) for model in models] if with_inputs else None

    def _restore(self, snapshot):
        """Put the elements of ``_snapshot`` back at its states (and inputs, when saved)."""
        states, inputs = snapshot
        for i, port in enumerate(self._driven):
            port.restore((states[i], None if inputs is None else inputs[i]))

    # ------------------------------------------------------------------ state
    def record(self) -> dict:
        """The internal step, start time, time count, exchange due and every element's record."""
        if self._run is not None:
            self._run.sync()
        return {
            "internal_step": self.internal_step,
            "initialized": self.algorithm is not None,
            "start_time": self.start_time,
            "time": [self._n, self._extra],
            "due": self._due,
            "elements": {inst: el.record() for inst, el in self.elements.items()},
        }

    def record_problem(self, saved: dict, name: str) -> str | None:
        """Why ``saved`` (a record of the system ``name``) cannot be set, or None."""
        if not isinstance(saved.get("elements"), dict) or set(saved["elements"]) != set(self.elements):
            return (f"not a state of the system {name!r} (components {sorted(self.elements)}): it was not "
                    "written by this FMU's fmi2GetFMUstate")
        for inst, element in self.elements.items():
            record = saved["elements"][inst]
            problem = (f"not an FMU state: {record!r}" if not isinstance(record, dict)
                       else element.record_problem(record, type(element).__name__))
            if problem is not None:
                return f"{self._labels[id(element)]}: {problem}"
        return None

    def restore(self, saved: dict, why_not_restorable):
        """Set a record checked by :meth:`record_problem`; one that cannot be set leaves the
        system as it was (also when interrupted)."""
        before = self.record()
        try:
            self._set_state(saved, why_not_restorable)
        except BaseException:       # an error, or an interrupt (the call is then run again)
            repeat_until_done(self._set_state, before, why_not_restorable)
            raise

    def _set_state(self, saved, why_not_restorable):
        """The elements' parameters and states, the internal step, the start time and the
        time count of ``saved``.  The state of an initialized instance set into one that is
        not (parameters maybe set) initializes it as that instance was, as an element's
        state does (fmus.model.Model.restore)."""
        for inst, element in self.elements.items():
            try:
                element.restore(saved["elements"][inst], why_not_restorable)
            except StateError as exc:
                raise StateError(f"{self._labels[id(element)]}: {exc}") from None
        self.internal_step = float(saved["internal_step"])
        self.start_time = float(saved["start_time"])
        self._n, self._extra = int(saved["time"][0]), float(saved["time"][1])
        self._due = int(saved["due"])
        if saved["initialized"]:        # what a step uses, for these elements and internal step
            self._prepare_stepping()
        else:
            self.algorithm = self._run = None


# ---------------------------------------------------------------------------- the FMU
class Composite(Shell, SystemModel):
    """A whole system as one FMU: the FMI shell (fmus.shell) around the system model.  The
    slave script binds a subclass named after the system (pythonfmu's model identifier);
    everything else comes from the FMU's resources."""

    MODEL = SystemModel
    STATE_KIND = "system"
    #: a system state holds the layout of this runtime's record: one of other code is refused
    SAME_CODE_ONLY = True
    code_fingerprint = staticmethod(code_fingerprint)

    def state_owner(self) -> str:
        return self.system["name"]

    def state_title(self) -> str:
        return f"system {self.system['name']!r}"
