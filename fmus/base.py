"""ElementSlave: the one place where an element meets pythonfmu.

An element declares ``VARIABLES`` (records of :mod:`fmus.variables`) and implements

* ``initial_state()``         -> immutable state object (after parameters are checked)
* ``advance(t, h)``           -> new state after one communication step (pure: it may
                                 raise, the committed state is untouched)
* ``refresh_outputs()``       sets the state outputs (those without feedthrough); it may
                                 return the values it set (see :meth:`ElementSlave.refresh_outputs`)
* ``feedthrough_outputs()``   dict of the outputs that depend on the current inputs
* optionally ``advance_at(t, h, inputs)`` / ``feedthrough_at(inputs)``: the same with the
  inputs doStep or the get has already read (the tuple ``_read_inputs`` gives, in the order
  of the declared inputs), so an element that needs them does not read them again
* ``encode_state`` / ``decode_state`` for FMU state get/set (JSON-friendly)
* optionally ``cross_check()`` (parameter relations) and ``family_counts()`` (which
  members of its declared families are in use, hence checked: fmus.variables.in_use).

Errors are funnelled through two places: a bad parameter makes
``fmi2ExitInitializationMode`` fail (pythonfmu turns the raised exception into
fmi2Fatal and logs its text, which names the variable and the allowed range; see
:meth:`ElementSlave._raise_to_host`); a bad input or an impossible step makes
``fmi2DoStep`` return fmi2Discard with an error log naming the variable, and the
instance keeps the state of the last communication point.

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
import json
import math
import signal
import threading
import weakref
from operator import attrgetter, itemgetter

try:
    import cython
except ImportError:         # uncompiled, where Cython is not installed
    from solvers import cython_fallback as cython
from pythonfmu import Boolean, Fmi2Causality, Fmi2Slave, Fmi2Variability, Integer, Real
from pythonfmu.default_experiment import DefaultExperiment
from pythonfmu.enums import Fmi2Initial, Fmi2Status

from solvers.contract import SolverError

from .native_exit import order_native_exit
from .variables import BOOLEAN, INPUT, INTEGER, OUTPUT, PARAMETER, REAL, Var, count_parameters, in_use

_FMI_TYPES = {REAL: Real, INTEGER: Integer, BOOLEAN: Boolean}
_ZERO = {REAL: 0.0, INTEGER: 0, BOOLEAN: False}
#: the Python type an FMI get returns, per FMI type
CONVERT = {REAL: float, INTEGER: int, BOOLEAN: bool}


def fmi_entry(call: str):
    """Mark an FMI entry point (a method pythonfmu calls): any exception it raises reaches
    pythonfmu through :meth:`ElementSlave._raise_to_host`, the one path that survives
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
                                      "end; the interrupt is passed on to the host", Fmi2Status.ok)
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
                       Fmi2Status.discard)
    return False


def _raise_entry_failure(slave, call: str, exc: Exception):
    """Raise ``exc``, raised in the FMI call ``call`` of ``slave``, to pythonfmu safely
    (:meth:`ElementSlave._raise_to_host`) with a message naming the call and the cause, unless
    it is already on its way there."""
    if getattr(exc, "raised_to_host", False):
        raise exc
    cause = str(exc) if isinstance(exc, (ParameterError, StateError)) else f"{type(exc).__name__}: {exc}"
    slave._raise_to_host(type(exc) if isinstance(exc, ParameterError) else FmiCallError, f"{call} failed: {cause}")


@cython.locals(total=cython.double, value=cython.double)
def _all_finite_screen(values) -> bool:
    """True when the sum of ``values`` (in order, from 0.0) is finite, hence every value is
    (x - x == 0 exactly for a finite x); False when one is not, or when the sum of finite
    values overflows: the caller's exact check then decides.  A loop over C doubles: the
    builtin sum costs several times more (it runs at every step on the inputs and outputs)."""
    total = 0.0
    for value in values:
        total += value
    return total - total == 0.0


def _nonfinite(names, values) -> str | None:
    """'name = value is not finite' for the first non-finite value, else None (screened by
    the sum, :func:`_all_finite_screen`; an overflowing sum falls back to the check)."""
    if _all_finite_screen(values):
        return None
    return next((f"{name} = {value!r} is not finite" for name, value in zip(names, values)
                 if not math.isfinite(value)), None)


def values_getter(names):
    """obj -> tuple of the attributes ``names`` (operator.attrgetter, always a tuple)."""
    if len(names) == 1:
        single = attrgetter(names[0])
        return lambda obj: (single(obj),)
    return attrgetter(*names) if names else lambda obj: ()


class PlanCache(dict):
    """The readers of the lists of value references a host gets, by tuple: a hit is one
    dict lookup (fmi2Get runs at every step); a missing one is made by ``make(key)`` and
    kept, up to 256 lists (a host asks a few fixed lists; beyond, a reader is made per
    call).  ``make`` must not hold the slave (the slave holds this cache)."""

    def __init__(self, make):
        super().__init__()
        self._make = make

    def __missing__(self, key):
        plan = self._make(key)
        if len(self) < 256:
            self[key] = plan
        return plan


def _get_plan(access: dict, kind: str, vrs):
    """A function of an element slave returning the values of the value references ``vrs``
    of type ``kind`` (``access``: value reference -> (name, feedthrough?), the slave's for
    that type); TypeError naming one that is not of that type.  It holds no slave."""
    convert = CONVERT[kind]
    try:
        wanted = [access[vr] for vr in vrs]
    except KeyError as missing:
        raise TypeError(f"variable with valueReference={missing.args[0]} is not of type {kind}") from None
    names = [name for name, _ in wanted]
    if not any(through for _, through in wanted):
        state_values = values_getter(names)
        return lambda slave: list(map(convert, state_values(slave)))
    if all(through for _, through in wanted):
        feedthrough_values = items_getter(names)
        return lambda slave: list(map(convert, feedthrough_values(slave._feedthrough_values())))

    def mixed(slave):
        feedthrough = slave._feedthrough_values()
        return [convert(feedthrough[name] if through else getattr(slave, name)) for name, through in wanted]
    return mixed


def items_getter(positions):
    """sequence -> tuple of its items at ``positions`` (operator.itemgetter, always a tuple)."""
    if len(positions) == 1:
        single = itemgetter(positions[0])
        return lambda seq: (single(seq),)
    return itemgetter(*positions) if positions else lambda seq: ()


class ParameterError(ValueError):
    """Parameters that cannot describe a physical element."""


class StateError(ValueError):
    """An FMU state that cannot be set into this instance."""


class FmiCallError(RuntimeError):
    """An FMI call that failed (its message names the call and the cause)."""


class FmiCommonCalls:
    """The FMI calls every slave here answers alike: fmi2SetupExperiment keeps the start
    time, fmi2Get/Set<type> go to the slave's ``_get_values(vrs, kind)`` /
    ``_set_values(vrs, values, kind)``, String is refused by name (no slave here has String
    variables)."""

    def _step_call_problem(self, initialized: bool, current_time: float, step_size: float) -> str:
        """Why fmi2DoStep may not be called now with these arguments (before
        initialization, after fmi2Terminate, a non-finite time or step, h <= 0); asked only
        when the doStep's own one-line test of the same found one (no call per step)."""
        if not initialized:
            return "fmi2DoStep called before initialization"
        if self._terminated:
            return "fmi2DoStep called after fmi2Terminate"
        if not (0.0 < step_size < math.inf and math.isfinite(current_time)):
            return (f"communication point t = {current_time!r} and step size h = {step_size!r} "
                    "must be finite, h > 0")
        raise AssertionError("_step_call_problem asked about a call that is allowed")

    @fmi_entry("fmi2SetupExperiment")
    def setup_experiment(self, start_time, *args):
        """Remember the start time (elements with time-dependent laws need it)."""
        self.start_time = start_time

    @fmi_entry("fmi2EnterInitializationMode")
    def enter_initialization_mode(self):
        pass

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


class ElementSlave(FmiCommonCalls, Fmi2Slave):
    """Base of every element FMU (see the module docstring)."""

    VARIABLES: tuple[Var, ...] = ()
    DEFAULT_STOP = 1.0
    DEFAULT_STEP = 1e-3
    author = "drivetrain-fmu"
    license = "MIT"
    version = "0.1.0"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        if self.resources and not order_native_exit(self.resources, type(self).__name__):
            self.log(f"binaries/linux64/{type(self).__name__}.so not found next to the resources "
                     f"{self.resources}: its exit-order fix (fmus.native_exit) is not applied",
                     Fmi2Status.warning)
        self.default_experiment = DefaultExperiment(0.0, self.DEFAULT_STOP, self.DEFAULT_STEP)
        self.state = None
        self.start_time = 0.0
        self._terminated = False
        self._model_parameters = None
        self._feedthrough_cache = (None, None, None)     # (state token, inputs, feedthrough values)
        self._state_token = 0
        self._inputs = [v for v in self.VARIABLES if v.causality == INPUT]
        self._read_inputs = values_getter([v.name for v in self._inputs])
        self._set_checked_inputs(self._inputs)
        self._stored = [v for v in self.VARIABLES if v.causality != OUTPUT or not v.depends]
        # the outputs refresh_outputs() sets from the state (an element may keep its own,
        # shorter list of them: these are the declared ones)
        self._declared_state_outputs = [v.name for v in self.VARIABLES if v.causality == OUTPUT and not v.depends]
        self._read_declared_state_outputs = values_getter(self._declared_state_outputs)
        for var in self.VARIABLES:
            if var.causality == OUTPUT and var.depends:
                self.register_variable(self._fmi_variable(var, getter=self._feedthrough_getter(var.name)))
            else:
                setattr(self, var.name, var.start if var.causality != OUTPUT else _ZERO[var.type])
                self.register_variable(self._fmi_variable(var))
        # value reference -> (name, feedthrough?) per type, for the FMI get calls below,
        # and value reference -> name of the settable variables (parameters, inputs) per type
        table = {v.name: v for v in self.VARIABLES}
        self._access = {kind: {} for kind in _FMI_TYPES}
        self._get_plans = {kind: PlanCache(functools.partial(_get_plan, self._access[kind], kind))
                           for kind in _FMI_TYPES}
        self._settable = {kind: {} for kind in _FMI_TYPES}
        parameters = [v.name for v in self.VARIABLES if v.causality == PARAMETER]
        self._parameters = set(parameters)
        self._parameter_values = values_getter(parameters)
        self._stored_names = {v.name for v in self._stored}
        for vr, registered in self.vars.items():
            var = table[registered.name]
            self._access[var.type][vr] = (var.name, var.causality == OUTPUT and bool(var.depends))
            if var.causality != OUTPUT:
                self._settable[var.type][vr] = var.name

    @staticmethod
    def _fmi_variable(var: Var, getter=None):
        discrete = var.type != REAL
        if var.causality == PARAMETER:
            kw = dict(causality=Fmi2Causality.parameter, variability=Fmi2Variability.fixed,
                      initial=Fmi2Initial.exact)
        elif var.causality == INPUT:
            kw = dict(causality=Fmi2Causality.input,
                      variability=Fmi2Variability.discrete if discrete else Fmi2Variability.continuous)
        else:
            kw = dict(causality=Fmi2Causality.output,
                      variability=Fmi2Variability.discrete if discrete else Fmi2Variability.continuous,
                      initial=Fmi2Initial.calculated)
        return _FMI_TYPES[var.type](var.name, description=var.description, getter=getter, **kw)

    # ------------------------------------------------------------------ element API
    def family_counts(self) -> dict:
        """The value of each count parameter of the declared families (fmus.variables.Family)
        that decides which of their members are checked: the value set.  An element whose
        count may be outside its range (reported by its own check) says which value stands
        in for it then."""
        return {name: getattr(self, name) for name in count_parameters(self.VARIABLES)}

    def checked_variables(self):
        """Parameters and inputs whose range is checked: those in use at the counts of
        ``family_counts()`` (fmus.variables.in_use; all of an element without families)."""
        counts = self.family_counts()
        return [v for v in self.VARIABLES if v.causality != OUTPUT and in_use(counts, v)]

    def cross_check(self) -> list[str]:
        """Messages for parameter relations that single ranges cannot express."""
        return []

    def initial_state(self):
        raise NotImplementedError

    def advance(self, t: float, h: float):
        raise NotImplementedError

    def refresh_outputs(self):
        """Set the state outputs from ``self.state``.  It may return the values it set (a
        sequence): doStep then screens those for a non-finite value instead of reading every
        declared state output back; they must then include every state output that can
        change (the others keep values that were finite when set).  None: doStep reads them."""
        raise NotImplementedError

    def feedthrough_outputs(self) -> dict:
        return {}

    def advance_at(self, t: float, h: float, inputs):
        """``advance(t, h)`` given the inputs doStep has just read and checked (the tuple
        ``_read_inputs`` gives); an element that needs them overrides this to use them."""
        return self.advance(t, h)

    def feedthrough_at(self, inputs) -> dict:
        """``feedthrough_outputs()`` given the inputs just read (as for :meth:`advance_at`)."""
        return self.feedthrough_outputs()

    def nonfinite_cause(self) -> str:
        """Words on why a feedthrough output is not finite at the inputs set now (appended
        to the failing get's message; empty: the output and the inputs say it)."""
        return ""

    def encode_state(self, state):
        return state.to_json()

    def decode_state(self, data):
        raise NotImplementedError

    # ------------------------------------------------------------------ FMI
    @fmi_entry("fmi2ExitInitializationMode")
    def exit_initialization_mode(self):
        self.state = self._build_model()
        self._state_token += 1
        self.refresh_outputs()

    @fmi_entry("fmi2Terminate")
    def terminate(self):
        self._terminated = True

    def parameter_problems(self) -> list[str]:
        """Why the parameters set now cannot describe this element, one message each: a
        value outside its declared range, then a broken relation (``cross_check``)."""
        problems = [self.checked_variable_problem(v) for v in self.checked_variables()
                    if v.causality == PARAMETER]
        return [p for p in problems if p] + self.cross_check()

    def _build_model(self):
        """Check the parameters, build the element's model from them (``initial_state``
        does) and return its initial state; the parameters are fixed from here on."""
        problems = self.parameter_problems()
        if problems:
            raise ParameterError("invalid parameters: " + "; ".join(problems))
        self._set_checked_inputs([v for v in self.checked_variables() if v.causality == INPUT])
        state = self.initial_state()
        self._model_parameters = self._parameter_values(self)
        return state

    def _raise_to_host(self, kind: type, message: str):
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
        pending = [entry.msg for entry in self.log_queue]
        self.log_queue.clear()
        for obj in (self, type(self), self.log_queue):
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))
        error = kind("; ".join(pending + [message]))
        error.raised_to_host = True
        raise error from None

    def checked_variable_problem(self, var: Var):
        return var.violation(getattr(self, var.name))

    def _set_checked_inputs(self, checked):
        """Inputs whose range doStep checks; ``_bounded_inputs`` holds (position in
        ``_read_inputs``, lo, hi) of those with a finite bound."""
        self._checked_inputs = checked
        position = {v.name: i for i, v in enumerate(self._inputs)}
        self._bounded_inputs = [(position[v.name], *v.bounds()) for v in checked
                                if v.low is not None or v.high is not None]

    def _input_problem(self, values) -> str | None:
        """None when every checked input is finite and within its range.  The screen is
        cheap: the sum of the inputs is finite only if each one is (an overflowing sum of
        finite values only sends it to the exact check, :meth:`_checked_input_problem`),
        then the bounded ones."""
        if _all_finite_screen(values):
            for i, lo, hi in self._bounded_inputs:
                if not lo <= values[i] <= hi:
                    return self._checked_input_problem()
            return None
        return self._checked_input_problem()

    def _checked_input_problem(self) -> str | None:
        """The first checked input that is not finite or outside its range, in words, or None."""
        for var in self._checked_inputs:
            problem = var.violation(getattr(self, var.name))
            if problem is not None:
                return problem
        return None

    @fmi_step_entry("fmi2DoStep")
    @cython.locals(t=cython.double, h=cython.double)
    def do_step(self, current_time: float, step_size: float) -> bool:
        t, h = current_time, step_size
        previous = self.state
        # x - x == 0 exactly when x is finite: 0 < h < inf and t finite
        if previous is None or self._terminated or not (0.0 < h and h - h == 0.0 and t - t == 0.0):
            return self._refuse(self._step_call_problem(previous is not None, current_time, step_size))
        inputs = self._read_inputs(self)
        problem = self._input_problem(inputs) if inputs else None     # a source has no inputs
        if problem is not None:
            return self._refuse(f"input {problem}; step from t = {current_time} refused")
        try:
            new_state = self.advance_at(current_time, step_size, inputs)
        except (SolverError, ArithmeticError, ValueError) as exc:     # a step the model cannot take
            return self._refuse(f"step from t = {current_time} with h = {step_size} refused: {exc}")
        except Exception as exc:  # a defect, not bad input: still refuse the step, never go fatal
            return self._refuse(f"step from t = {current_time} with h = {step_size} refused by an "
                                f"internal error {type(exc).__name__}: {exc}")
        try:       # the step is taken when _state_token moves: until then it can be undone
            self.state = new_state
            values = self.refresh_outputs()
            if values is None:
                values = self._read_declared_state_outputs(self)
            if not _all_finite_screen(values):
                problem = _nonfinite(self._declared_state_outputs, self._read_declared_state_outputs(self))
                if problem is not None:      # refused: state and outputs (functions of it) as before
                    repeat_until_done(self._put_back, previous)
                    return self._refuse(f"step from t = {current_time} with h = {step_size} refused: output "
                                        f"{problem} (the step leaves the range this element can represent)")
            if self.log_queue:
                take_pending_signals()
        except BaseException:                # an interrupt (or a defect): the step is undone
            repeat_until_done(self._put_back, previous)
            raise
        self._state_token += 1
        return True

    def _put_back(self, state):
        """The state ``state`` of the last communication point again, with its outputs (a
        refused or interrupted step; the feedthrough cache, of that state, stays valid)."""
        self.state = state
        self.refresh_outputs()

    def _refuse(self, message: str) -> bool:
        self.log(message, Fmi2Status.error)
        take_pending_signals()
        return False

    def _feedthrough_values(self) -> dict:
        """The feedthrough outputs at the inputs currently set (computed once per state and
        set of inputs); before initialization every one is 0."""
        if self.state is None:
            return {v.name: _ZERO[v.type] for v in self.VARIABLES if v.causality == OUTPUT and v.depends}
        token, inputs = self._state_token, self._read_inputs(self)
        cached_token, cached_inputs, values = self._feedthrough_cache
        if token != cached_token or inputs != cached_inputs:
            values = self.feedthrough_at(inputs)
            if not _all_finite_screen(values.values()):
                self._screen_feedthrough(values, inputs)
            self._feedthrough_cache = (token, inputs, values)
        return values

    def _screen_feedthrough(self, values: dict, inputs):
        """ArithmeticError naming the first non-finite feedthrough value of ``values``
        (computed at ``inputs``), with the element's words on why (``nonfinite_cause``)."""
        problem = _nonfinite(list(values), list(values.values()))
        if problem is not None:
            cause = self.nonfinite_cause()
            raise ArithmeticError(f"output {problem} at the inputs set now (inputs "
                                  f"{dict(zip((v.name for v in self._inputs), inputs))})"
                                  + (f": {cause}" if cause else ""))

    def _feedthrough_getter(self, name):
        return lambda: self._feedthrough_values()[name]

    def _get_values(self, vrs, kind: str):
        """fmi2Get<kind>: pythonfmu's own loop type-checks every variable and re-evaluates
        the feedthrough key per variable; here the feedthrough outputs are looked up once,
        and a list of value references asked before is read by a reader made for it."""
        return self._get_plans[kind][tuple(vrs)](self)

    def _set_values(self, vrs, values, kind: str):
        """fmi2Set<kind>: pythonfmu's own loop calls one setter closure per variable; here
        the names are looked up in one table, which also refuses outputs."""
        settable = self._settable[kind]
        try:
            names = [settable[vr] for vr in vrs]
        except KeyError as missing:
            raise self._not_settable(missing.args[0], kind) from None
        if self.state is not None and not self._parameters.isdisjoint(names):
            fixed = [name for name in names if name in self._parameters]
            raise StateError(f"parameter {', '.join(fixed)} is fixed: it can be set only before "
                             "fmi2ExitInitializationMode (or after fmi2Reset)")
        self.__dict__.update(zip(names, values))

    def _not_settable(self, vr, kind: str) -> TypeError:
        """The error of a set of value reference ``vr`` that is no settable ``kind``."""
        var = next((v for v in self.VARIABLES if vr in self.vars and v.name == self.vars[vr].name), None)
        what = "" if var is None else \
            f": {var.name} is {'an' if var.type == INTEGER else 'a'} {var.type} {var.causality}"
        return TypeError(f"variable with valueReference={vr} is not a settable "
                         f"{kind} (a parameter or input of this type){what}")


    @fmi_entry("fmi2GetFMUstate")
    def _get_fmu_state(self):
        from . import code_fingerprint      # fmus imports this module: looked up when called
        return {
            "element": type(self).__name__,
            "code": code_fingerprint()[:12],
            "variables": {v.name: getattr(self, v.name) for v in self._stored},
            "state": None if self.state is None else self.encode_state(self.state),
        }

    def _state_problem(self, saved) -> str | None:
        """Why ``saved`` is not a state of this element, in words naming the part that is
        wrong, or None.  The variables must be this element's, of their declared types."""
        name = type(self).__name__
        if not isinstance(saved, dict):
            return f"not an FMU state: {saved!r}"
        if "invalid" in saved:
            return saved["invalid"]
        if saved.get("element") != name:
            return f"a state of {saved.get('element', 'another FMU')!r} cannot be set into a {name}"
        missing = [key for key in ("variables", "state") if key not in saved]
        if missing or not isinstance(saved["variables"], dict):
            return (f"the {name} state lacks its {' and '.join(missing) or 'variables'} record "
                    f"(keys {sorted(saved)}): it was not written by this FMU's fmi2GetFMUstate")
        unknown = saved["variables"].keys() - self._stored_names
        if unknown:
            return f"the state holds variables {sorted(unknown)} that {name} does not have"
        table = {v.name: v for v in self._stored}
        for key, value in saved["variables"].items():
            kind = table[key].type
            if not isinstance(value, int if kind in (INTEGER, BOOLEAN) else (int, float)):
                return f"the state's variable {key} = {value!r} is not of type {kind}"
        return None

    def _version_note(self, saved) -> str:
        from . import code_fingerprint
        written = saved.get("code")
        here = code_fingerprint()[:12]
        if written is None:
            return "it was written by another version of the element code or altered"
        if written != here:
            return f"it was written by element code {written}, this FMU runs {here}: set states of the same build only"
        return "it was altered after fmi2GetFMUstate"

    @staticmethod
    def _fmu_state_from_bytes(data: bytes):
        """fmi2DeSerializeFMUstate.  pythonfmu calls it on the class, where an exception
        could not be raised safely: bytes that are no state become a record of why, which
        fmi2SetFMUstate then refuses with that reason."""
        try:
            return _static_call(_state_from_bytes, data)
        except (UnicodeDecodeError, ValueError) as exc:
            return {"invalid": f"the serialized FMU state is not one this FMU wrote ({exc})"}

    @staticmethod
    def _fmu_state_to_bytes(state) -> bytes:
        """fmi2SerializeFMUstate (pythonfmu's, with interrupts handled: :func:`_static_call`)."""
        return _static_call(_state_to_bytes, state)

    @fmi_entry("fmi2SetFMUstate")
    def _set_fmu_state(self, saved):
        """Restore the variables, the model built from the restored parameters (rebuilt when
        they differ from those of the current model) and the solver state.  A state that
        cannot be restored leaves the instance as it was."""
        problem = self._state_problem(saved)
        if problem is not None:
            raise StateError(problem)
        before = dict(self.__dict__)
        try:
            self.__dict__.update(saved["variables"])
            if saved["state"] is None:
                self.state = None
            else:
                if self._model_parameters != self._parameter_values(self):
                    self._build_model()
                try:
                    self.state = self.decode_state(saved["state"])
                    self.refresh_outputs()
                except (TypeError, ValueError, KeyError, IndexError, AttributeError, ArithmeticError) as exc:
                    raise StateError(f"the solver state {saved['state']!r} of this {type(self).__name__} state "
                                     f"cannot be restored ({type(exc).__name__}: {exc}): "
                                     f"{self._version_note(saved)}") from None
                problem = _nonfinite(self._declared_state_outputs, self._read_declared_state_outputs(self))
                if problem is not None:
                    raise StateError(f"the solver state {saved['state']!r} gives output {problem}: "
                                     f"{self._version_note(saved)}")
        except BaseException:       # an error, or an interrupt (the call is then run again)
            self.__dict__.clear()
            self.__dict__.update(before)
            raise
        self._state_token += 1


def _state_from_bytes(data) -> dict:
    return json.loads(bytes(data).decode("utf-8"))


def _state_to_bytes(state) -> bytes:
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


class StatelessElement(ElementSlave):
    """An element without state: its outputs are functions of its parameters and inputs
    (feedthrough), so a step only moves time (compliances, speed-dependent sources)."""

    def initial_state(self):
        return ()

    def encode_state(self, state):
        return []

    def decode_state(self, data):
        return ()

    def advance(self, t, h):
        return ()

    def refresh_outputs(self):
        pass


class ClockedSource(ElementSlave):
    """A source whose outputs are functions of time: its state is the time of the last
    communication point (from fmi2SetupExperiment's start time on)."""

    def initial_state(self):
        return self.start_time

    def encode_state(self, state):
        return state

    def decode_state(self, data):
        return float(data)

    def advance(self, t, h):
        return self.advance_at(t, h, ())

    def advance_at(self, t, h, inputs):
        """The time of the next communication point (a source has no inputs: ``inputs`` is
        the empty tuple); a subclass with more state overrides this, not ``advance``."""
        return t + h

