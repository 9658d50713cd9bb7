"""The element contract, checked for every entry of ``fmus.ELEMENTS`` through the BUILT FMUs
(fmpy's low-level ``FMU2Slave``), driven only by each element's declared ``VARIABLES`` so
that a new element gets every check without a line here.  One test function per clause:

a. each parameter set outside its declared range (just below ``low``, ``low`` itself when
   open, just above ``high``, NaN and inf for a Real) makes fmi2ExitInitializationMode fail
   with a log naming the parameter;
b. NaN and +-inf on every Real input, and a value just outside the range of every input
   that has one, make fmi2DoStep return fmi2Discard; every output, and the serialized FMU
   state, is then bit-identical to before the refused step, and the next valid step gives
   bit for bit what an untouched twin instance gives;
c. fmi2GetFMUstate/fmi2SetFMUstate, and fmi2SerializeFMUstate/fmi2DeSerializeFMUstate
   into a fresh instance (instantiated and initialized on its own, with the default
   parameters), continue bit-identically to the original for STEPS steps, under
   excitation (every torque, angle and speed input driven, a table's points nonzero);
d. a parameter set after initialization is refused (the call fails, the log names it) and
   its get still reports the old value; an output cannot be set (the call fails naming it,
   the output keeps its value);
e. right after initialization every output reads through the getter of its declared type:
   a Real is finite, an Integer an integer, a Boolean 0 or 1, and an output that has a
   ``<output>_start`` parameter reports that start value.

Parts already checked for every element elsewhere are not repeated here:

* tests/elements/test_fuzz.py: random parameters and inputs WITHIN the declared ranges (steps that
  return fmi2OK leave Real outputs finite; any refused step keeps outputs and state);
* tests/elements/test_model_descriptions.py: the declared types, ranges, units and dependencies in
  modelDescription.xml (the ranges the values here step outside of);
* tests/hosts/test_host_safety.py: state of another FMU or garbage bytes refused, states
  restored into instances of other parameters (Clutch), doStep after fmi2Terminate.

"Every parameter in use": several elements check only the parameters and inputs of the
parts their count parameter selects (ClutchChain's ``n_bodies``, NonlinearSpring's
``n_regions``, a table's ``n_points``: J_6 of a 3-body chain is not used, hence not
checked).  These members are declared as families (``Var.family``, decided by
``fmus.variables.in_use`` alone); clauses a, b and c run with every count parameter at the
value that puts each member in use (:func:`all_in_use`), so that no parameter or input is
idle.  Clause f checks those declarations: for every allowed count the members in use are
exactly the parameters and inputs the element's physics reads, and one count per element
by hand.
"""
from __future__ import annotations

import math
import re

import pytest
from fmpy import extract, read_model_description
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import (FMU2Slave, calloc, fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE,
                       fmi2CallbackFunctions, fmi2CallbackLoggerTYPE, free)

from drivetrain_fmu import fmus
from drivetrain_fmu.fmus.variables import BOOLEAN, INPUT, INTEGER, OUTPUT, PARAMETER, REAL, count_parameters, full_counts, in_use

pytestmark = pytest.mark.fmu

ELEMENT = pytest.mark.parametrize("element", fmus.ELEMENTS, ids=lambda e: e.__name__)
DISCARD = 2
#: steps before the state is taken and steps compared after it (clause c)
WARMUP, STEPS = 10, 20
#: amplitude of the excitation per input unit (the other inputs stay at their start values)
AMPLITUDE = {"N.m": 10.0, "rad": 1e-3, "rad/s": 1.0}
_GET = {REAL: "getReal", INTEGER: "getInteger", BOOLEAN: "getBoolean"}
_SET = {REAL: "setReal", INTEGER: "setInteger", BOOLEAN: "setBoolean"}


class Fmu:
    """One instance of a built element FMU, with its log and name-based access."""

    _unpacked: dict = {}

    def __init__(self, fmu_dir, element, name: str):
        path = str(fmu_dir / f"{element.__name__}.fmu")
        if path not in Fmu._unpacked:
            Fmu._unpacked[path] = (read_model_description(path), extract(path))
        model, where = Fmu._unpacked[path]
        self.element = element
        self.vr = {v.name: v.valueReference for v in model.modelVariables}
        self.declared = {v.name: v for v in element.VARIABLES}
        self.log: list[str] = []
        callbacks = fmi2CallbackFunctions()
        callbacks.logger = fmi2CallbackLoggerTYPE(self._on_log)
        callbacks.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
        callbacks.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
        self._callbacks = callbacks
        self.slave = FMU2Slave(guid=model.guid, unzipDirectory=where,
                               modelIdentifier=model.coSimulation.modelIdentifier, instanceName=name)
        self.slave.instantiate(callbacks=callbacks, loggingOn=True)
        self.slave.setupExperiment(startTime=0.0)
        self.slave.enterInitializationMode()

    def _on_log(self, _env, _name, _status, _category, message):
        self.log.append(message.decode("utf-8", "replace"))

    def try_call(self, function: str, *args):
        """(status, result, log of the call): status 0 when the call succeeded."""
        start = len(self.log)
        try:
            result = getattr(self.slave, function)(*args)
            status = 0
        except FMICallException as exc:
            result, status = None, exc.status
        return status, result, " | ".join(self.log[start:])

    def set(self, name: str, value):
        kind = self.declared[name].type
        return self.try_call(_SET[kind], [self.vr[name]], [value])

    def setup(self, values: dict):
        for name, value in values.items():
            status, _, log = self.set(name, value)
            assert status == 0, f"{self.element.__name__}: setting {name} = {value!r} failed: {log}"

    def initialize(self):
        status, _, log = self.try_call("exitInitializationMode")
        assert status == 0, f"{self.element.__name__}: fmi2ExitInitializationMode failed: {log}"
        return self

    def get(self, names) -> list:
        values = []
        for name in names:
            kind = self.declared[name].type
            values.append(getattr(self.slave, _GET[kind])([self.vr[name]])[0])
        return values

    def outputs(self) -> list:
        """Every output, bit for bit (a Real as float.hex: -0.0 differs from 0.0)."""
        names = outputs_of(self.element)
        return [float.hex(v) if isinstance(v, float) else v for v in self.get(names)]

    def state_outputs(self) -> list:
        """The outputs without direct feedthrough (readable whatever the inputs)."""
        names = [v.name for v in self.element.VARIABLES if v.causality == OUTPUT and not v.depends]
        return [float.hex(v) if isinstance(v, float) else v for v in self.get(names)]

    def serialized(self) -> bytes:
        state = self.slave.getFMUstate()
        blob = self.slave.serializeFMUstate(state)
        self.slave.freeFMUstate(state)
        return bytes(blob)

    def step(self, t: float, h: float) -> tuple[int, str]:
        status, _, log = self.try_call("doStep", t, h)
        return status, log

    def free(self):
        self.slave.freeInstance()


def outputs_of(element) -> list[str]:
    return [v.name for v in element.VARIABLES if v.causality == OUTPUT]


def all_in_use(element) -> dict:
    """Every part in use: each count parameter of the declared families at the value that
    puts every member in use (fmus.variables.full_counts), and every other Integer parameter
    with an upper bound (a variant: PlanetaryGear's clutch_members, ElastoBacklash's law,
    VehicleSimple's tire_model) at that bound."""
    counts = full_counts(element.VARIABLES)
    variants = {v.name: v.high for v in element.VARIABLES if v.causality == PARAMETER and v.type == INTEGER
                and v.high is not None and v.name not in counts}
    return {**variants, **counts}


def excitation_parameters(element) -> dict:
    """A source has no input: its table points y_i (the family "y") get nonzero values
    (alternating signs)."""
    return {v.name: (-1.0) ** v.family.index * v.family.index for v in element.VARIABLES
            if v.causality == PARAMETER and v.family is not None and v.family.stem == "y"}


def excited_inputs(element, n: int) -> dict:
    """The inputs at step n: each torque, angle and speed input varies around its start value
    (a different phase per input), the others (clamp forces, throttle, grade) at their start."""
    values = {}
    for k, var in enumerate(v for v in element.VARIABLES if v.causality == INPUT):
        amplitude = AMPLITUDE.get(var.unit) if var.type == REAL else None
        values[var.name] = var.start if amplitude is None else var.start + amplitude * (
            1.0 + 0.5 * math.sin(0.3 * n + k)) * (-1.0) ** k
    return values


def named(name: str, message: str) -> bool:
    """True when ``message`` names the variable ``name`` (a whole word)."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", message) is not None


def outside(var) -> list:
    """Values outside the declared range of ``var`` (a parameter or input)."""
    values = []
    if var.type == REAL:
        values += [math.nan, math.inf, -math.inf]
        if var.low is not None:
            values.append(var.low if var.low_open else math.nextafter(var.low, -math.inf))
        if var.high is not None:
            values.append(math.nextafter(var.high, math.inf))
    elif var.type == INTEGER:
        if var.low is not None:
            values.append(int(math.ceil(var.low)) - (0 if var.low_open else 1))
        if var.high is not None:
            values.append(int(var.high) + 1)
    return values


# ------------------------------------------------------------------------------ clause a
@ELEMENT
def test_a_parameter_outside_its_range_fails_initialization_naming_it(fmu_dir, element):
    name = element.__name__
    cases = [(v, value) for v in element.VARIABLES if v.causality == PARAMETER for value in outside(v)]
    assert cases or all(v.type == BOOLEAN for v in element.VARIABLES if v.causality == PARAMETER)
    failures = []
    for k, (var, value) in enumerate(cases):
        fmu = Fmu(fmu_dir, element, f"a{k}")
        fmu.setup({key: v for key, v in all_in_use(element).items() if key != var.name})
        fmu.setup({var.name: value})
        status, _, log = fmu.try_call("exitInitializationMode")
        if status == 0:
            failures.append(f"{var.name} = {value!r}: fmi2ExitInitializationMode succeeded")
            fmu.free()
        elif not named(f"{var.name} =", log) or "allowed range" not in log:
            failures.append(f"{var.name} = {value!r}: the log does not name it with its range: {log!r}")
        # an instance whose initialization failed (fmi2Fatal) is not freed: see
        # test_clutch_fmu.test_failed_initialization_leaves_process_healthy
    assert not failures, f"{name}:\n" + "\n".join(failures)


# ------------------------------------------------------------------------------ clause b
@pytest.mark.parametrize("element", [e for e in fmus.ELEMENTS if any(v.causality == INPUT for v in e.VARIABLES)],
                         ids=lambda e: e.__name__)
def test_a_bad_input_discards_the_step_and_keeps_everything(fmu_dir, element):
    name = element.__name__
    cases = [(v, value) for v in element.VARIABLES if v.causality == INPUT for value in outside(v)]
    h = element.DEFAULT_STEP
    parameters = {**all_in_use(element), **excitation_parameters(element)}
    subject, twin = (Fmu(fmu_dir, element, tag) for tag in ("subject", "twin"))
    try:
        for fmu in (subject, twin):
            fmu.setup(parameters)
            fmu.initialize()
        failures, n = [], 0

        def valid_step(fmu):
            fmu.setup(excited_inputs(element, n))
            status, log = fmu.step(n * h, h)
            assert status == 0, f"{name}: valid step {n} refused: {log}"

        for var, value in cases:
            for fmu in (subject, twin):
                valid_step(fmu)
            n += 1
            subject.setup(excited_inputs(element, n))
            outputs, state = subject.outputs(), subject.serialized()
            state_outputs = subject.state_outputs()
            subject.setup({var.name: value})
            status, log = subject.step(n * h, h)
            case = f"{var.name} = {value!r}"
            if status != DISCARD:
                failures.append(f"{case}: doStep returned {status}, not fmi2Discard ({DISCARD}): {log!r}")
                break                    # the subject has moved on: later comparisons would mislead
            if not named(var.name, log):
                failures.append(f"{case}: the log does not name the input: {log!r}")
            if subject.state_outputs() != state_outputs:
                failures.append(f"{case}: the outputs without feedthrough changed by the refused step")
            subject.setup({var.name: excited_inputs(element, n)[var.name]})
            if subject.outputs() != outputs:
                failures.append(f"{case}: the outputs differ after the refused step")
            if subject.serialized() != state:
                failures.append(f"{case}: the serialized FMU state differs after the refused step")
        for fmu in (subject, twin):
            valid_step(fmu)
        if subject.outputs() != twin.outputs() or subject.serialized() != twin.serialized():
            failures.append("the next valid step differs from the untouched twin's")
        assert not failures, f"{name}:\n" + "\n".join(failures)
    finally:
        subject.free()
        twin.free()


# ------------------------------------------------------------------------------ clause c
@ELEMENT
def test_a_saved_state_continues_bit_identically(fmu_dir, element):
    name = element.__name__
    h = element.DEFAULT_STEP
    original = Fmu(fmu_dir, element, "original")
    fresh = Fmu(fmu_dir, element, "fresh")
    try:
        original.setup({**all_in_use(element), **excitation_parameters(element)})
        original.initialize()
        fresh.initialize()                     # default parameters: the state brings its own
        for n in range(WARMUP):
            original.setup(excited_inputs(element, n))
            status, log = original.step(n * h, h)
            assert status == 0, f"{name}: step {n} refused: {log}"
        saved = original.slave.getFMUstate()
        blob = original.slave.serializeFMUstate(saved)
        at_save = original.outputs()

        def run_on(fmu):
            rows = []
            for n in range(WARMUP, WARMUP + STEPS):
                fmu.setup(excited_inputs(element, n))
                status, log = fmu.step(n * h, h)
                assert status == 0, f"{name}: step {n} refused: {log}"
                rows.append(fmu.outputs())
            return rows, fmu.serialized()

        first, end_state = run_on(original)
        # the excitation moves the element: else this test would compare constants
        assert any(row != at_save for row in first), f"{name}: no output moves under the excitation"
        status, _, log = original.try_call("setFMUstate", saved)
        assert status == 0, log
        restored = fresh.slave.deSerializeFMUstate(blob)
        status, _, log = fresh.try_call("setFMUstate", restored)
        assert status == 0, f"{name}: the deserialized state is refused by a fresh instance: {log}"
        assert fresh.outputs() == at_save
        # first read of the original after the restore, at the inputs it last read its
        # outputs with: the feedthrough outputs come from the restored state, not from before
        for fmu in (original, fresh):
            fmu.setup(excited_inputs(element, WARMUP + STEPS - 1))
        assert original.outputs() == fresh.outputs(), f"{name}: outputs after setFMUstate depend on the past"
        for fmu in (original, fresh):
            fmu.setup(excited_inputs(element, WARMUP - 1))      # the inputs the state was taken with
        assert original.outputs() == at_save
        assert run_on(original) == (first, end_state), f"{name}: setFMUstate does not replay bit for bit"
        assert run_on(fresh) == (first, end_state), f"{name}: a fresh instance does not continue bit for bit"
        original.slave.freeFMUstate(saved)
        fresh.slave.freeFMUstate(restored)
    finally:
        original.free()
        fresh.free()


# ------------------------------------------------------------------------------ clause d
def _other_value(var):
    """A value within the declared range of ``var`` that differs from its start value."""
    if var.type == BOOLEAN:
        return not var.start
    lo, hi = var.bounds()
    if var.type == INTEGER:
        return var.start + 1 if var.start + 1 <= hi else var.start - 1
    for candidate in (var.start * 2.0, var.start + 1.0, var.start / 2.0, var.start - 1.0):
        if candidate != var.start and lo <= candidate <= hi:
            return candidate
    raise AssertionError(f"no other value in the range of {var.name}")


@ELEMENT
def test_a_fixed_parameter_or_an_output_cannot_be_set(fmu_dir, element):
    name = element.__name__
    fmu = Fmu(fmu_dir, element, "fixed").initialize()
    try:
        failures = []
        for var in (v for v in element.VARIABLES if v.causality == PARAMETER):
            value = _other_value(var)
            status, _, log = fmu.set(var.name, value)
            if status == 0:
                failures.append(f"parameter {var.name} = {value!r} was set after initialization")
            elif not (named(var.name, log) and "fixed" in log):
                failures.append(f"parameter {var.name}: the log does not name it as fixed: {log!r}")
            if fmu.get([var.name]) != [var.start]:
                failures.append(f"parameter {var.name} reads {fmu.get([var.name])}, not {var.start!r}")
        for output in outputs_of(element):
            kind = fmu.declared[output].type
            before = fmu.get([output])
            status, _, log = fmu.set(output, {REAL: 3.0, INTEGER: 3, BOOLEAN: True}[kind])
            if status == 0:
                failures.append(f"output {output} was set")
            elif not named(output, log):
                failures.append(f"output {output}: the refusal does not name it: {log!r}")
            if fmu.get([output]) != before:
                failures.append(f"output {output} changed by a refused set")
        status, log = fmu.step(0.0, element.DEFAULT_STEP)
        assert status == 0, f"{name}: the instance cannot step after the refused sets: {log}"
        assert not failures, f"{name}:\n" + "\n".join(failures)
    finally:
        fmu.free()


# ------------------------------------------------------------------------------ clause e
def moved_starts(element) -> dict:
    """Every Real ``*_start`` parameter 0.25 away from its default (outputs that merely keep
    their zero before the first step would pass with the default starts, mostly 0), and the
    Boolean ones (``locked*_start``) false: a locked start needs the speeds it no longer has."""
    return {v.name: (v.start + 0.25 if v.type == REAL else False) for v in element.VARIABLES
            if v.causality == PARAMETER and v.type in (REAL, BOOLEAN) and v.name.endswith("_start")}


@ELEMENT
@pytest.mark.parametrize("config", ["defaults", "all_in_use_moved_starts"])
def test_outputs_are_valid_right_after_initialization(fmu_dir, element, config):
    name = element.__name__
    fmu = Fmu(fmu_dir, element, "initial")
    try:
        if config != "defaults":
            fmu.setup({**all_in_use(element), **excitation_parameters(element), **moved_starts(element)})
        fmu.initialize()
        failures = []
        outputs = outputs_of(element)
        # the count parameters as set: an output of a member not in use is 0 (docs/contract.md),
        # not its start value
        counts = {name: fmu.get([name])[0] for name in count_parameters(element.VARIABLES)}
        for output, value in zip(outputs, fmu.get(outputs)):
            kind = fmu.declared[output].type
            if kind == REAL and not (isinstance(value, float) and math.isfinite(value)):
                failures.append(f"{output} = {value!r} is not a finite Real")
            if kind == INTEGER and not isinstance(value, int):
                failures.append(f"{output} = {value!r} is not an Integer")
            if kind == BOOLEAN and value not in (0, 1):
                failures.append(f"{output} = {value!r} is not a Boolean (0 or 1)")
            start = fmu.declared.get(f"{output}_start")
            if (start is not None and start.causality == PARAMETER and in_use(counts, fmu.declared[output])
                    and fmu.get([start.name]) != [value]):
                failures.append(f"{output} = {value!r} is not its start value {start.name} = {fmu.get([start.name])}")
            # the output is not readable as another type
            for other in (REAL, INTEGER, BOOLEAN):
                if other != kind:
                    status, _, _ = fmu.try_call(_GET[other], [fmu.vr[output]])
                    if status == 0:
                        failures.append(f"{kind} output {output} reads as a {other}")
        assert not failures, f"{name} ({config}):\n" + "\n".join(failures)
    finally:
        fmu.free()


# ------------------------------------------------------------------------------ clause f
#: the elements whose families a count parameter selects, by their declarations
COUNTED = [e for e in fmus.ELEMENTS if count_parameters(e.VARIABLES)]


class _Recording(dict):
    """An instance ``__dict__`` that records the names read through it (``vars(self)[name]``,
    as Table.initial_state hands its parameters to solvers.signal.table_points)."""

    def __getitem__(self, name):
        self.read.add(name)
        return super().__getitem__(name)

    def get(self, name, default=None):
        self.read.add(name)
        return super().get(name, default)


def physics_reads(element, counts: dict) -> set[str]:
    """The parameters and inputs ``element`` reads, with its count parameters at ``counts``
    (the others at their start values), to relate its parameters (``cross_check``), build
    its model (``initial_state``), compute its outputs and take a step: not the range checks,
    which follow the declarations."""
    names = {v.name for v in element.VARIABLES if v.causality != OUTPUT}
    read: set[str] = set()

    class Traced(element):
        tracing = False

        def __getattribute__(self, name):
            if name in names and object.__getattribute__(self, "tracing"):
                read.add(name)
            return super().__getattribute__(name)

    slave = Traced(instance_name="traced", resources=None)
    for name, value in counts.items():
        slave.assign({name: value})
    assert not slave.parameter_problems(), (element.__name__, counts, slave.parameter_problems())
    recording = _Recording(vars(slave))
    recording.read = read
    slave.__dict__ = recording
    slave.tracing = True
    slave.cross_check()
    slave.state = slave.initial_state()
    slave.outputs()
    input_names = [v.name for v in element.VARIABLES if v.causality == "input"]
    inputs = _TracedInputs(input_names, [dict.__getitem__(recording, n) for n in input_names], read)
    prepared = slave.prepare(inputs)
    slave.feedthrough(prepared)
    slave.state = slave.step(0.0, element.DEFAULT_STEP, prepared)
    slave.outputs()
    slave.feedthrough(slave.prepare(inputs))
    slave.tracing = False
    return read & names


class _TracedInputs(tuple):
    """The inputs as the model protocol hands them over (in declaration order), recording
    the name of each one the model takes."""

    def __new__(cls, names, values, read):
        inputs = super().__new__(cls, values)
        inputs.names, inputs.read = names, read
        return inputs

    def __getitem__(self, i):
        self.read.add(self.names[i])
        return super().__getitem__(i)

    def __iter__(self):
        self.read.update(self.names)
        return super().__iter__()


def declared_in_use(element, counts: dict) -> set[str]:
    return {v.name for v in element.VARIABLES if v.causality != OUTPUT and in_use(counts, v)}


def allowed_counts(element):
    """Every combination of allowed values of the element's count parameters."""
    table = {v.name: v for v in element.VARIABLES}
    combos = [{}]
    for name in count_parameters(element.VARIABLES):
        var = table[name]
        combos = [{**c, name: n} for c in combos for n in range(int(var.low), int(var.high) + 1)]
    return combos


def test_the_counted_families_are_declared_where_expected():
    assert [e.__name__ for e in COUNTED] == ["ClutchChain", "NonlinearSpring", "Table", "TorqueTable",
                                             "ForceTable", "SpeedTable"]


@pytest.mark.parametrize("element", COUNTED, ids=lambda e: e.__name__)
def test_f_each_count_parameter_is_declared_with_the_range_its_members_need(element):
    """A count parameter is an Integer parameter whose upper bound is the count that puts
    every member of its families in use; the members of a family are numbered 1, 2, ...
    and share one offset."""
    table = {v.name: v for v in element.VARIABLES}
    full = full_counts(element.VARIABLES)
    for name in count_parameters(element.VARIABLES):
        count = table[name]
        assert (count.causality, count.type, count.family) == (PARAMETER, INTEGER, None), name
        assert count.high == full[name], (name, count.high, full[name])
        members = [v.family for v in element.VARIABLES if v.family and v.family.count == name]
        for stem in {f.stem for f in members}:
            indices = sorted(f.index for f in members if f.stem == stem)
            assert indices == list(range(1, len(indices) + 1)), (name, stem, indices)
            offset = {f.offset for f in members if f.stem == stem}
            assert len(offset) == 1, (name, stem, offset)


@pytest.mark.parametrize("element", COUNTED, ids=lambda e: e.__name__)
def test_f_the_members_in_use_are_those_the_physics_reads(element):
    """For every allowed count, the parameters and inputs in use by the declaration
    (fmus.variables.in_use) are exactly those the element reads to compute."""
    failures = []
    for counts in allowed_counts(element):
        declared, read = declared_in_use(element, counts), physics_reads(element, counts)
        if declared != read:
            failures.append(f"{counts}: declared in use but not read {sorted(declared - read)}, "
                            f"read but not declared in use {sorted(read - declared)}")
    assert not failures, f"{element.__name__}:\n" + "\n".join(failures)


def _clutch(j):
    return {f"{stem}_{j}" for stem in ("mu_s", "mu_k", "r_eff", "n_surfaces", "w_stribeck", "alpha_stribeck",
                                       "d_visc", "f_n", "C_th", "G_th", "T_ref", "c_mu_T")} | {f"locked_{j}_start",
                                                                                              f"T_th_{j}_start"}


#: one count per element, written out by hand
BY_HAND = {
    "ClutchChain": ({"n_bodies": 3}, {"n_bodies", "J_1", "J_2", "J_3", "phi_1_start", "w_1_start", "phi_2_start",
                                      "w_2_start", "phi_3_start", "w_3_start", "tau_1", "tau_2", "tau_3",
                                      "tau_1_2", "tau_2_2", "tau_3_2", "thermal", "T_amb"}
                    | _clutch(1) | _clutch(2)),
    "NonlinearSpring": ({"n_regions": 3, "n_damper_regions": 1},
                        {"n_regions", "phi_s_1", "phi_s_2", "k_1", "k_2", "k_3", "n_damper_regions", "d_1",
                         "T_comm", "ratio", "phi_rel_start", "phi_1", "w_1", "phi_2", "w_2"}),
    "Table": ({"n_points": 2}, {"n_points", "t_1", "t_2", "y_1", "y_2", "hold"}),
    "TorqueTable": ({"n_points": 1}, {"n_points", "t_1", "y_1", "hold"}),
    "ForceTable": ({"n_points": 6}, {"n_points", "hold"} | {f"{s}_{i}" for s in "ty" for i in range(1, 7)}),
    "SpeedTable": ({"n_points": 4}, {"n_points", "hold", "phi_start", "t_1", "t_2", "t_3", "t_4", "y_1", "y_2",
                                     "y_3", "y_4"}),
}


@pytest.mark.parametrize("element", COUNTED, ids=lambda e: e.__name__)
def test_f_one_count_by_hand(element):
    counts, expected = BY_HAND[element.__name__]
    assert declared_in_use(element, counts) == expected
    assert physics_reads(element, counts) == expected


def test_f_a_name_is_the_same_member_wherever_it_is_declared():
    """drivetrain_docs.element_tables.ports groups a name by the family any element declares it in."""
    seen: dict[str, tuple] = {}
    for element in fmus.ELEMENTS:
        for v in element.VARIABLES:
            if v.family is not None:
                member = (v.family.stem, v.family.index)
                assert seen.setdefault(v.name, member) == member, (element.__name__, v.name, seen[v.name], member)


# ---------------------------------------------------------------------------- the model protocol
def test_no_declared_variable_takes_a_name_the_model_protocol_or_the_shell_uses():
    """A declared variable is an attribute of its model (fmus.model, contract item 1), and the
    FMU is the shell around the model in one object: a variable named as one of the protocol's
    or the shell's own attributes would overwrite it when set (SineTorque's parameter
    ``phase`` did, while the shell kept its phase under that name: its initialization failed)."""
    from drivetrain_fmu.fmus.model import Model
    from drivetrain_fmu.fmus.shell import element_fmu

    class Empty(Model):
        VARIABLES = ()

    bare = element_fmu(Empty, fmus.code_fingerprint)(instance_name="bare", resources=None)
    reserved = set(vars(bare)) | set(dir(type(bare)))
    clashes = {element.__name__: sorted({v.name for v in element.VARIABLES} & reserved)
               for element in fmus.ELEMENTS}
    assert not any(clashes.values()), clashes


@pytest.mark.parametrize("model", [m for m in fmus.MODELS if m.stateless], ids=lambda m: m.__name__)
def test_a_stateless_model_has_no_state_and_every_output_follows_its_inputs(model):
    """``stateless`` (contract item 9) lets a system FMU skip its step: it must have no state
    to advance (the state stays ``()``) and no output that a step would change (every output
    declares the inputs it follows without delay)."""
    assert all(v.depends for v in model.VARIABLES if v.causality == OUTPUT), model.__name__
    instance = model()
    instance.initialize()
    assert instance.state == ()
    assert instance.accepts_step(model.DEFAULT_STEP)
    assert instance.step(0.0, model.DEFAULT_STEP, instance.prepared()) == ()
