"""A fixed-step co-simulation master on fmpy's FMU2Slave API.

:func:`run` drives separate FMUs with the one co-simulation algorithm
(:mod:`systems.algorithm`: the stages, iterations, multi-rate means and angle lead), each
FMU instance a port of it (:class:`FmuPort`); the system FMU runs the same algorithm over
its element models in-process.  Time is counted, t = t0 + n h, not accumulated.

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

from .algorithm import Algorithm, Variable
from .optional import optional

_STATUS = ["OK", "WARNING", "DISCARD", "ERROR", "FATAL", "PENDING"]


def _status_name(status: int) -> str:
    return _STATUS[status] if 0 <= status < len(_STATUS) else f"unknown status {status}"

_FMI2_WARNING = 1

# The per-step FMI calls, bound directly to the FMU's library (fmpy's wrappers convert
# lists and check status in Python on every call; these move numpy buffers in place).
_VALUE_TYPES = {"Real": ctypes.c_double, "Integer": ctypes.c_int, "Boolean": ctypes.c_int}
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
        # pythonfmu's FMUs, ours among them, run their Python code in this interpreter (the
        # model description's generationTool: "PythonFMU <version>", ours "drivetrain-fmu
        # <version> (pythonfmu <version>'s binary)")
        self.keeps_the_gil = "pythonfmu" in (self.model.generationTool or "").lower()
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

    def transfer(self, kind: str, vrs: list[int], write: bool) -> "Transfer":
        """A prepared get (write=False) or set of fixed value references of one type."""
        return Transfer(self, kind, vrs, write)

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

    def free(self):
        self.slave.terminate()
        self.slave.freeInstance()


class Transfer:
    """fmi2Get/Set<kind> of fixed value references through one C array, ``values``: a call
    fills it (get) or sends it (set)."""

    def __init__(self, instance: Instance, kind: str, vrs: list[int], write: bool):
        if kind not in _VALUE_TYPES:
            raise ValueError(f"kind = {kind!r} must be one of {', '.join(_VALUE_TYPES)}")
        self.instance = instance
        self.function = f"fmi2{'Set' if write else 'Get'}{kind}"
        self._call = _unconverted(instance.slave.dll, self.function, instance.keeps_the_gil)
        self._vrs = (ctypes.c_uint * len(vrs))(*vrs)
        #: the values the call reads (set) or fills (get); its items are Python numbers
        self.values = (_VALUE_TYPES[kind] * len(vrs))()
        # the call's arguments as the C types of fmi2Get/Set<kind> (fmi2Component, const
        # fmi2ValueReference[], size_t, values[]), bound once (the component is fixed once instantiated)
        self._arguments = (ctypes.c_void_p(instance.slave.component), self._vrs, ctypes.c_size_t(len(vrs)),
                           self.values)
        self._log = instance.log

    def __call__(self):
        """Move the values (a set sends ``values``, a get fills it) and return ``values``."""
        log_start = len(self._log)
        status = self._call(*self._arguments)
        if status > _FMI2_WARNING:
            self.instance._checked(self.function, status, log_start)
        return self.values


class FmuPort:
    """An FMU instance as a port of the co-simulation algorithm (systems.algorithm): its
    readers and writers are prepared transfers (one C array each), its step fmi2DoStep,
    its saved state an FMU state.  ``no_rollback``: fmi2DoStep's
    noSetFMUStatePriorToCurrentPoint."""

    def __init__(self, instance: Instance, no_rollback: bool = True):
        self.instance, self.name = instance, instance.name
        self._depends = {u.variable.name: tuple(d.name for d in (u.dependencies or ())) for u in instance.model.outputs}
        self._t, self._h = ctypes.c_double(), ctypes.c_double()
        self._do_step = _unconverted(instance.slave.dll, "fmi2DoStep", instance.keeps_the_gil)
        self._step_arguments = (ctypes.c_void_p(instance.slave.component), self._t, self._h, int(no_rollback))

    def variable(self, name: str) -> Variable | None:
        var = self.instance.variables.get(name)
        return None if var is None else Variable(var.causality, var.type, var.unit, self._depends.get(name, ()))

    def _transfer(self, names, write: bool):
        kind, = {self.instance.variables[name].type for name in names}
        transfer = self.instance.transfer(kind, [self.instance.vr(name) for name in names], write)
        return transfer.values, range(len(names)), transfer

    def reader(self, names):
        return self._transfer(names, False)

    def writer(self, names):
        return self._transfer(names, True)

    def skips(self, h: float) -> bool:
        return False

    def step(self, t: float, h: float):
        self._t.value, self._h.value = t, h
        log = self.instance.log
        log_start = len(log)
        status = self._do_step(*self._step_arguments)
        if status > _FMI2_WARNING:
            self.instance._checked("fmi2DoStep", status, log_start)

    def save(self):
        return self.instance.call("getFMUstate")

    def restore(self, saved):
        self.instance.call("setFMUstate", saved)

    def release(self, saved):
        self.instance.call("freeFMUstate", saved)


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

    ports = {name: FmuPort(inst, not iterations) for name, inst in instances.items()}
    algorithm = Algorithm(ports, [(c.source, c.output, c.target, c.input) for c in connections], step, multiples,
                          iterations)
    recorder = _Recorder(algorithm, instances, record, n_steps // every + 1)
    iterator = range(n_steps + 1)
    if progress:
        tqdm = optional("tqdm")          # the [cli] extra's; without it (a plain install) no bar
        if tqdm is not None:
            iterator = tqdm.tqdm(iterator, desc="co-simulation", unit="step")
    recorded = 0

    def result(rows: int) -> Result:
        return Result(np.arange(0, rows * every, every) * step, recorder.signals(rows))

    try:
        for n in iterator:
            t = n * step
            if inputs is not None:
                for key, value in inputs(t).items():
                    name, var = key.split(".", 1)
                    instances[name].set(var, value)
            algorithm.exchange(n)
            if n % every == 0:
                recorder.record(n // every, n)
                recorded = n // every + 1
            if n == n_steps:
                break
            algorithm.step(n, t, step)
    except KeyboardInterrupt as exc:     # Ctrl-C: the rows recorded so far go with it
        exc.partial = result(recorded)
        raise
    return result(n_steps // every + 1)


class _Recorder:
    """The recorded variables of a run, ``rows`` rows of them.  A variable a connection
    reads is taken from the exchange's reader, unless it was read before one of its own
    inputs was set (a stage-2 output depending on a stage-2 target: then a fresh get after
    the exchange is what a record means); the others have record readers of their own, per
    instance and type (an instance within a step of its own rate is not read again: its
    recorded values are those of its step's start)."""

    def __init__(self, algorithm: Algorithm, instances: dict[str, Instance], record: list[str], rows: int):
        self.algorithm, self.keys = algorithm, list(record)
        late = {(c[2], c[3]) for c in algorithm.stages[1]}
        own, places = {}, []
        for key in self.keys:
            inst, name = key.split(".", 1)
            port = algorithm.ports[inst]
            var = port.variable(name)
            if var is None:
                instances[inst].vr(name)          # KeyError naming it
            if var.type not in _VALUE_TYPES:
                raise ValueError(f"{key} is a {var.type} variable; allowed here: {', '.join(_VALUE_TYPES)}")
            if (inst, name) in algorithm.sources and not any((inst, d) in late for d in var.depends):
                places.append((None, algorithm.sources[inst, name]))
            else:
                names = own.setdefault((inst, var.type), [])
                places.append(((inst, var.type), len(names)))
                names.append(name)
        readers = {group: algorithm.ports[group[0]].reader(names) for group, names in own.items()}
        self.cells = [cell if group is None else (readers[group][0], readers[group][1][cell])
                      for group, cell in places]
        self.refreshes = [[reader[2] for (inst, _), reader in readers.items() if inst not in held]
                          for _, held in algorithm.phases]
        self.rows = np.empty((rows, len(self.keys)))

    def record(self, row: int, n: int):
        """Row ``row``: the recorded values now, at base step ``n``."""
        for refresh in self.refreshes[n % self.algorithm.frame]:
            refresh()
        self.rows[row] = [values[key] for values, key in self.cells]

    def signals(self, rows: int) -> dict[str, np.ndarray]:
        """{recorded variable: its values in the first ``rows`` rows} (float64, as every
        value recorded: a Boolean as 0.0 or 1.0)."""
        return {key: self.rows[:rows, column] for column, key in enumerate(self.keys)}
