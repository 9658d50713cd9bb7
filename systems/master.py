"""A fixed-step co-simulation master on fmpy's FMU2Slave API.

At every communication point the master propagates the connections (outputs of body
elements into compliance elements, whose outputs follow their inputs without delay,
then those outputs into the body inputs), then steps every FMU from t to t + h with
its inputs held (zero-order hold).  Time is counted, t = t0 + n h, not accumulated.

Every FMI call goes through :class:`Instance`, which turns a failing status into
:class:`CoSimulationError` carrying the FMU's own log messages.
"""
from __future__ import annotations

import atexit
import ctypes
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
_TRANSFER = {kind: ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint),
                                    ctypes.c_size_t, ctypes.POINTER(c_type))
             for kind, (c_type, _) in _VALUE_TYPES.items()}
_DO_STEP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_double, ctypes.c_double, ctypes.c_int)


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
            # the temporary folder (12 MB per FMU and process: 79 GB after some test runs)
            atexit.register(shutil.rmtree, unzip_dir, ignore_errors=True)
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
        self.call("instantiate", callbacks=self._callbacks, loggingOn=True)
        self.call("setupExperiment", startTime=start_time)
        self.call("enterInitializationMode")
        for name, value in (parameters or {}).items():
            self.set(name, value)
        self.call("exitInitializationMode")

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
    """fmi2Get/Set<kind> of fixed value references through one numpy buffer, ``values``."""

    def __init__(self, instance: Instance, kind: str, vrs: list[int], write: bool):
        if kind not in _TRANSFER:
            raise ValueError(f"kind = {kind!r} must be one of {', '.join(_TRANSFER)}")
        c_type, dtype = _VALUE_TYPES[kind]
        self.instance = instance
        self.function = f"fmi2{'Set' if write else 'Get'}{kind}"
        self._call = _TRANSFER[kind]((self.function, instance.slave.dll))
        self._vrs = (ctypes.c_uint * len(vrs))(*vrs)
        self._values = np.zeros(len(vrs), dtype=dtype)
        self._pointer = self._values.ctypes.data_as(ctypes.POINTER(c_type))

    @property
    def values(self) -> np.ndarray:
        """The buffer the FMI call reads (set) or fills (get): assign into it
        (``values[:] = ...``), the call keeps a pointer to this array."""
        return self._values

    def __call__(self) -> np.ndarray:
        """Move the values (a set sends ``values``, a get fills it) and return ``values``."""
        instance = self.instance
        log_start = len(instance.log)
        status = self._call(instance.slave.component, self._vrs, len(self._vrs), self._pointer)
        instance._checked(self.function, status, log_start)
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


def _grouped(instances, names, types=("Real",), write=False):
    """[(Transfer, [position...])] moving the variables 'inst.var' of ``names``, one
    transfer per instance and type; ``positions`` index ``names``."""
    groups = {}
    for pos, key in enumerate(names):
        inst_name, var = key.split(".", 1)
        inst = instances[inst_name]
        kind = inst.variables[var].type if var in inst.variables else inst.vr(var)
        if kind not in types:
            raise ValueError(f"{key} is a {kind} variable; allowed here: {', '.join(types)}")
        vrs, positions = groups.setdefault((inst_name, kind), ([], []))
        vrs.append(inst.vr(var))
        positions.append(pos)
    return [(instances[inst_name].transfer(kind, vrs, write), np.array(positions))
            for (inst_name, kind), (vrs, positions) in groups.items()]


def run(instances: dict[str, Instance], connections: list[Connection], stop: float, step: float,
        record: list[str], inputs: Callable[[float], dict[str, float]] | None = None,
        progress: bool = False, iterations: int = 0) -> Result:
    """Co-simulate from t = 0 to ``stop``; ``inputs(t)`` gives {'inst.var': value} set each step.

    Connections are exchanged in two stages: first those whose source has no direct
    feedthrough (body outputs), then the others (compliance outputs), so a compliance
    element sees the body states of the same communication point.  Values are moved
    with one getReal/setReal call per instance and stage.

    ``iterations`` > 0 makes each step iterative with rollback: after a step the
    connections are evaluated at t + h, every instance is set back to its saved FMU state
    (fmi2SetFMUstate) and the step is repeated with each connected input held at the
    mean of its values at t and at t + h (trapezoidal coupling), ``iterations`` times.
    """
    if not step > 0:
        raise ValueError(f"step = {step!r} must be > 0")

    def port(instance: str, name: str) -> Port | None:
        variable = instances[instance].variables.get(name) if instance in instances else None
        return None if variable is None else Port(variable.causality, variable.type, variable.unit)

    problems = connection_problems(connections, port)
    if problems:
        raise ValueError("the connections cannot be run:\n  " + "\n  ".join(problems))
    n_steps = int(round(stop / step))
    if abs(n_steps * step - stop) > 1e-9 * max(1.0, stop):
        raise ValueError(f"stop = {stop!r} is not a whole number of steps of {step!r}")

    def feedthrough(c: Connection):
        return any(u.variable.name == c.output and u.dependencies for u in instances[c.source].model.outputs)

    stages = [[c for c in connections if not feedthrough(c)], [c for c in connections if feedthrough(c)]]
    plans = [(_grouped(instances, [f"{c.source}.{c.output}" for c in stage]),
              _grouped(instances, [f"{c.target}.{c.input}" for c in stage], write=True), len(stage))
             for stage in stages]
    # a recorded output that a connection moves is taken from the exchange's buffer, unless
    # it was read before one of its own inputs was set (a stage-2 output depending on a
    # stage-2 target): then a fresh get after the exchange is what a record means
    late_inputs = {(c.target, c.input) for c in stages[1]}

    def settled(c: Connection) -> bool:
        return not any((c.source, dep.name) in late_inputs for u in instances[c.source].model.outputs
                       if u.variable.name == c.output for dep in (u.dependencies or ()))

    moved_at = {f"{c.source}.{c.output}": (stage, i) for stage, links in enumerate(stages)
                for i, c in enumerate(links) if stage == 0 or settled(c)}
    copied = [(pos, *moved_at[key]) for pos, key in enumerate(record) if key in moved_at]
    fetched = [pos for pos, key in enumerate(record) if key not in moved_at]
    recorders = [(get, np.array(fetched)[positions])
                 for get, positions in _grouped(instances, [record[pos] for pos in fetched],
                                                ("Real", "Boolean", "Integer"))]
    values = np.empty((n_steps + 1, len(record)))
    slaves = list(instances.values())

    if not (isinstance(iterations, int) and iterations >= 0):
        raise ValueError(f"iterations = {iterations!r} must be an integer >= 0")

    def exchange(t, external=True):
        """Propagate the connections; returns the values set, per stage."""
        if inputs is not None and external:
            for key, value in inputs(t).items():
                name, var = key.split(".", 1)
                instances[name].set(var, value)
        moved = []
        for sources, targets, size in plans:
            buffer = np.empty(size)
            for get, positions in sources:
                buffer[positions] = get()
            set_targets_of(targets, buffer)
            moved.append(buffer)
        return moved

    def set_targets_of(targets, buffer):
        for put, positions in targets:
            put.values[:] = buffer[positions]
            put()

    def set_targets(moved):
        for (_, targets, _), buffer in zip(plans, moved):
            set_targets_of(targets, buffer)

    def iterate(t, start_values, saved):
        for _ in range(iterations):
            end_values = exchange(t + step, external=False)
            for inst, state in zip(slaves, saved):
                inst.call("setFMUstate", state)
            set_targets([0.5 * (first + last) for first, last in zip(start_values, end_values)])
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
        return Result(np.arange(rows) * step, {r: values[:rows, i] for i, r in enumerate(record)})

    try:
        for n in iterator:
            t = n * step
            start_values = exchange(t)
            row = values[n]
            for get, positions in recorders:
                row[positions] = get()
            for pos, stage, i in copied:
                row[pos] = start_values[stage][i]
            recorded = n + 1
            if n == n_steps:
                break
            saved = [inst.call("getFMUstate") for inst in slaves] if iterations else None
            for inst in slaves:
                inst.do_step(t, step, no_rollback=not iterations)
            if iterations:
                iterate(t, start_values, saved)
    except KeyboardInterrupt as exc:     # Ctrl-C: the rows recorded so far go with it
        exc.partial = result(recorded)
        raise
    return result(n_steps + 1)
