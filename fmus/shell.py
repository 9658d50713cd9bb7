"""The FMI 2.0 shell: the one face of a model towards pythonfmu's binary, for an element and a system FMU.

:class:`Shell` is the FMU class around a model mixed into it (``type(name, (Shell, model))``,
the model class as ``MODEL``): :func:`element_fmu` puts it around an element model
(:mod:`fmus.model`), ``systems/composite_slave.py`` (``Composite``) around a whole system
(``SystemModel``).  The shell holds everything FMI and nothing of the physics nor of the
system:

* one guard: the phase of the instance (instantiated, initialized, terminated) and the
  table ``REFUSED`` of the calls refused in a phase, with the reason (Reference-FMUs'
  fmi2Functions.c: one mask per call); a parameter set after initialization is refused by
  name (it is fixed);
* the get/set tables, built once per instance from the model's ``interface()``: value
  reference -> variable, per type, and a reader (writer) made once per list of value
  references a host gets (sets), from the model's ``reader(names, convert)``
  (``writer(names)``);
* the FMU-state funnel: fmi2Get/SetFMUstate and (de)serialization (the model's ``record()``
  with whose state it is, element or system, and the code's fingerprint;
  ``record_problem`` and ``restore`` set it back);
* the error funnel: a bad parameter makes ``fmi2ExitInitializationMode`` fail (pythonfmu turns
  the raised exception into fmi2Fatal and logs its text, which names the variable and the
  allowed range; see :func:`raise_to_host`); a bad input or an impossible step makes
  ``fmi2DoStep`` return fmi2Discard with an error log naming the variable (the model's
  ``take_step`` says why), and the instance keeps the state of the last communication point.

What the shell asks of a model (the shell protocol; :class:`fmus.model.Model` implements it
for an element, ``systems.composite_slave.SystemModel`` for a system), nothing FMI in it:

1. ``MODEL.__init__(self, resources=...)``: the model made, from the FMU's resources folder
   where it needs one (a system reads its description there); ``DEFAULT_STOP``,
   ``DEFAULT_STEP``, ``description``, ``start_time`` (fmi2SetupExperiment writes it).
2. ``interface()``: the variables (:class:`fmus.variables.Var`) in value-reference order;
   ``parameter_names``: the names of the parameters among them.
3. ``reader(names, convert)``: a function model -> list of the values of ``names`` as
   ``convert`` (float, int, bool), current (feedthrough outputs brought up to date);
   ``writer(names)``: a function (model, values) -> None writing parameters and inputs.
   Neither holds the model.
4. ``initialize()``: the parameters checked (:class:`fmus.model.ParameterError` naming each
   bad one), the start; ``state`` is None until then.
5. ``take_step(t, h)`` (t finite, h > 0 finite): None when taken, else why it is refused
   (a message, or a tuple of messages logged in order); a refused or interrupted step
   leaves the model as it was.  ``undo_step()``: back to before the last step taken.
6. ``record()`` (JSON-friendly), ``record_problem(saved, name)`` (why a record cannot be
   set, or None) and ``restore(saved, why_not_restorable)`` (all or nothing).

The FMU class says whose states it takes: ``STATE_KIND`` ("element", "system"),
``state_owner()``, ``code_fingerprint`` and ``SAME_CODE_ONLY``.

Interrupts (Ctrl-C in a Python host such as fmpy, where the FMU's code runs in the host's
interpreter): an exception that is not an ``Exception`` (KeyboardInterrupt, or what a host's
signal handler raises) never goes through pythonfmu's error path, which would make the call
fmi2Fatal and lose the interrupt.  An interrupted fmi2DoStep is undone (state, outputs and
time of the step's start) and returns fmi2Discard; any other interrupted call (a get, a set,
the FMU state calls, initialization) is short and idempotent and is run again to its end.
Then the interrupt is passed on to the host: :func:`_pass_on_interrupt`.
"""
from __future__ import annotations

import _thread
import ctypes
import functools
import math
import signal
import threading
import weakref

from . import fmi2
from .fmi2 import Fmi2Slave
from .kernel_run import KernelRun, made
from .model import ParameterError, StateError
from .native_exit import order_native_exit
from .variables import BOOLEAN, INTEGER, OUTPUT, REAL

#: the Python type an FMI get returns, per FMI type
CONVERT = {REAL: float, INTEGER: int, BOOLEAN: bool}


def fmi_entry(call: str):
    """Mark an FMI entry point (a method pythonfmu calls): any exception it raises reaches
    pythonfmu through :func:`raise_to_host`, the one path that survives
    pythonfmu 0.7.0's double release (an unguarded exception crashed the host at
    fmi2FreeInstance), with a message that names the FMI call and the cause
    (:func:`_raise_entry_failure`); an interrupt runs the call again to its end and is
    passed on to the host (:func:`_complete_interrupted`)."""
    def decorate(method):
        @functools.wraps(method)
        def entry(self, *args):
            try:
                result = method(self, *args)
                if self.log_queue:
                    take_pending_signals()
                return result
            except Exception as exc:
                _raise_entry_failure(self, call, exc)
            except BaseException as exc:
                return _complete_interrupted(self, call, exc, method, args)
        return entry
    return decorate


def fmi_step_entry(call: str):
    """:func:`fmi_entry` for the calls with two arguments a host makes at every step (fmi2DoStep's
    t and h, fmi2Set<type>'s references and values): with a fixed signature, a call builds no
    argument tuples (``*args`` built two).  An interrupted fmi2DoStep is not run again: the
    method has undone the step; it returns fmi2Discard and the interrupt is passed on."""
    def decorate(method):
        @functools.wraps(method)
        def entry(self, first, second):
            try:
                return method(self, first, second)
            except Exception as exc:
                _raise_entry_failure(self, call, exc)
            except BaseException as exc:
                if call == "fmi2DoStep":
                    return _refuse_interrupted(self, exc, first, second)
                return _complete_interrupted(self, call, exc, method, (first, second))
        return entry
    return decorate


def _get_entry(call: str, kind: str):
    """The FMI entry point fmi2Get<kind> (``call``): ``self._get_values(vrs, kind)`` guarded as
    by :func:`fmi_entry`, in one call (a host gets at every step)."""
    def get(self, vrs):
        try:
            return self._get_values(vrs, kind)
        except Exception as exc:
            _raise_entry_failure(self, call, exc)
        except BaseException as exc:
            return _complete_interrupted(self, call, exc, type(self)._get_values, (vrs, kind))
    get.__name__ = get.__qualname__ = f"get_{kind.lower()}"
    return get


# ---------------------------------------------------------------------------- interrupts
def interrupt_signal(exc: BaseException) -> int | None:
    """The signal whose handler in the host raised ``exc`` inside the FMU's code, or None when
    ``exc`` is no interrupt (an ``Exception``, or raised elsewhere than in a signal handler of
    the main thread, where Python runs them).  A handler written in Python has its frame in
    the traceback (the innermost one of its code); Python's default SIGINT handler is not
    Python code: a KeyboardInterrupt without such a frame is SIGINT's."""
    if isinstance(exc, Exception) or threading.current_thread() is not threading.main_thread():
        return None
    handlers = {}
    for signum in signal.valid_signals():
        code = getattr(signal.getsignal(signum), "__code__", None)
        if code is not None:
            handlers[code] = signum
    found, frame = None, exc.__traceback__
    while frame is not None:
        found = handlers.get(frame.tb_frame.f_code, found)
        frame = frame.tb_next
    if found is None and isinstance(exc, KeyboardInterrupt) and callable(signal.getsignal(signal.SIGINT)):
        found = signal.SIGINT
    return found


def _pass_on_interrupt(slave, signum: int, message: str, status):
    """Log ``message`` and have the signal ``signum`` raised again in the host once this call
    has returned, so that the host's handler runs in the host's code.

    When it is raised matters: Python runs a pending signal's handler at the next bytecode
    boundary of the main thread.  Raised from our code (``_thread.interrupt_main``), that is
    at once in an uncompiled module (the check after the call), or, compiled, in the host's
    logger callback that pythonfmu 0.7.0 calls for each queued message after the method has
    returned (PySlaveInstance.cpp: clearLogBuffer after every call), where ctypes prints the
    exception as "ignored" and the interrupt is lost.  pythonfmu then removes the messages
    from the queue (PyList_SetSlice): the last reference to each goes, and the callback of a
    weak reference to this message, C calls only (next() on a map of interrupt_main), raises
    the signal there: after the host has had every message, before it runs Python again.
    A caller without pythonfmu (a test calling the method) gets it when it empties
    ``log_queue``."""
    slave.log(message, status)
    raise_signal = functools.partial(next, map(_thread.interrupt_main, (signum,)))
    slave._interrupt_carrier = weakref.ref(slave.log_queue[-1], raise_signal)


#: Run the handlers of the signals that have arrived (Python runs them at the next bytecode
#: boundary): a function of one bytecode instruction, compiled at run time, so that it stays
#: bytecode when this module is compiled.  Called before a call returns with messages queued:
#: pythonfmu then calls the host's logger for each (PySlaveInstance.cpp, clearLogBuffer), in
#: fmpy Python code, which would run the handler of a signal that arrived while the FMU's
#: compiled code ran, and ctypes drops the exception of a callback ("Exception ignored"):
#: measured, an Engine fuzz campaign ran on for 18 min after its SIGINT.  Taken here, it is
#: an interrupt of the FMU's call (the step undone, the signal passed on).
take_pending_signals = eval("lambda: None")


def repeat_until_done(work, *args):
    """``work(*args)``, run again as often as an interrupt cuts it short (for work that may
    be repeated: an undo, an idempotent FMI call); an error or what is no interrupt propagates."""
    while True:
        try:
            return work(*args)
        except Exception:
            raise
        except BaseException as again:
            if interrupt_signal(again) is None:
                raise


def _complete_interrupted(slave, call: str, exc: BaseException, method, args):
    """An FMI call other than fmi2DoStep cut short by an interrupt: run again to its end (each
    is short and may be repeated: gets, sets, state calls, initialization), then pass the
    interrupt on.  What is no interrupt goes to pythonfmu's error path as before."""
    signum = interrupt_signal(exc)
    if signum is None:
        raise exc
    try:
        result = repeat_until_done(method, slave, *args)
    except Exception as error:
        _raise_entry_failure(slave, call, error)
    _pass_on_interrupt(slave, signum, f"{call} was interrupted ({type(exc).__name__}) and run again to its "
                                      "end; the interrupt is passed on to the host", fmi2.OK)
    return result


def _refuse_interrupted(slave, exc: BaseException, current_time, step_size) -> bool:
    """An interrupted fmi2DoStep (the step already undone by do_step): fmi2Discard, and the
    interrupt passed on."""
    signum = interrupt_signal(exc)
    if signum is None:
        raise exc
    _pass_on_interrupt(slave, signum, f"fmi2DoStep from t = {current_time!r} with h = {step_size!r} was "
                                      f"interrupted ({type(exc).__name__}): the step is undone, the instance is "
                                      "as before the call; the interrupt is passed on to the host",
                       fmi2.DISCARD)
    return False


def _raise_entry_failure(slave, call: str, exc: Exception):
    """Raise ``exc``, raised in the FMI call ``call`` of ``slave``, to pythonfmu safely
    (:func:`raise_to_host`) with a message naming the call and the cause, unless
    it is already on its way there."""
    if getattr(exc, "raised_to_host", False):
        raise exc
    cause = str(exc) if isinstance(exc, (ParameterError, StateError)) else f"{type(exc).__name__}: {exc}"
    slave._raise_to_host(type(exc) if isinstance(exc, ParameterError) else FmiCallError, f"{call} failed: {cause}")


class FmiCallError(RuntimeError):
    """An FMI call that failed (its message names the call and the cause)."""


#: the phases of an instance (FMI 2.0 co-simulation state machine, as far as it matters here)
INSTANTIATED, INITIALIZED, TERMINATED = "instantiated", "initialized", "terminated"
#: (call, phase) -> why the call is refused in that phase; every other call is allowed
REFUSED = {
    ("fmi2DoStep", INSTANTIATED): "fmi2DoStep called before initialization",
    ("fmi2DoStep", TERMINATED): "fmi2DoStep called after fmi2Terminate",
}


def phase_problem(call: str, phase: str) -> str | None:
    """Why ``call`` is refused in ``phase`` (REFUSED), or None."""
    return REFUSED.get((call, phase))


def raise_to_host(slave, kind: type, message: str):
    """Raise ``kind(message)`` safely through pythonfmu 0.7.0's error path (the FMI call
    then returns fmi2Fatal, pythonfmu's only error status for calls other than doStep;
    pythonfmu logs the message, which names the cause).  Reached only through
    :func:`fmi_entry`.

    On a Python exception pythonfmu's handle_py_exception() first flushes the log
    queue through the host's logger callback while the exception is still set (for a
    Python host such as fmpy that runs Python code with an error pending: the error
    was lost as "unknown error" and a CI run aborted with a corrupted heap), then
    releases its references to this slave, its class and its log queue, and
    fmi2FreeInstance releases them a second time.  So the message travels in the
    exception only (pythonfmu logs it as fmi2Fatal once the error is cleared), the
    queue is empty when raising, and one extra reference to each of the three
    objects keeps them alive through both releases.
    """
    pending = [entry.msg for entry in slave.log_queue]
    slave.log_queue.clear()
    for obj in (slave, type(slave), slave.log_queue):
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))
    error = kind("; ".join(pending + [message]))
    error.raised_to_host = True
    raise error from None


def state_from_bytes(data: bytes):
    """fmi2DeSerializeFMUstate: an FMU state from its bytes, or a record of why they are none
    (pythonfmu calls it on the class, where an exception could not be raised safely:
    fmi2SetFMUstate then refuses the record with that reason)."""
    try:
        return _static_call(_state_from_bytes, data)
    except (UnicodeDecodeError, ValueError) as exc:
        return {"invalid": f"the serialized FMU state is not one this FMU wrote ({exc})"}


def state_to_bytes(state) -> bytes:
    """fmi2SerializeFMUstate (pythonfmu's, with interrupts handled: :func:`_static_call`)."""
    return _static_call(_state_to_bytes, state)


class Shell(Fmi2Slave):
    """The FMI face of one model (module docstring): :func:`element_fmu` puts it around an
    element model, ``systems/composite_slave.py`` around a whole system (its ``Composite``).
    The model is mixed into the same object (``type(name, (Shell, model), ...)``, the model
    class as ``MODEL``); what the shell asks of it is the shell protocol (module docstring)."""

    author = "drivetrain-fmu"
    license = "MIT"
    version = "0.1.0"
    _raise_to_host = raise_to_host
    _fmu_state_from_bytes = staticmethod(state_from_bytes)
    _fmu_state_to_bytes = staticmethod(state_to_bytes)
    #: the phase of the instance (INSTANTIATED, INITIALIZED, TERMINATED)
    _fmi_phase = INSTANTIATED
    #: the FMU-state funnel: an FMU state is {STATE_KIND: state_owner(), "code": the first 12
    #: digits of code_fingerprint(), **the model's record}; SAME_CODE_ONLY: a state written by
    #: other code is refused before its record is read (else only named when it fails)
    STATE_KIND = "element"
    SAME_CODE_ONLY = False

    def state_owner(self) -> str:
        """Whose states this FMU takes (the element's name)."""
        return type(self).__name__

    def state_title(self) -> str:
        """The FMU in the message refusing another's state."""
        return self.state_owner()

    def __init__(self, **kwargs):
        Fmi2Slave.__init__(self, **kwargs)
        self.MODEL.__init__(self, resources=self.resources)
        if self.resources and not order_native_exit(self.resources, type(self).__name__):
            self.log(f"binaries/linux64/{type(self).__name__}.so not found next to the resources "
                     f"{self.resources}: its exit-order fix (fmus.native_exit) is not applied",
                     fmi2.WARNING)
        self._fmi_phase = INSTANTIATED
        # the get/set tables: value reference -> variable, per type, and value reference ->
        # name of the settable variables; a reader (writer) per list of value references a
        # host gets (sets), made from them once
        self._declared = {}
        self._readable = {kind: {} for kind in CONVERT}
        self._settable = {kind: {} for kind in CONVERT}
        for vr, var in enumerate(self.interface()):     # value references in declaration order
            self._declared[vr] = var
            self._readable[var.type][vr] = var.name
            if var.causality != OUTPUT:
                self._settable[var.type][vr] = var.name
        self._readers = {kind: {} for kind in CONVERT}
        self._writers = {kind: {} for kind in CONVERT}
        made(self)      # its hot calls may come from the binary, on the model's ``_run`` (fmus/fmi_kernel.py)

    # ------------------------------------------------------------------ FMI
    @fmi_entry("fmi2SetupExperiment")
    def setup_experiment(self, start_time, *args):
        """Remember the start time (elements with time-dependent laws need it)."""
        self.start_time = start_time

    @fmi_entry("fmi2EnterInitializationMode")
    def enter_initialization_mode(self):
        pass

    @fmi_entry("fmi2ExitInitializationMode")
    def exit_initialization_mode(self):
        self.initialize()
        self._fmi_phase = INITIALIZED

    @fmi_entry("fmi2Terminate")
    def terminate(self):
        self._fmi_phase = TERMINATED

    def _step_call_problem(self, current_time: float, step_size: float) -> str:
        """Why fmi2DoStep may not be called now with these arguments (REFUSED in this phase,
        a non-finite time or step, h <= 0); asked only when the doStep's own one-line test of
        the same found one (no call per step)."""
        problem = phase_problem("fmi2DoStep", self._fmi_phase)
        if problem is not None:
            return problem
        if not (0.0 < step_size < math.inf and math.isfinite(current_time)):
            return (f"communication point t = {current_time!r} and step size h = {step_size!r} "
                    "must be finite, h > 0")
        raise AssertionError("_step_call_problem asked about a call that is allowed")

    @fmi_step_entry("fmi2DoStep")
    def do_step(self, current_time: float, step_size: float) -> bool:
        t, h = current_time, step_size
        # x - x == 0 exactly when x is finite: 0 < h < inf and t finite
        if self._fmi_phase is not INITIALIZED or not (0.0 < h and h - h == 0.0 and t - t == 0.0):
            return self._refuse(self._step_call_problem(current_time, step_size))
        problem = self.take_step(current_time, step_size)
        if problem is not None:
            return self._refuse(problem)
        if self.log_queue:
            try:
                take_pending_signals()
            except BaseException:            # an interrupt: the step is undone
                repeat_until_done(self.undo_step)
                raise
        return True

    def _refuse(self, problem) -> bool:
        """Log why a step is refused (one message, or a tuple of them in order): fmi2Discard."""
        for message in (problem,) if type(problem) is str else problem:
            self.log(message, fmi2.ERROR)
        take_pending_signals()
        return False

    @fmi_step_entry("fmi2SetReal")
    def set_real(self, vrs, values):
        self._set_values(vrs, values, REAL)

    @fmi_step_entry("fmi2SetInteger")
    def set_integer(self, vrs, values):
        self._set_values(vrs, values, INTEGER)

    @fmi_step_entry("fmi2SetBoolean")
    def set_boolean(self, vrs, values):
        self._set_values(vrs, values, BOOLEAN)

    get_real = _get_entry("fmi2GetReal", REAL)
    get_integer = _get_entry("fmi2GetInteger", INTEGER)
    get_boolean = _get_entry("fmi2GetBoolean", BOOLEAN)

    @fmi_entry("fmi2GetString")
    def get_string(self, vrs):
        raise TypeError(f"{type(self).__name__} has no String variables (valueReferences {list(vrs)})")

    @fmi_entry("fmi2SetString")
    def set_string(self, vrs, values):
        raise TypeError(f"{type(self).__name__} has no String variables (valueReferences {list(vrs)})")

    # ------------------------------------------------------------------ get / set
    def _get_values(self, vrs, kind: str):
        """fmi2Get<kind>: the reader of this list of value references, made once (the
        model's ``reader``, the values converted to the type's Python type)."""
        readers, key = self._readers[kind], tuple(vrs)
        reader = readers.get(key)
        if reader is None:
            reader = self._kept(readers, key, self._reader(key, kind))
        return reader(self)

    def _reader(self, vrs, kind: str):
        """The reader of the value references ``vrs`` (model -> list of values of ``kind``);
        TypeError naming one that is not of that type."""
        readable = self._readable[kind]
        try:
            names = [readable[vr] for vr in vrs]
        except KeyError as missing:
            raise TypeError(f"variable with valueReference={missing.args[0]} is not of type {kind}") from None
        return self.reader(names, CONVERT[kind])

    @staticmethod
    def _kept(plans: dict, key, plan):
        """``plan`` kept for ``key`` in ``plans``, up to 256 lists (a host asks a few fixed
        lists; beyond, one is made per call)."""
        if len(plans) < 256:
            plans[key] = plan
        return plan

    def _set_values(self, vrs, values, kind: str):
        """fmi2Set<kind>: the model's writer of this list of value references (the names
        from the table, which also refuses outputs); a parameter only before initialization."""
        writers, key = self._writers[kind], tuple(vrs)
        plan = writers.get(key)
        if plan is None:
            plan = self._kept(writers, key, self._writer(key, kind))
        fixed, write = plan
        if fixed and self._fmi_phase is not INSTANTIATED:
            raise StateError(f"parameter {', '.join(fixed)} is fixed: it can be set only before "
                             "fmi2ExitInitializationMode (or after fmi2Reset)")
        write(self, values)

    def _writer(self, vrs, kind: str):
        """(the parameters among ``vrs``, the model's writer of them)."""
        settable = self._settable[kind]
        try:
            names = [settable[vr] for vr in vrs]
        except KeyError as missing:
            raise self._not_settable(missing.args[0], kind) from None
        return [name for name in names if name in self.parameter_names], self.writer(names)

    def _not_settable(self, vr, kind: str) -> TypeError:
        """The error of a set of value reference ``vr`` that is no settable ``kind``."""
        var = self._declared.get(vr)
        what = "" if var is None else \
            f": {var.name} is {'an' if var.type == INTEGER else 'a'} {var.type} {var.causality}"
        return TypeError(f"variable with valueReference={vr} is not a settable "
                         f"{kind} (a parameter or input of this type){what}")

    # ------------------------------------------------------------------ FMU state
    @fmi_entry("fmi2GetFMUstate")
    def _get_fmu_state(self):
        return {self.STATE_KIND: self.state_owner(), "code": self.code_fingerprint()[:12], **self.record()}

    def _state_problem(self, saved) -> str | None:
        """Why ``saved`` is not a state of this FMU, in words naming the part that is wrong,
        or None: whose state it is, the code that wrote it (where the model takes states of
        its own code only), then the model's record (``record_problem``)."""
        name, kind = self.state_owner(), self.STATE_KIND
        if not isinstance(saved, dict):
            return f"not an FMU state: {saved!r}"
        if "invalid" in saved:
            return saved["invalid"]
        if saved.get(kind) != name:      # whose it is: an element's or a system's
            whose = saved.get(kind, saved.get("element", saved.get("system", "another FMU")))
            return f"a state of {whose!r} cannot be set into a {self.state_title()}"
        written, here = saved.get("code"), self.code_fingerprint()[:12]
        if self.SAME_CODE_ONLY and written != here:
            return (f"the state was written by {kind} code {written!r}, this FMU runs {here}: "
                    "set states of the same build only")
        return self.record_problem(saved, name)

    def _version_note(self, saved) -> str:
        written = saved.get("code")
        here = self.code_fingerprint()[:12]
        if written is None:
            return f"it was written by another version of the {self.STATE_KIND} code or altered"
        if written != here:
            return (f"it was written by {self.STATE_KIND} code {written}, this FMU runs {here}: "
                    "set states of the same build only")
        return "it was altered after fmi2GetFMUstate"

    @fmi_entry("fmi2SetFMUstate")
    def _set_fmu_state(self, saved):
        """Restore the model's record (``restore``: its variables and state).  A state that
        cannot be restored leaves the instance as it was."""
        problem = self._state_problem(saved)
        if problem is not None:
            raise StateError(problem)
        self.restore(saved, lambda: self._version_note(saved))
        if self._fmi_phase is not TERMINATED:
            self._fmi_phase = INSTANTIATED if self.state is None else INITIALIZED


def element_fmu(model: type, code_fingerprint) -> type:
    """The FMU class of the element ``model`` (a :class:`fmus.model.Model`): the shell
    around it, the model run by its compiled kernel where it has one (:mod:`fmus.kernel_run`),
    named as the model (pythonfmu's model identifier); ``code_fingerprint()``: the
    element code's (``fmus.code_fingerprint``), which its FMU states carry."""
    return type(model.__name__, (Shell, KernelRun, model), {
        "MODEL": model, "__doc__": model.__doc__, "__module__": model.__module__,
        "__qualname__": model.__qualname__, "code_fingerprint": staticmethod(code_fingerprint)})


def _state_from_bytes(data) -> dict:
    import json     # FMU states only: an element FMU's instantiation imports no json (about 1 ms)

    return json.loads(bytes(data).decode("utf-8"))


def _state_to_bytes(state) -> bytes:
    import json

    return json.dumps(state).encode("utf-8")


def _static_call(work, argument):
    """(De)serializing an FMU state: pythonfmu calls these on the class, with no instance whose
    log could carry an interrupt (_pass_on_interrupt): an interrupt runs the work again to its
    end and is raised again at once.  Compiled, as the FMUs run, no bytecode runs before the
    host's; uncompiled, the check after the call raises it here, where it is dropped (an
    escaping exception would make the call fmi2Fatal and lose it all the same)."""
    try:
        return work(argument)
    except Exception:
        raise
    except BaseException as exc:
        signum = interrupt_signal(exc)
        if signum is None:
            raise
        result = repeat_until_done(work, argument)
        try:
            _thread.interrupt_main(signum)
        except BaseException as again:
            if interrupt_signal(again) is None:
                raise
        return result


