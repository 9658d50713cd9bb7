"""A fixed-step co-simulation master on fmpy's FMU2Slave API.

At every communication point the master propagates the connections (outputs of body
elements into compliance elements, whose outputs follow their inputs without delay,
then those outputs into the body inputs), then steps every FMU from t to t + h with
its inputs held (zero-order hold).  Time is counted, t = t0 + n h, not accumulated.
Multi-rate (``run``'s ``rates``): an FMU with its own step, m base steps, steps once per m
of them with its inputs at the mean of what the connections gave it, as the system FMU's
runtime steps an element with its own rate (docs/composite-fmu.md).

Every FMI call goes through :class:`Instance`, which turns a failing status into
:class:`CoSimulationError` carrying the FMU's own log messages.
"""
from __future__ import annotations

import ctypes
import math
import numbers
import multiprocessing.util
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from fmpy import extract, read_model_description
from fmpy.fmi2 import (FMU2Slave, fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE,
                       fmi2CallbackFunctions, fmi2CallbackLoggerTYPE)
from fmpy import calloc, free

_STATUS = ["OK", "WARNING", "DISCARD", "ERROR", "FATAL", "PENDING"]


def _status_name(status: int) -> str:
    return _STATUS[status] if 0 <= status < len(_STATUS) else f"unknown status {status}"

_FMI2_WARNING = 1

# The per-step FMI calls, bound directly to the FMU's library (fmpy's wrappers convert
# lists and check status in Python on every call; these move numpy buffers in place).
_VALUE_TYPES = {"Real": (ctypes.c_double, np.float64), "Integer": (ctypes.c_int, np.int32),
                "Boolean": (ctypes.c_int, np.int32)}
_DO_STEP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_double, ctypes.c_double, ctypes.c_int)


class _KeepingTheGil(ctypes._CFuncPtr):
    """A C function returning an int, called with the GIL held (ctypes' PyDLL convention)."""

    _flags_ = ctypes._FUNCFLAG_CDECL | ctypes._FUNCFLAG_PYTHONAPI
    _restype_ = ctypes.c_int


def _unconverted(dll, name: str, keeps_the_gil: bool = False):
    """The C function ``name`` of ``dll`` (returning an int) without argtypes: ctypes then
    passes ctypes objects as they are and a Python int as a C int, with no per-argument
    conversion call (argtypes' from_param).  Its callers pass exactly those: ctypes objects
    of the C types of the parameters, an int for an int (a wrong type would not be caught).
    ``keeps_the_gil``: called without releasing the GIL, for an FMU whose functions run
    Python code of this interpreter (pythonfmu's: each takes the GIL at once, with
    PyGILState_Ensure, which costs nothing when the calling thread holds it)."""
    return (_KeepingTheGil if keeps_the_gil else dll._FuncPtr)((name, dll))


#: FMI 2.0's fmi2Integer is a C int: 32 bits on every platform FMUs are built for
INTEGER_RANGE = (-2 ** 31, 2 ** 31 - 1)


def integer_problem(value) -> str | None:
    """Why ``value`` cannot be an FMI 2.0 Integer (a Python int outside INTEGER_RANGE: a
    C int would wrap it, 2**32 + 2 to 2), or None.  Not Integer values: None."""
    if isinstance(value, int) and not isinstance(value, bool) and not INTEGER_RANGE[0] <= value <= INTEGER_RANGE[1]:
        return (f"{value} is outside the range of an FMI 2.0 Integer (a 32-bit int: {INTEGER_RANGE[0]} to "
                f"{INTEGER_RANGE[1]})")
    return None


def value_problem(kind: str, value) -> str | None:
    """Why ``value`` cannot be set into an FMI 2.0 variable of type ``kind`` ("Real",
    "Integer", "Boolean"), or None: a Real takes a number (an int is exact), an Integer an
    int in the 32-bit range (not 2.0: a Real written for an Integer is a mistake to name,
    not to round), a Boolean true or false."""
    if kind == "Boolean":
        ok = isinstance(value, bool)
    elif kind == "Integer":
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return integer_problem(int(value))
        ok = False
    else:
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if ok:
        return None
    written = ("a Boolean" if isinstance(value, bool) else "an Integer" if isinstance(value, numbers.Integral)
               else "a Real" if isinstance(value, numbers.Real) else f"a {type(value).__name__}")
    whole = isinstance(value, float) and value.is_integer()
    example = {"Integer": f'<ssv:Integer value="{int(value) if whole else "N"}"/>',
               "Boolean": '<ssv:Boolean value="true"/> or "false"', "Real": '<ssv:Real value="X"/>'}[kind]
    article = "an" if kind == "Integer" else "a"
    return f"{value!r} is {written} value; the variable is {article} {kind}: write {example}"


class SetValueError(ValueError):
    """A value that cannot be set into an FMU variable (:func:`value_problem`): the
    message names the variable and the value."""


class CoSimulationError(RuntimeError):
    """An FMI call failed; ``messages`` holds what the FMU logged."""

    def __init__(self, text, messages):
        super().__init__(text + ("\n  " + "\n  ".join(messages) if messages else ""))
        self.messages = list(messages)


@dataclass
class LogRecord:
    status: str
    message: str


class Instance:
    """One FMU instance with name-based access and collected log messages."""

    _unpacked: dict[str, tuple] = {}

    def __init__(self, fmu_path, instance_name: str, parameters: dict | None = None, start_time: float = 0.0):
        fmu_path = str(Path(fmu_path).resolve())
        if fmu_path not in Instance._unpacked:
            unzip_dir = extract(fmu_path)
            # the extracted copy serves every instance of this process (a loaded FMU's binary
            # and resources must stay until exit); removed at exit, it no longer piles up in
            # the temporary folder (12 MB per FMU and process: 79 GB after some test runs).
            # A multiprocessing finalizer, not atexit: a forked worker process (a study's
            # LocalPool) ends without running atexit handlers, but runs the finalizers it
            # registered itself (not those of the process it was forked from)
            multiprocessing.util.Finalize(None, shutil.rmtree, args=(unzip_dir,), kwargs={"ignore_errors": True},
                                          exitpriority=0)
            Instance._unpacked[fmu_path] = (read_model_description(fmu_path), unzip_dir)
        self.model, unzip_dir = Instance._unpacked[fmu_path]
        self.name = instance_name
        self.variables = {v.name: v for v in self.model.modelVariables}
        self.log: list[LogRecord] = []
        self._callbacks = fmi2CallbackFunctions()
        self._callbacks.logger = fmi2CallbackLoggerTYPE(self._on_log)
        self._callbacks.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
        self._callbacks.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
        self.slave = FMU2Slave(guid=self.model.guid, unzipDirectory=unzip_dir,
                               modelIdentifier=self.model.coSimulation.modelIdentifier,
                               instanceName=instance_name)
        self._do_step = _DO_STEP(("fmi2DoStep", self.slave.dll))
        # pythonfmu's FMUs run their Python code in this interpreter (its name: the model
        # description's generationTool, "PythonFMU <version>")
        self.keeps_the_gil = (self.model.generationTool or "").startswith("PythonFMU")
        self.call("instantiate", callbacks=self._callbacks, loggingOn=True)
        self.call("setupExperiment", startTime=start_time)
        try:
            self.call("enterInitializationMode")
            for name, value in (parameters or {}).items():
                self.set(name, value)
            self.call("exitInitializationMode")
        except BaseException:            # nobody else holds this instance to free it (not initialized:
            self.slave.freeInstance()    # no fmi2Terminate)
            raise

    def _on_log(self, _env, _instance, status, _category, message):
        self.log.append(LogRecord(_status_name(status), message.decode("utf-8", "replace")))

    def call(self, function: str, *args, **kwargs):
        """Call an FMI function; a failing status raises CoSimulationError with the log."""
        start = len(self.log)
        try:
            return getattr(self.slave, function)(*args, **kwargs)
        except Exception as exc:  # fmpy raises FMICallException (and Exception on load)
            raise CoSimulationError(f"{self.name}: {function} failed ({exc})",
                                    [r.message for r in self.log[start:]]) from exc

    def _checked(self, function: str, status: int, log_start: int):
        if status > _FMI2_WARNING:
            raise CoSimulationError(f"{self.name}: {function} failed with status {status} ({_status_name(status).lower()})",
                                    [r.message for r in self.log[log_start:]])

    def transfer(self, kind: str, vrs: list[int], write: bool, buffer=None) -> "Transfer":
        """A prepared get (write=False) or set of fixed value references of one type
        (through ``buffer``, if given: see :class:`Transfer`)."""
        return Transfer(self, kind, vrs, write, buffer)

    def vr(self, name: str):
        try:
            return self.variables[name].valueReference
        except KeyError:
            raise KeyError(f"{self.name} has no variable {name!r}") from None

    def set(self, name: str, value):
        var = self.variables.get(name)
        if var is None:
            raise KeyError(f"{self.name} has no variable {name!r}")
        problem = value_problem(var.type, value)
        if problem:          # fmpy would wrap an int to 32 bits, or fail naming neither variable nor value
            raise SetValueError(f"{self.name}.{name} = {problem}")
        setter = {"Real": "setReal", "Integer": "setInteger", "Boolean": "setBoolean"}[var.type]
        self.call(setter, [var.valueReference], [value])

    def get(self, name: str):
        var = self.variables.get(name)
        if var is None:
            raise KeyError(f"{self.name} has no variable {name!r}")
        getter = {"Real": "getReal", "Integer": "getInteger", "Boolean": "getBoolean"}[var.type]
        return self.call(getter, [var.valueReference])[0]

    def do_step(self, t: float, h: float, no_rollback: bool = True):
        log_start = len(self.log)
        self._checked("fmi2DoStep", self._do_step(self.slave.component, t, h, int(no_rollback)), log_start)

    def stepper(self, no_rollback: bool = True):
        """``step(t, h)``: :meth:`do_step` with its arguments bound once (the run loop's call)."""
        return _Steps([self], no_rollback)

    def free(self):
        self.slave.terminate()
        self.slave.freeInstance()


class _Steps:
    """``steps(t, h)``: fmi2DoStep of each of ``instances`` in turn from ``t`` over ``h``,
    its arguments bound once: one pair of C doubles serves every instance (set once per
    call, ``h`` only when it changes)."""

    def __init__(self, instances: list[Instance], no_rollback: bool = True):
        self._t, self._h, self._last_h = ctypes.c_double(), ctypes.c_double(), None
        self._calls = [(inst, _unconverted(inst.slave.dll, "fmi2DoStep", inst.keeps_the_gil), inst.log,
                        (ctypes.c_void_p(inst.slave.component), self._t, self._h, int(no_rollback)))
                       for inst in instances]

    def __call__(self, t: float, h: float):
        self._t.value = t
        if h != self._last_h:
            self._h.value = self._last_h = h
        for inst, call, log, arguments in self._calls:
            log_start = len(log)
            status = call(*arguments)
            if status > _FMI2_WARNING:
                inst._checked("fmi2DoStep", status, log_start)


class Transfer:
    """fmi2Get/Set<kind> of fixed value references through one numpy buffer, ``values``
    (its own, or ``buffer``: a contiguous 1-d array of the kind's dtype and of the length
    of ``vrs``, e.g. a slice of a larger buffer, which the call then reads or fills)."""

    def __init__(self, instance: Instance, kind: str, vrs: list[int], write: bool, buffer=None):
        if kind not in _VALUE_TYPES:
            raise ValueError(f"kind = {kind!r} must be one of {', '.join(_VALUE_TYPES)}")
        c_type, dtype = _VALUE_TYPES[kind]
        self.instance = instance
        self.function = f"fmi2{'Set' if write else 'Get'}{kind}"
        self._call = _unconverted(instance.slave.dll, self.function, instance.keeps_the_gil)
        self._vrs = (ctypes.c_uint * len(vrs))(*vrs)
        if buffer is None:
            buffer = np.zeros(len(vrs), dtype=dtype)
        elif buffer.dtype != dtype or buffer.shape != (len(vrs),) or not buffer.flags.c_contiguous:
            raise ValueError(f"buffer must be a contiguous {dtype.__name__} array of {len(vrs)} values")
        self._values = buffer
        self._pointer = self._values.ctypes.data_as(ctypes.POINTER(c_type))
        # the call's arguments as the C types of fmi2Get/Set<kind> (fmi2Component, const
        # fmi2ValueReference[], size_t, values[]), bound once (the component is fixed once instantiated)
        self._arguments = (ctypes.c_void_p(instance.slave.component), self._vrs, ctypes.c_size_t(len(vrs)),
                           self._pointer)
        self._log = instance.log

    @property
    def values(self) -> np.ndarray:
        """The buffer the FMI call reads (set) or fills (get): assign into it
        (``values[:] = ...``), the call keeps a pointer to this array."""
        return self._values

    def __call__(self) -> np.ndarray:
        """Move the values (a set sends ``values``, a get fills it) and return ``values``."""
        log_start = len(self._log)
        status = self._call(*self._arguments)
        if status > _FMI2_WARNING:
            self.instance._checked(self.function, status, log_start)
        return self._values


@dataclass(frozen=True)
class Connection:
    """Output ``source.output`` drives input ``target.input``."""

    source: str
    output: str
    target: str
    input: str


@dataclass(frozen=True)
class Port:
    """What a connection needs to know of a variable: its causality, type and unit."""

    causality: str
    type: str
    unit: str | None


def _unit(port: Port) -> str:
    return "1" if port.unit in (None, "") else port.unit


def connection_problems(connections: list[Connection], port: Callable[[str, str], Port | None]) -> list[str]:
    """Why ``connections`` cannot be run, one message each (empty: they can): each joins an
    output to an input of the same type and unit (no unit and "1" are both dimensionless),
    and no input is driven twice.  ``port(instance, variable)`` describes a variable
    (None: there is no such variable)."""
    def article(word: str) -> str:
        return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"

    problems, drivers = [], {}
    for c in connections:
        ends = (f"{c.source}.{c.output}", f"{c.target}.{c.input}")
        source, target = port(c.source, c.output), port(c.target, c.input)
        found = []
        for name, end, causality in ((ends[0], source, "output"), (ends[1], target, "input")):
            if end is None:
                found.append(f"{name} does not exist")
            elif end.causality != causality:
                found.append(f"{name} is {article(end.causality)}, not {article(causality)}")
        if not found and source.type != target.type:
            found.append(f"{article(source.type)} output cannot drive {article(target.type)} input")
        elif not found and _unit(source) != _unit(target):
            found.append(f"the units differ ({_unit(source)} and {_unit(target)})")
        problems += [f"connection {ends[0]} -> {ends[1]}: {why}" for why in found]
        if ends[1] in drivers:
            problems.append(f"{ends[1]} is driven twice: by {drivers[ends[1]]} and by {ends[0]}")
        drivers.setdefault(ends[1], ends[0])
    return problems


@dataclass
class Result:
    """Recorded signals: ``time`` and one array per 'instance.variable'."""

    time: np.ndarray
    signals: dict[str, np.ndarray] = field(default_factory=dict)

    def __getitem__(self, key):
        return self.time if key == "time" else self.signals[key]


def _groups(instances, names, types=("Real",)):
    """{(instance, type): [(position in ``names``, value reference)...]} of the variables
    'inst.var' of ``names``, in order of first appearance; a variable of a type not in
    ``types`` (or one that does not exist) is refused, naming it."""
    groups = {}
    for pos, key in enumerate(names):
        inst_name, var = key.split(".", 1)
        inst = instances[inst_name]
        kind = inst.variables[var].type if var in inst.variables else inst.vr(var)
        if kind not in types:
            raise ValueError(f"{key} is a {kind} variable; allowed here: {', '.join(types)}")
        groups.setdefault((inst_name, kind), []).append((pos, inst.vr(var)))
    return groups


class _Exchange:
    """The connections' transfers, laid out once so that a communication point moves every
    value with one get and one set per instance and type, and no Python per value.

    Every Real value read (connection sources, each once, and the Real recorded variables
    that are not taken from the exchange) has a slot in one buffer, ``read``: each get
    fills its instance's contiguous slice.  Every input set has a slot in ``written``:
    each set sends its instance's contiguous slice.  A stage copies its values from
    ``read`` to ``written`` with one numpy take; when every input's slot is the slot of the
    value it gets in the same order (each source read once, in the order of its targets)
    and ``may_share`` (nothing is written into ``written`` but the stages' copies and the
    iterations' means, both from values read at the same point), ``written`` is the start
    of ``read`` itself and no copy is made.  An instance that no stage-2 get reads
    has its stage-1 inputs set together with its stage-2 inputs (one set instead of two):
    no value read in stage 2 depends on them.

    Recording: ``rows`` rows (filled by :meth:`_Phase.record`) of the recorded Real values
    in ``real_rows`` and of the others (Boolean, Integer) in ``int_rows``; ``signals``
    turns them into the result's arrays."""

    def __init__(self, instances, stages, record, moved_at, may_share=False, rows=1):
        sources, targets = [], []          # checked in the order of the stages: sources, then targets
        for stage in stages:
            sources.append(_groups(instances, [f"{c.source}.{c.output}" for c in stage]))
            targets.append(_groups(instances, [f"{c.target}.{c.input}" for c in stage]))
        fetched = [pos for pos, key in enumerate(record) if key not in moved_at]
        recorded = _groups(instances, [record[pos] for pos in fetched], ("Real", "Boolean", "Integer"))
        slot, read_layout = {}, []          # (instance, vr) -> slot in read; [(instance, [vr...], offset)]

        def place(inst_name, vrs, table):
            fresh = [vr for vr in dict.fromkeys(vrs) if (inst_name, vr) not in table]
            offset = sum(len(v) for _, v, _ in read_layout)
            for i, vr in enumerate(fresh):
                table[inst_name, vr] = offset + i
            read_layout.append((inst_name, fresh, offset))
            return fresh

        stage_reads = []
        for groups in sources:
            stage_reads.append([len(read_layout)])
            for (inst_name, _), members in groups.items():
                place(inst_name, [vr for _, vr in members], slot)
            stage_reads[-1].append(len(read_layout))
        record_slot = {}
        real_recorded = [(key, members) for key, members in recorded.items() if key[1] == "Real"]
        first_recorder = len(read_layout)
        for (inst_name, _), members in real_recorded:
            place(inst_name, [vr for _, vr in members], record_slot)
        self.read = np.zeros(sum(len(v) for _, v, _ in read_layout))
        gets = [instances[inst_name].transfer("Real", vrs, False, self.read[offset:offset + len(vrs)])
                for inst_name, vrs, offset in read_layout]
        self.stage_gets = [[g for g in gets[a:b] if len(g._vrs)] for a, b in stage_reads]
        self.record_gets = [g for g in gets[first_recorder:] if len(g._vrs)]

        # the sets: per stage, per instance; stage-1 sets of an instance no stage-2 get reads
        # join its stage-2 set
        stage2_read = {inst_name for inst_name, _ in sources[1]} if len(sources) > 1 else set()
        writes = [{}, {}]
        for stage, groups in enumerate(targets):
            for (inst_name, _), members in groups.items():
                link_sources = [f"{c.source}.{c.output}" for c in stages[stage]]
                entries = [(vr, slot[self._source_key(instances, link_sources[pos])]) for pos, vr in members]
                writes[stage].setdefault(inst_name, []).extend(entries)
        for inst_name in list(writes[0]):
            if (inst_name, "Real") in targets[1] and inst_name not in stage2_read:
                writes[1][inst_name] = writes[0].pop(inst_name) + writes[1][inst_name]
        order = [list(w.items()) for w in writes]
        sources_of_inputs = [i for w in order for _, entries in w for _, i in entries]
        self.shared = may_share and sources_of_inputs == list(range(len(sources_of_inputs)))
        self.written = self.read[:len(sources_of_inputs)] if self.shared else np.zeros(len(sources_of_inputs))
        self.stage_sets, self.takes, offset = [], [], 0
        # where each input's value is: written index by (instance, vr), stage by written index
        self.read_slot, self.written_slot, self.written_stage = slot, {}, []
        for stage, w in enumerate(order):
            sets, first = [], offset
            for inst_name, entries in w:
                size = len(entries)
                sets.append(instances[inst_name].transfer("Real", [vr for vr, _ in entries], True,
                                                          self.written[offset:offset + size]))
                for i, (vr, _) in enumerate(entries):
                    self.written_slot[inst_name, vr] = offset + i
                self.written_stage += [stage] * size
                offset += size
            self.stage_sets.append(sets)
            # mode 'clip' (the indices are valid): numpy's 'raise' takes through a temporary copy
            self.takes.append([] if self.shared else
                              [(np.array(sources_of_inputs[first:offset], dtype=np.intp), self.written[first:offset])])

        # the recorded values: the Real ones from read (its slice spanning them, or, when that
        # would hold more than twice as many values, a buffer one take fills), the others from
        # gets into one int32 buffer; ``columns``: a record position's (Real?, column)
        real_slots, real_positions = [], []
        for pos, key in enumerate(record):
            if key in moved_at:
                inst_name, var = key.split(".", 1)
                real_slots.append(slot[inst_name, instances[inst_name].vr(var)])
                real_positions.append(pos)
        for (inst_name, _), members in real_recorded:
            for pos, vr in members:
                real_slots.append(record_slot[inst_name, vr])
                real_positions.append(fetched[pos])
        self.record, self.columns = list(record), [None] * len(record)
        first, last = min(real_slots, default=0), max(real_slots, default=-1) + 1
        if last - first <= 2 * len(real_slots):
            self.record_take, self.record_reals = None, self.read[first:last]
            for pos, read_at in zip(real_positions, real_slots):
                self.columns[pos] = (True, read_at - first)
        else:
            self.record_take = np.array(real_slots, dtype=np.intp)
            self.record_reals = np.zeros(len(real_slots))
            for column, pos in enumerate(real_positions):
                self.columns[pos] = (True, column)
        others = [(key, members) for key, members in recorded.items() if key[1] != "Real"]
        self.record_ints = np.zeros(sum(len(members) for _, members in others), dtype=np.int32)
        self.record_others, column = [], 0
        for (inst_name, kind), members in others:
            self.record_others.append(instances[inst_name].transfer(kind, [vr for _, vr in members], False,
                                                                    self.record_ints[column:column + len(members)]))
            for i, (pos, _) in enumerate(members):
                self.columns[fetched[pos]] = (False, column + i)
            column += len(members)
        self.real_rows = np.empty((rows, len(self.record_reals)))
        self.int_rows = np.empty((rows, len(self.record_ints)), dtype=np.int32)

    def signals(self, rows: int) -> dict[str, np.ndarray]:
        """{recorded variable: its values in the first ``rows`` rows} (float64, as every
        value recorded: a Boolean as 0.0 or 1.0)."""
        return {key: self.real_rows[:rows, column] if real else self.int_rows[:rows, column].astype(np.float64)
                for key, (real, column) in zip(self.record, self.columns)}

    @staticmethod
    def _source_key(instances, key):
        inst_name, var = key.split(".", 1)
        return inst_name, instances[inst_name].vr(var)

    def set_all(self):
        """Send ``written`` to every input (both stages)."""
        for sets in self.stage_sets:
            for put in sets:
                put()


class _Phase:
    """The transfers of one communication point (``exchange``, then ``record``), laid out
    once from an exchange plan.  The instances of ``held`` are within a step of their own
    rate (multi-rate, :func:`run`): they are neither read (they have not stepped and no
    input of theirs has been set since their step began, so their outputs are what was read
    then) nor set (their inputs stay those of their step's start); what the connections
    give them still lands in ``written``.  ``advances`` [(written index, read slot, lag)]:
    after its stage's take, the value at the written index (an angle phi_X of an instance
    in its own step, for a compliance that reads w_X from the same instance) is advanced by
    the speed at the read slot times the lag, the time since that instance's step began:
    phi + w (t - t_s), as the system FMU's runtime reads it (docs/composite-fmu.md)."""

    def __init__(self, plan: _Exchange, held=frozenset(), advances=()):
        self.read, self.written = plan.read, plan.written
        self.stages = []
        for stage, (gets, sets, copies) in enumerate(zip(plan.stage_gets, plan.stage_sets, plan.takes)):
            # a few values: scalar arithmetic (a numpy expression on index arrays costs 7 times more)
            moved = [(index, speed, lag) for index, speed, lag in advances if plan.written_stage[index] == stage]
            self.stages.append(([g for g in gets if g.instance not in held], copies, moved,
                                [s for s in sets if s.instance not in held]))
        self.record_gets = [g for g in plan.record_gets if g.instance not in held]
        self.record_take, self.record_reals, self.real_rows = plan.record_take, plan.record_reals, plan.real_rows
        # a held instance's Boolean and Integer values: those its last get left in the buffer
        self.record_others = [g for g in plan.record_others if g.instance not in held]
        self.record_ints, self.int_rows = plan.record_ints, plan.int_rows

    def exchange(self):
        """Propagate the connections (both stages)."""
        read, written = self.read, self.written
        take = read.take
        for gets, copies, advances, sets in self.stages:
            for get in gets:
                get()
            for indices, out in copies:
                take(indices, None, out, "clip")
            for index, speed, lag in advances:
                written[index] += read[speed] * lag
            for put in sets:
                put()

    def record(self, row: int):
        """Fill row ``row`` of the plan's ``real_rows`` and ``int_rows`` with the recorded
        values of now (a held instance's: those of its last get)."""
        for get in self.record_gets:
            get()
        if self.record_take is not None:
            self.read.take(self.record_take, None, self.record_reals, "clip")
        self.real_rows[row] = self.record_reals
        for get in self.record_others:
            get()
        if len(self.record_ints):
            self.int_rows[row] = self.record_ints


class _OwnRate:
    """An instance with its own step, ``multiple`` base steps (:func:`run`'s ``rates``): it
    steps once per ``multiple`` base steps, at the end of the last of them, from the start
    of its step, with each connection-driven input at the mean of the values the
    connections gave it at those base steps (summed in order, divided by ``multiple``)."""

    def __init__(self, instance: Instance, multiple: int, written: np.ndarray, inputs: dict, stepper):
        self.multiple = multiple
        # its inputs' slots in ``written``; their sums: scalars (a few values: cheaper than numpy)
        self._written, self._slots, self._sum = written, list(inputs.values()), []
        self._mean = instance.transfer("Real", list(inputs), True) if inputs else None
        self._step = stepper

    def collect(self, first: bool):
        """Add the values the connections give it now (``first``: its step begins)."""
        written = self._written
        if first:
            self._sum = [written[i] for i in self._slots]
        else:
            self._sum = [a + written[i] for a, i in zip(self._sum, self._slots)]

    def step(self, n: int, h: float):
        """Its step ending with base step ``n`` (of size ``h``), its inputs the means."""
        m = self.multiple
        if self._mean is not None:
            self._mean.values[:] = [a / m for a in self._sum]
            self._mean()
        self._step((n + 1 - m) * h, m * h)


def _rate_multiples(rates, instances, step: float) -> dict[str, int]:
    """{instance: m} of ``rates`` ({instance: H in s}), checked: each names an instance, with
    a finite H that is a whole multiple m >= 1 of ``step`` (to 1e-9 of H)."""
    multiples = {}
    for inst, rate in rates.items():
        if inst not in instances:
            raise ValueError(f"rates: no instance {inst!r}; instances: {', '.join(instances)}")
        if not (isinstance(rate, (int, float)) and not isinstance(rate, bool) and math.isfinite(rate) and rate > 0):
            raise ValueError(f"rates[{inst!r}] = {rate!r} must be a finite number > 0 (seconds)")
        multiple = round(rate / step)
        if multiple < 1 or abs(rate - multiple * step) > 1e-9 * rate:
            raise ValueError(f"rates[{inst!r}] = {rate!r} s is not a whole multiple of the step {step!r} s "
                             f"(nearest: {max(multiple, 1)} x {step!r} = {max(multiple, 1) * step!r} s)")
        multiples[inst] = multiple
    return multiples


def _angle_advances(instances, connections, multiples):
    """[(angle connection, speed connection)]: an instance with its own rate drives a
    target's phi_X (rad) and the same target's w_X (rad/s): the compliance reads the angle
    advanced with the speed (the rule of systems/composite_slave.py ``_plan``)."""
    drivers = {(c.target, c.input): c for c in connections}
    found = []
    for c in connections:
        if c.source not in multiples or not c.input.startswith("phi_"):
            continue
        inputs = {name: v for name, v in instances[c.target].variables.items() if v.causality == "input"}
        speed = "w_" + c.input[len("phi_"):]
        driver = drivers.get((c.target, speed))
        if (inputs[c.input].unit == "rad" and speed in inputs and inputs[speed].unit == "rad/s"
                and driver is not None and driver.source == c.source):
            found.append((c, driver))
    return found


def _phases(plan: _Exchange, instances, connections, multiples: dict[str, int], step: float, no_rollback: bool,
            angle_links):
    """[(phase, [(own-rate instance, its step begins)...], [own-rate instances whose step
    ends)...]] for the base steps n = 0 .. frame - 1 (repeating with period frame, the least
    common multiple of the multiples), and ``steps(t, h)`` of the other instances
    (``angle_links``: :func:`_angle_advances`)."""
    own = {}
    for inst, multiple in multiples.items():
        vr = instances[inst].vr
        inputs = {vr(c.input): plan.written_slot[inst, vr(c.input)] for c in connections if c.target == inst}
        own[inst] = _OwnRate(instances[inst], multiple, plan.written, inputs, instances[inst].stepper(no_rollback))
    advances = [(plan.written_slot[c.target, instances[c.target].vr(c.input)],
                 plan.read_slot[speed.source, instances[speed.source].vr(speed.output)], c.source)
                for c, speed in angle_links]
    frame = math.lcm(1, *multiples.values())
    phases = []
    for n in range(frame):
        lags = {inst: (n % m) * step for inst, m in multiples.items()}
        phase = _Phase(plan, {instances[inst] for inst, lag in lags.items() if lag},
                       [(index, speed, lags[source]) for index, speed, source in advances if lags[source]])
        phases.append((phase, [(own[inst], n % m == 0) for inst, m in multiples.items()],
                       [own[inst] for inst, m in multiples.items() if (n + 1) % m == 0]))
    return phases, _Steps([inst for name, inst in instances.items() if name not in multiples], no_rollback)


#: the most steps of one run: its times t = n h stay distinct doubles (t + h > t needs
#: h >= t 2**-52) only while n <= 2**52
MAX_STEPS = 2 ** 52


def run(instances: dict[str, Instance], connections: list[Connection], stop: float, step: float,
        record: list[str], inputs: Callable[[float], dict[str, float]] | None = None,
        progress: bool = False, iterations: int = 0, rates: dict[str, float] | None = None,
        output_interval: float | None = None) -> Result:
    """Co-simulate from t = 0 to ``stop``; ``inputs(t)`` gives {'inst.var': value} set each step.
    ``output_interval`` (a whole multiple of ``step`` dividing ``stop``; default ``step``):
    the rows recorded, t = 0, output_interval, ..., stop (what is not recorded is not read:
    the run itself is the same).

    Connections are exchanged in two stages: first those whose source has no direct
    feedthrough (body outputs), then the others (compliance outputs), so a compliance
    element sees the body states of the same communication point.  Values are moved
    with one getReal/setReal call per instance and stage.

    ``iterations`` > 0 makes each step iterative with rollback: after a step the
    connections are evaluated at t + h, every instance is set back to its saved FMU state
    (fmi2SetFMUstate) and the step is repeated with each connected input held at the
    mean of its values at t and at t + h (trapezoidal coupling), ``iterations`` times.

    ``rates`` {instance: H} (multi-rate; H a whole multiple m of ``step``, the base step):
    that instance steps once per m base steps, from the start of its step with H, after the
    others have taken the last of them, each connected input at the mean of the m values
    the connections gave it at those base steps; within its step it is neither read nor
    set (its outputs held for the others, except an angle phi_X a compliance reads with its
    w_X from it: advanced with that speed over the time since its step began).  ``stop``
    must be a whole number of every such step.  The scheme of the system FMU's ``--rate``
    (systems/composite_slave.py; docs/composite-fmu.md): the same rates give the same
    results.  Every row of the result is a base step; a held instance's recorded values
    are those of its step's start.  ``inputs(t)`` are set at every base step, into an
    instance with its own rate too (it steps with the last value set).  Not with
    ``iterations``.
    """
    if not (math.isfinite(step) and step > 0):
        raise ValueError(f"step = {step!r} must be a finite number > 0")
    if not (math.isfinite(stop) and stop >= 0):
        raise ValueError(f"stop = {stop!r} must be a finite number >= 0")
    if stop / step > MAX_STEPS:
        raise ValueError(f"stop / step = {stop!r} / {step!r} = {stop / step:.3g} steps: at most {MAX_STEPS:.3g} "
                         f"(2**52: beyond it t + step rounds to t in double precision)")

    def port(instance: str, name: str) -> Port | None:
        variable = instances[instance].variables.get(name) if instance in instances else None
        return None if variable is None else Port(variable.causality, variable.type, variable.unit)

    problems = connection_problems(connections, port)
    if problems:
        raise ValueError("the connections cannot be run:\n  " + "\n  ".join(problems))
    n_steps = int(round(stop / step))
    if abs(n_steps * step - stop) > 1e-9 * max(1.0, stop):
        raise ValueError(f"stop = {stop!r} is not a whole number of steps of {step!r}")
    if not (isinstance(iterations, int) and iterations >= 0):
        raise ValueError(f"iterations = {iterations!r} must be an integer >= 0")
    every = 1 if output_interval is None else round(output_interval / step)
    if output_interval is not None and not (every >= 1 and abs(every * step - output_interval) <= 1e-9 * max(1.0, output_interval)
                                            and n_steps % every == 0):
        raise ValueError(f"output_interval = {output_interval!r} must be a whole multiple of the step {step!r} "
                         f"that divides stop = {stop!r}")
    multiples = _rate_multiples(rates or {}, instances, step)
    if multiples and iterations:
        raise ValueError("iterations with rates is not supported: iterations repeat every instance's step, "
                         "a multi-rate step has none in common")
    frame = math.lcm(1, *multiples.values())
    if n_steps % frame:
        longest = ", ".join(f"{inst} {m * step!r} s" for inst, m in multiples.items())
        raise ValueError(f"stop = {stop!r} is not a whole number of the steps of the instances with their own "
                         f"rate ({longest}): give a stop of n x {frame * step:g} s")

    def feedthrough(c: Connection):
        return any(u.variable.name == c.output and u.dependencies for u in instances[c.source].model.outputs)

    stages = [[c for c in connections if not feedthrough(c)], [c for c in connections if feedthrough(c)]]
    # a recorded output that a connection moves is taken from the exchange's buffer, unless
    # it was read before one of its own inputs was set (a stage-2 output depending on a
    # stage-2 target): then a fresh get after the exchange is what a record means
    late_inputs = {(c.target, c.input) for c in stages[1]}

    def settled(c: Connection) -> bool:
        return not any((c.source, dep.name) in late_inputs for u in instances[c.source].model.outputs
                       if u.variable.name == c.output for dep in (u.dependencies or ()))

    moved_at = {f"{c.source}.{c.output}": (stage, i) for stage, links in enumerate(stages)
                for i, c in enumerate(links) if stage == 0 or settled(c)}
    angle_links = _angle_advances(instances, connections, multiples)
    # the rows recorded: plan.real_rows and plan.int_rows
    plan = _Exchange(instances, stages, record, moved_at, not angle_links, n_steps // every + 1)
    slaves = list(instances.values())
    phases, step_fast = _phases(plan, instances, connections, multiples, step, not iterations, angle_links)

    def exchange(t, phase, external=True):
        """Propagate the connections; returns (a copy of) the values set."""
        if inputs is not None and external:
            for key, value in inputs(t).items():
                name, var = key.split(".", 1)
                instances[name].set(var, value)
        phase.exchange()
        return plan.written.copy() if iterations else None

    def iterate(t, start_values, saved):
        for _ in range(iterations):
            end_values = exchange(t + step, phases[0][0], external=False)
            for inst, state in zip(slaves, saved):
                inst.call("setFMUstate", state)
            plan.written[:] = 0.5 * (start_values + end_values)
            plan.set_all()
            for inst in slaves:
                inst.do_step(t, step, no_rollback=False)
        for inst, state in zip(slaves, saved):
            inst.call("freeFMUstate", state)

    iterator = range(n_steps + 1)
    if progress:
        from .optional import optional

        tqdm = optional("tqdm")          # the [cli] extra's; without it (a plain install) no bar
        if tqdm is not None:
            iterator = tqdm.tqdm(iterator, desc="co-simulation", unit="step")
    recorded = 0

    def result(rows: int) -> Result:
        return Result(np.arange(0, rows * every, every) * step, plan.signals(rows))

    try:
        for n in iterator:
            t = n * step
            phase, collecting, ending = phases[n % frame]
            start_values = exchange(t, phase)
            if n % every == 0:
                phase.record(n // every)
                recorded = n // every + 1
            if n == n_steps:
                break
            if iterations:
                saved = [inst.call("getFMUstate") for inst in slaves]
                step_fast(t, step)
                iterate(t, start_values, saved)
            else:
                for own, first in collecting:
                    own.collect(first)
                step_fast(t, step)
                for own in ending:
                    own.step(n, step)
    except KeyboardInterrupt as exc:     # Ctrl-C: the rows recorded so far go with it
        exc.partial = result(recorded)
        raise
    return result(n_steps // every + 1)
