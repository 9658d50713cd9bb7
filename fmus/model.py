"""The model protocol: an element as plain physics, with nothing of FMI in it.

A model is what an element FMU (:mod:`fmus.shell` around it) and a system FMU
(``systems/composite_slave.py``: the same shell around a system model driving many of them
in one process) both drive.  Its physics lives
in :mod:`solvers`; the element adds its law in a few lines.

To implement a new element, subclass :class:`Model` and:

1. Declare ``VARIABLES``: records of :mod:`fmus.variables` (parameters, inputs, outputs with
   their units, ranges and the inputs each output depends on without delay).  Every declared
   variable is an attribute of the model of that name: parameters and inputs hold what the
   driver set (a parameter is fixed once the model is initialized), outputs what the model
   computed.  Give ``description`` (one line), ``DEFAULT_STOP`` and ``DEFAULT_STEP``.
2. Optionally implement ``cross_check()``: one message per broken relation between parameters
   that single ranges cannot express (``mu_k <= mu_s``); each message names the values and
   what is allowed.  An element with counted families (:class:`fmus.variables.Family`) whose
   count may lie outside its range says in ``family_counts()`` which count stands in for it.
3. Implement ``initial_state()``: the state at the start, from the parameters (checked by
   then); build the solver objects here.  A state is immutable: a step returns a new one.
4. Optionally implement ``prepare(inputs)``: what both the step and the feedthrough outputs
   need of ``inputs`` (the declared inputs' values, in declaration order) and the parameters
   alone, not of the state; by default the inputs themselves.  It is made once per set of
   inputs (:meth:`Model.prepared`: the inputs compared by value, so that held inputs keep it).
   A member's external torque is two inputs (``tau_1`` and ``tau_1_2``: declared with
   :func:`fmus.variables.with_second_torques`); the element takes their sums only through
   :meth:`Model.torque_picker`, never the first input alone.
5. Implement ``step(t, h, prepared)``: the state at t + h, the inputs held.  It must not
   change the model: to refuse a step (an input the physics cannot take, a step size it
   cannot use), raise :class:`solvers.contract.SolverError`, ``ValueError`` or
   ``ArithmeticError`` with a message naming the cause; the model keeps its state.  While
   ``self.fresh`` is true the feedthrough has run at this state and these inputs: what it
   kept on the model (a stick/slip decision) may be reused.
6. Implement ``outputs()``: set the outputs that are functions of ``self.state`` alone.  It
   may return every value it set that can change (a sequence): those are screened for a
   non-finite value instead of reading every declared one back.
7. If some outputs depend on the inputs without delay (declared ``depends``), implement
   ``feedthrough(prepared)``: a dict of them at the current state and inputs (computed once
   until the state or an input changes: ``fresh``, the one dirty flag); optionally
   ``nonfinite_cause()``: words on why one is not finite.
8. ``encode_state(state)`` / ``decode_state(data)``: the state as JSON-friendly data and
   back (the default encodes with the state's ``to_json``).
9. Set ``stateless = True`` when the model has no state (its outputs are functions of its
   parameters and inputs): its step returns ``()`` or refuses a step size; a system need
   not step it at a step size it has accepted (``accepts_step``).

Nothing else: no FMI, no caches, no plans.  Driving a model (what :mod:`fmus.shell` and the
system FMU do, never the element) is the methods below, which are also the shell protocol
(:mod:`fmus.shell`'s docstring): write parameters and inputs as attributes (or
:meth:`Model.assign`, or a :meth:`Model.writer`), :meth:`Model.initialize`,
:meth:`Model.take_step` (and :meth:`Model.undo_step`), :meth:`Model.update_feedthrough` (the
feedthrough outputs into their attributes; a :meth:`Model.reader` does it where needed),
:meth:`Model.record` / :meth:`Model.restore` (a state and its values).
"""
from __future__ import annotations

from math import isfinite
from operator import attrgetter, itemgetter

from drivetrain_fmu.solvers.contract import SolverError

from .variables import BOOLEAN, INPUT, INTEGER, OUTPUT, PARAMETER, REAL, Var, count_parameters, in_use

ZERO = {REAL: 0.0, INTEGER: 0, BOOLEAN: False}


class ParameterError(ValueError):
    """Parameters that cannot describe a physical element."""


class StateError(ValueError):
    """A saved state that cannot be set into this model."""


# The finiteness screen, written where values are checked (nonfinite, input_problem, a
# step's outputs, the feedthrough's): ``isfinite(sum(values, 0.0))`` is true when the sum of
# the values (in order, from 0.0) is finite, hence every value is; false when one is not, or
# when the sum of finite values overflows: the exact check then decides.  (From CPython 3.12
# on ``sum`` compensates its rounding: a sum that would overflow added in order may then be
# finite, which is right as well: every value is finite.)


def nonfinite(names, values) -> str | None:
    """'name = value is not finite' for the first non-finite value, else None (screened by
    the sum, the finiteness screen above; an overflowing sum falls back to the check)."""
    if isfinite(sum(values, 0.0)):
        return None
    return next((f"{name} = {value!r} is not finite" for name, value in zip(names, values)
                 if not isfinite(value)), None)


def values_getter(names):
    """obj -> tuple of the attributes ``names`` (operator.attrgetter, always a tuple)."""
    if len(names) == 1:
        single = attrgetter(names[0])
        return lambda obj: (single(obj),)
    return attrgetter(*names) if names else lambda obj: ()


def items_getter(positions):
    """sequence -> tuple of its items at ``positions`` (operator.itemgetter, always a tuple)."""
    if len(positions) == 1:
        single = itemgetter(positions[0])
        return lambda seq: (single(seq),)
    return itemgetter(*positions) if positions else lambda seq: ()


class Model:
    """Base of every element model (the numbered contract: module docstring)."""

    # what every step and feedthrough reads and writes, as slots: found by the class's (cached)
    # look-up alone, where an attribute in the instance dict also needs that dict's; the
    # declared variables and everything else stay in the instance dict (``vars(model)``)
    __slots__ = ("__dict__", "state", "fresh", "_prepared", "_prepared_inputs", "_before_step")
    _SLOTS = tuple(name for name in __slots__ if name != "__dict__")     # what restore rolls back

    VARIABLES: tuple[Var, ...] = ()
    description = ""
    DEFAULT_STOP = 1.0
    DEFAULT_STEP = 1e-3
    stateless = False

    def __init__(self, resources: str | None = None):
        variables = self.VARIABLES
        for var in variables:
            setattr(self, var.name, var.start if var.causality != OUTPUT else ZERO[var.type])
        #: the state of the last communication point; None before initialization
        self.state = None
        #: the start time of the experiment (a model with a law of time needs it)
        self.start_time = 0.0
        #: the prepared record and the inputs it was made at; None: it must be made again
        #: whatever the inputs (parameters or values set by assign or restore)
        self._prepared = None
        self._prepared_inputs = None
        #: True while the feedthrough outputs (and what the feedthrough kept on the model) are
        #: those of the current state and inputs (Reference-FMUs' isDirtyValues, negated)
        self.fresh = False
        self.input_variables = [v for v in variables if v.causality == INPUT]
        self.read_inputs = values_getter([v.name for v in self.input_variables])
        self.set_checked_inputs(self.input_variables)
        self.parameter_names = frozenset(v.name for v in variables if v.causality == PARAMETER)
        self._read_parameters = values_getter([v.name for v in variables if v.causality == PARAMETER])
        self._initial_parameters = None
        self.feedthrough_names = [v.name for v in variables if v.causality == OUTPUT and v.depends]
        #: the variables a saved state holds: all but the feedthrough outputs (computed again)
        self.stored_variables = [v for v in variables if v.causality != OUTPUT or not v.depends]
        self._state_output_names = [v.name for v in variables if v.causality == OUTPUT and not v.depends]
        self._read_state_outputs = values_getter(self._state_output_names)
        self._before_step = None

    # ------------------------------------------------------------------ the element's part
    def family_counts(self) -> dict:
        """The value of each count parameter of the declared families (fmus.variables.Family)
        that decides which of their members are checked: the value set."""
        return {name: getattr(self, name) for name in count_parameters(self.VARIABLES)}

    def cross_check(self) -> list[str]:
        """Messages for parameter relations that single ranges cannot express."""
        return []

    def initial_state(self):
        raise NotImplementedError

    def prepare(self, inputs):
        return inputs

    def step(self, t: float, h: float, prepared):
        raise NotImplementedError

    def outputs(self):
        raise NotImplementedError

    def feedthrough(self, prepared) -> dict:
        return {}

    def nonfinite_cause(self) -> str:
        """Words on why a feedthrough output is not finite at the inputs set now (appended
        to the failing get's message; empty: the output and the inputs say it)."""
        return ""

    def encode_state(self, state):
        return state.to_json()

    def decode_state(self, data):
        raise NotImplementedError

    def torque_picker(self, firsts):
        """inputs -> the external torques on the members whose first torque inputs are named
        ``firsts`` (a tuple, in that order), each ``first + second`` of its two connections
        (``Var.adds_to``): the sum a master would form of the two, rounded once, so that
        splitting a torque between the inputs gives what it gives on one.  ``inputs`` as
        ``read_inputs`` gives them; a first without a declared second is a KeyError."""
        position = {v.name: i for i, v in enumerate(self.input_variables)}
        second = {v.adds_to: position[v.name] for v in self.input_variables if v.adds_to}
        pairs = [(position[name], second[name]) for name in firsts]
        return lambda inputs: tuple([inputs[i] + inputs[j] for i, j in pairs])

    def accepts_step(self, h: float) -> bool:
        """A stateless model: whether it takes steps of ``h`` (its step refuses no other way)."""
        try:
            self.step(0.0, h, None)
        except (SolverError, ArithmeticError, ValueError):
            return False
        return True

    # ------------------------------------------------------------------ driving a model
    def interface(self):
        """The variables a driver sees: the declared ones."""
        return self.VARIABLES

    def reader(self, names, convert):
        """model -> list of the values of the variables ``names``, each as ``convert``
        (float, int, bool); feedthrough outputs among them are brought up to date first
        (:meth:`update_feedthrough`).  It holds no model."""
        values = values_getter(names)
        if self.feedthrough_names and not set(self.feedthrough_names).isdisjoint(names):
            def read_through(model):
                model.update_feedthrough()
                return list(map(convert, values(model)))
            return read_through
        return lambda model: list(map(convert, values(model)))

    def writer(self, names):
        """(model, values) -> None writing the parameters and inputs ``names``."""
        def write(model, values):
            model.__dict__.update(zip(names, values))
        return write

    def assign(self, values: dict):
        """Write parameters and inputs (name -> value)."""
        for name, value in values.items():
            setattr(self, name, value)
        self._prepared_inputs = None

    def checked_variables(self):
        """Parameters and inputs whose range is checked: those in use at the counts of
        ``family_counts()`` (fmus.variables.in_use; all of an element without families)."""
        counts = self.family_counts()
        return [v for v in self.VARIABLES if v.causality != OUTPUT and in_use(counts, v)]

    def parameter_problems(self) -> list[str]:
        """Why the parameters set now cannot describe this element, one message each: a
        value outside its declared range, then a broken relation (``cross_check``)."""
        problems = [v.violation(getattr(self, v.name)) for v in self.checked_variables()
                    if v.causality == PARAMETER]
        return [p for p in problems if p] + self.cross_check()

    def initialize(self):
        """Check the parameters, build the initial state and its outputs; the parameters
        are fixed from here on."""
        self.state = self._build()
        self._prepared_inputs, self.fresh = None, False
        self.outputs()

    def _build(self):
        """Check the parameters (ParameterError naming every problem) and build the model
        from them (``initial_state`` does); its initial state."""
        problems = self.parameter_problems()
        if problems:
            raise ParameterError("invalid parameters: " + "; ".join(problems))
        self.set_checked_inputs([v for v in self.checked_variables() if v.causality == INPUT])
        state = self.initial_state()
        self._initial_parameters = self._read_parameters(self)
        return state

    def set_checked_inputs(self, checked):
        """Inputs whose range a step checks; ``_bounded_inputs`` holds (position in
        ``read_inputs``, lo, hi) of those with a finite bound."""
        self.checked_inputs = checked
        position = {v.name: i for i, v in enumerate(self.input_variables)}
        self._bounded_inputs = [(position[v.name], *v.bounds()) for v in checked
                                if v.low is not None or v.high is not None]

    def input_problem(self, values) -> str | None:
        """None when every checked input is finite and within its range (``values``: the
        inputs as ``read_inputs`` gives them).  The screen is cheap: the sum of the inputs is
        finite only if each one is (an overflowing sum of finite values only sends it to the
        exact check), then the bounded ones."""
        if isfinite(sum(values, 0.0)):
            for i, lo, hi in self._bounded_inputs:
                if not lo <= values[i] <= hi:
                    return self._checked_input_problem()
            return None
        return self._checked_input_problem()

    def _checked_input_problem(self) -> str | None:
        for var in self.checked_inputs:
            problem = var.violation(getattr(self, var.name))
            if problem is not None:
                return problem
        return None

    def prepared(self, inputs=None):
        """``prepare`` at the current inputs (``inputs``: those ``read_inputs`` gives, if read
        already), made again when an input changes (compared by value: an input may be
        written as an attribute) or when none is (``_prepared_inputs`` None after parameters
        or values were set); a new record makes ``fresh`` false."""
        if inputs is None:
            inputs = self.read_inputs(self)
        return self._prepared if inputs == self._prepared_inputs else self._prepare_anew(inputs)

    def _prepare_anew(self, inputs):
        """``prepare`` at ``inputs`` (which differ from those of the record kept), kept with
        them; ``fresh`` false.  The callers compare the inputs once, here not again."""
        self._prepared = prepared = self.prepare(inputs)
        self._prepared_inputs = inputs
        self.fresh = False
        return prepared

    def update_feedthrough(self):
        """The feedthrough outputs at the current state and inputs, into their attributes
        (before initialization they stay 0); ArithmeticError naming a non-finite one."""
        if self.state is None:
            return
        inputs = self.read_inputs(self)
        if inputs == self._prepared_inputs:
            if self.fresh:
                return
            prepared = self._prepared
        else:
            prepared = self._prepare_anew(inputs)
        values = self.feedthrough(prepared)
        if not isfinite(sum(values.values(), 0.0)):
            self._screen_feedthrough(values)
        self.__dict__.update(values)
        self.fresh = True

    def _screen_feedthrough(self, values: dict):
        problem = nonfinite(list(values), list(values.values()))
        if problem is not None:
            cause = self.nonfinite_cause()
            inputs = dict(zip((v.name for v in self.input_variables), self.read_inputs(self)))
            raise ArithmeticError(f"output {problem} at the inputs set now (inputs {inputs})"
                                  + (f": {cause}" if cause else ""))

    def take_step(self, t: float, h: float) -> str | None:
        """Step from t to t + h with the inputs held: None when taken, else why it is refused
        (the model then keeps the state of t).  The caller has checked that t and h are
        finite, h > 0.  Undone when interrupted (an exception that is no ``Exception``)."""
        inputs = self.read_inputs(self)
        problem = self.input_problem(inputs) if inputs else None      # a source has no inputs
        if problem is not None:
            return f"input {problem}; step from t = {t} refused"
        try:
            prepared = self._prepared if inputs == self._prepared_inputs else self._prepare_anew(inputs)
            new_state = self.step(t, h, prepared)
        except (SolverError, ArithmeticError, ValueError) as exc:     # a step the model cannot take
            return f"step from t = {t} with h = {h} refused: {exc}"
        except Exception as exc:  # a defect, not bad input: still refuse the step, never go fatal
            return f"step from t = {t} with h = {h} refused by an internal error {type(exc).__name__}: {exc}"
        previous = self._before_step = self.state
        try:
            self.state = new_state
            self.fresh = False
            values = self.outputs()
            if values is None:
                values = self._read_state_outputs(self)
            if not isfinite(sum(values, 0.0)):
                problem = nonfinite(self._state_output_names, self._read_state_outputs(self))
                if problem is not None:      # refused: state and outputs (functions of it) as before
                    self.put_back(previous)
                    return (f"step from t = {t} with h = {h} refused: output {problem} "
                            "(the step leaves the range this element can represent)")
        except BaseException:                # an interrupt (or a defect): the step is undone
            self.put_back(previous)
            raise
        return None

    def undo_step(self):
        """The state before the last step taken, with its outputs (a step the driver undoes)."""
        self.put_back(self._before_step)

    def put_back(self, state):
        """The state ``state`` of an earlier communication point again, with its outputs (a
        refused or interrupted step); repeated until done when interrupted."""
        while True:
            try:
                self.state = state
                self.fresh = False
                if state is not None:
                    self.outputs()
                return
            except Exception:
                raise
            except BaseException:
                continue

    def record(self) -> dict:
        """The variables and the encoded state: what :meth:`restore` sets again."""
        return {"variables": {v.name: getattr(self, v.name) for v in self.stored_variables},
                "state": None if self.state is None else self.encode_state(self.state)}

    def record_problem(self, saved: dict, name: str) -> str | None:
        """Why ``saved`` (a record of a ``name``) cannot be set into this model, or None."""
        missing = [key for key in ("variables", "state") if key not in saved]
        if missing or not isinstance(saved["variables"], dict):
            return (f"the {name} state lacks its {' and '.join(missing) or 'variables'} record "
                    f"(keys {sorted(saved)}): it was not written by this FMU's fmi2GetFMUstate")
        table = {v.name: v for v in self.stored_variables}
        unknown = saved["variables"].keys() - table.keys()
        if unknown:
            return f"the state holds variables {sorted(unknown)} that {name} does not have"
        for key, value in saved["variables"].items():
            kind = table[key].type
            if not isinstance(value, int if kind in (INTEGER, BOOLEAN) else (int, float)):
                return f"the state's variable {key} = {value!r} is not of type {kind}"
        return None

    def restore(self, saved: dict, why_not_restorable):
        """Set a record (checked by :meth:`record_problem`): the variables, the solver objects
        built again when the parameters differ from those they were built from, the state.
        ``why_not_restorable()`` words the reason a state that fails was not this code's.
        A record that cannot be set leaves the model as it was (also when interrupted)."""
        before, slots = dict(self.__dict__), [getattr(self, name) for name in Model._SLOTS]
        try:
            self.__dict__.update(saved["variables"])
            self._prepared_inputs, self.fresh = None, False
            if saved["state"] is None:
                self.state = None
                self.__dict__.update((v.name, ZERO[v.type]) for v in self.VARIABLES
                                     if v.causality == OUTPUT and v.depends)
                return
            if self._initial_parameters != self._read_parameters(self):
                self._build()
            try:
                self.state = self.decode_state(saved["state"])
                self.outputs()
            except (TypeError, ValueError, KeyError, IndexError, AttributeError, ArithmeticError) as exc:
                raise StateError(f"the solver state {saved['state']!r} of this {type(self).__name__} state "
                                 f"cannot be restored ({type(exc).__name__}: {exc}): "
                                 f"{why_not_restorable()}") from None
            problem = nonfinite(self._state_output_names, self._read_state_outputs(self))
            if problem is not None:
                raise StateError(f"the solver state {saved['state']!r} gives output {problem}: "
                                 f"{why_not_restorable()}")
        except BaseException:       # an error, or an interrupt (the call is then run again)
            self.__dict__.clear()
            self.__dict__.update(before)
            for name, value in zip(Model._SLOTS, slots):
                setattr(self, name, value)
            raise


class StatelessModel(Model):
    """A model without state: its outputs are functions of its parameters and inputs
    (feedthrough), so a step only moves time (compliances, speed-dependent sources)."""

    stateless = True

    def initial_state(self):
        return ()

    def encode_state(self, state):
        return []

    def decode_state(self, data):
        return ()

    def step(self, t, h, prepared):
        return ()

    def outputs(self):
        pass


class ClockedModel(Model):
    """A source whose outputs are functions of time: its state is the time of the last
    communication point (from the experiment's start time on)."""

    def initial_state(self):
        return self.start_time

    def encode_state(self, state):
        return state

    def decode_state(self, data):
        return float(data)

    def step(self, t, h, prepared):
        return t + h
