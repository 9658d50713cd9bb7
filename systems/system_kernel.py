"""The system FMU's inner loop over C doubles: the kernel of systems/algorithm.py.

systems/algorithm.py is the specification; this module runs its single-rate exchange and
steps (no multi-rate, no iterations) for :class:`systems.composite_slave.SystemModel`, written
by hand beside it.  Every connected variable, and every variable of an element with a kernel
(fmus/element_kernel.py, cimported: :data:`fmus.element_kernel.KERNELS`), is a slot of one C
array of doubles; a connection is a copy between two slots.  A kernel computes from the array
into it, with its reference's operations in its order: every float is the algorithm's bit for
bit.  Any other element is driven through its model (fmus.model) as the algorithm's port
does, its connected values moved between its attributes and the array.

Between calls a kernel element lives in the kernel and its model falls behind: the system
model reads its variables from the array (:meth:`SystemLoop.read`), has the models written
before anything else reads them (:meth:`SystemLoop.sync`: an FMU state taken, a step the
algorithm takes instead) and sets the kernels back when it undoes a step
(:meth:`SystemLoop.save`, :meth:`SystemLoop.restore`); it says when the models changed
(``stale``: they are read again) or the FMU's inputs were set into them (``inputs_set``).
What the kernel does not decide alone it leaves to the reference: an input out of its range,
a value that is not finite, a friction step that raises (the reference refuses the step or
raises, with its message) make it raise :class:`UseReference`, and the caller sets back what
it saved and runs the algorithm instead.

The loop is also the system FMU's :class:`fmus.element_kernel.Run`: the FMU's binary makes its
doSteps and gets on it without pythonfmu (fmus/fmi_kernel.py).  :meth:`SystemLoop.take` is
SystemModel.take_step for a step whose count of internal steps the model has decided before;
:meth:`SystemLoop.ready` is
SystemModel.reader's exchange and refresh, for a get of the kernels' variables;
:meth:`SystemLoop.write` is SystemModel.writer's write of the kernels' inputs.  Anything
else they leave to the model.

Uncompiled, this module refuses to be imported and the algorithm runs.
"""
from __future__ import annotations

import sys

import cython

if not cython.compiled:
    raise ImportError("systems.system_kernel runs compiled only: systems/algorithm.py runs instead")

from cython.cimports.libc.math import fabs  # noqa: E402
from cython.cimports.libc.stdlib import free  # noqa: E402
from cython.cimports.libc.string import memcpy  # noqa: E402

from cython.cimports.drivetrain_fmu.fmus.element_kernel import (BY_REFERENCE, TAKEN, ChainKernel, Element,  # noqa: E402
                                                                Run, allocated)
from drivetrain_fmu.fmus.element_kernel import kernel_of  # noqa: E402
from drivetrain_fmu.fmus.shell import repeat_until_done  # noqa: E402
from drivetrain_fmu.fmus.variables import INPUT, OUTPUT  # noqa: E402

from .algorithm import Refused, UseReference, stages  # noqa: E402


@cython.cclass
class ModelElement(Element):
    """An element without a kernel: its model, as systems.composite_slave.ModelPort drives it."""

    take_step = cython.declare(object)

    def __init__(self, label, model, slots):
        Element.__init__(self, label, model, slots)
        self.take_step = model.take_step

    @cython.cfunc
    @cython.exceptval(-1, check=False)
    @cython.locals(x=cython.p_double, t=cython.double, h=cython.double)
    @cython.returns(cython.int)
    def step(self, x, t, h):
        problem = self.take_step(t, h)
        if problem is not None:
            raise Refused(self.label, problem)
        return TAKEN

    @cython.cfunc
    @cython.exceptval(-1, check=False)
    @cython.locals(x=cython.p_double)
    @cython.returns(cython.int)
    def refresh(self, x):
        self.model.update_feedthrough()     # it knows whether its outputs are up to date (fresh)
        return TAKEN


@cython.cfunc
@cython.inline
@cython.locals(attributes=dict)
def _model_value(attributes, name, model, convert):
    """A model's variable ``name`` (of ``attributes``, its vars) as ``convert``, its feedthrough
    outputs brought up to date first (``model``; None: ``name`` is none of them)."""
    if model is not None and not model.fresh:
        model.update_feedthrough()
    value = attributes[name]
    return value if type(value) is convert else convert(value)


@cython.cclass
class LoopSave:
    """What SystemLoop.save keeps: ``data`` (the array, then each kernel's saved bytes and
    feedthrough flag), the ChainKernels' thermal parts and the loop's flags."""

    data = cython.declare(cython.p_char)
    extras = cython.declare(list)
    stale = cython.declare(cython.bint)
    inputs_set = cython.declare(cython.bint)

    def __init__(self, size: int):
        self.data = cython.cast(cython.p_char, allocated(size, "a saved system loop"))

    def __dealloc__(self):
        free(self.data)


@cython.cclass
class ReadPlan:
    """What SystemLoop.read reads, in order: ``entries`` as SystemLoop.plan describes them, the
    array slot of each (-1: a model's attribute) and the kernels whose feedthrough outputs
    are among them."""

    n = cython.declare(cython.int)
    slots = cython.declare(cython.p_int)
    entries = cython.declare(list)
    refreshed = cython.declare(list)

    def __init__(self, n: int):
        self.n, self.entries, self.refreshed = n, [], []
        self.slots = cython.cast(cython.p_int, allocated(n * cython.sizeof(cython.int), "a read plan"))

    def __dealloc__(self):
        free(self.slots)


@cython.cclass
class SystemLoop(Run):
    """The single-rate exchange and steps of ``algorithm`` (:class:`systems.algorithm.Algorithm`)
    over ``ports`` ({name: systems.composite_slave.ModelPort}) and ``connections``, base step
    ``step`` (module docstring).  A step that raises sets the algorithm's ``at`` to its (t, h).

    Between calls the kernel elements' values are the array's and the kernels' own, and their
    models are behind: :meth:`read` reads the array, :meth:`sync` writes the models, and
    :meth:`save` / :meth:`restore` keep and set back what the kernels hold.  The caller says
    what else changed: ``stale`` (the models were changed: read them all again) and
    ``inputs_set`` (the FMU's inputs were set into them)."""

    n_slots = cython.declare(cython.int)
    kernels = cython.declare(list)              # the Elements with a kernel
    with_extras = cython.declare(list)          # the ChainKernels (save keeps their thermal parts)
    saved_size = cython.declare(cython.Py_ssize_t)    # the bytes of a LoopSave
    steppers = cython.declare(list)             # the Elements stepped, in the ports' order
    by_model = cython.declare(dict)             # id(model) -> its Element
    by_name = cython.declare(dict)              # instance name -> its Element, of those with a kernel
    alone = cython.declare(cython.bint)         # every element has a kernel (no model moves in a step)
    spare = cython.declare(LoopSave)            # what a fast step saves (take)
    at_t = cython.declare(cython.double)        # the time of the internal step in progress (_steps)
    refreshes = cython.declare(list)            # per stage: the sources brought up to date
    gathers = cython.declare(list)              # per stage: (attributes, name, slot) read from models
    moves = cython.declare(cython.p_int)        # (source slot, target slot) of every link, stage by stage
    stage_moves = cython.declare(cython.int[3])   # stage s's links: moves[2 * stage_moves[s]:2 * stage_moves[s + 1]]
    scatters = cython.declare(list)             # per stage: (attributes, name, slot) written to models
    flushes = cython.declare(list)              # per stage: models whose inputs were written
    retargeted = cython.declare(list)           # per stage: the kernels whose inputs were moved
    stale = cython.declare(cython.bint, visibility="public")
    inputs_set = cython.declare(cython.bint, visibility="public")
    current = cython.declare(cython.bint)       # the models hold what the kernels hold
    algorithm = cython.declare(object)

    @cython.locals(element=Element)
    def __init__(self, ports: dict, connections, step: float, algorithm):
        connections = [tuple(c) for c in connections]
        program = stages(ports, connections)
        stepped = {name for name, port in ports.items() if not port.skips(step)}
        kinds = {name: kernel_of(port.model, type(port.model)) for name, port in ports.items()}
        slots = {}
        for name, port in ports.items():        # a kernel: every declared input and output
            if kinds[name] is not None:
                for v in port.model.VARIABLES:
                    if v.causality in (INPUT, OUTPUT):
                        slots[name, v.name] = len(slots)
        for c in connections:                   # a model: its connected variables
            for key in ((c[0], c[1]), (c[2], c[3])):
                slots.setdefault(key, len(slots))
        self.n_slots = len(slots)
        self.x = cython.cast(cython.p_double, allocated(len(slots) * cython.sizeof(cython.double),
                                                         "the system loop's values"))
        for i in range(len(slots)):
            self.x[i] = 0.0
        by_port = {}
        for name, port in ports.items():
            own = {key[1]: slot for key, slot in slots.items() if key[0] == name}
            by_port[name] = (kinds[name] or ModelElement)(port.label, port.model, own)
            by_port[name].connect({c[3] for c in connections if c[2] == name})
        self.kernels = [by_port[name] for name in ports if kinds[name] is not None]
        self.with_extras = [element for element in self.kernels if isinstance(element, ChainKernel)]
        self.saved_size = self.n_slots * cython.sizeof(cython.double)
        for element in self.kernels:
            self.saved_size += element.saved_size + 1
        self.by_model = {id(ports[name].model): by_port[name] for name in ports if kinds[name] is not None}
        self.by_name = {name: by_port[name] for name in ports if kinds[name] is not None}
        self.alone = len(self.kernels) == len(ports)
        self.spare = LoopSave(self.saved_size)
        self.steppers = [by_port[name] for name in ports if name in stepped]
        self.refreshes, self.gathers, self.scatters, self.flushes, self.retargeted = [], [], [], [], []
        self.moves = cython.cast(cython.p_int, allocated(2 * len(connections) * cython.sizeof(cython.int),
                                                          "the system loop's connections"))
        self.stage_moves[0] = n_moves = 0
        for s, links in enumerate(program):
            read = []
            for c in links:
                port = ports[c[0]]
                if c[0] not in read and port.variable(c[1]).depends:
                    read.append(c[0])
            self.refreshes.append([by_port[name] for name in read])
            self.gathers.append([(vars(ports[c[0]].model), c[1], slots[c[0], c[1]]) for c in links
                                 if kinds[c[0]] is None])
            for c in links:
                self.moves[2 * n_moves], self.moves[2 * n_moves + 1] = slots[c[0], c[1]], slots[c[2], c[3]]
                n_moves += 1
            self.stage_moves[s + 1] = n_moves
            self.scatters.append([(vars(ports[c[2]].model), c[3], slots[c[2], c[3]]) for c in links
                                  if kinds[c[2]] is None])
            self.flushes.append(list({id(ports[c[2]].model): ports[c[2]].model for c in links
                                      if kinds[c[2]] is None}.values()))
            self.retargeted.append(list({c[2]: by_port[c[2]] for c in links if kinds[c[2]] is not None}.values()))
        self.stale, self.inputs_set, self.current, self.algorithm = True, False, True, algorithm

    def __dealloc__(self):
        free(self.x)
        free(self.moves)

    def kernel_count(self) -> int:
        """How many elements run as kernels (the others through their models)."""
        return len(self.kernels)

    def runs(self, model) -> bool:
        """Whether ``model``'s element runs as a kernel (what it holds is :meth:`save`'s)."""
        return id(model) in self.by_model

    # ------------------------------------------------------------------ the models
    @cython.cfunc
    @cython.locals(element=Element)
    @cython.returns(cython.int)
    def _begin(self):
        """Before a call: the models read where they changed; they fall behind."""
        if self.stale:
            for element in self.kernels:
                element.read_model(self.x)
            self.stale = self.inputs_set = False
        elif self.inputs_set:
            for element in self.kernels:
                element.read_other_inputs(self.x)
            self.inputs_set = False
        self.current = False
        return 0

    @cython.locals(element=Element)
    def sync(self):
        """The models given what the kernels hold (before anything but this loop reads them)."""
        if self.stale:
            return
        self._begin_read()          # the FMU inputs set since the last call, first
        if self.current:
            return
        for element in self.kernels:
            element.write_model(self.x)
        self.current = True

    def save(self):
        """What the kernels hold (the models read first where they changed), for :meth:`restore`:
        the array, each kernel's state and whether its feedthrough outputs are up to date."""
        saved = LoopSave(self.saved_size)
        self._save_into(saved)
        return saved

    @cython.cfunc
    @cython.locals(element=Element, chain=ChainKernel, saved=LoopSave, data=cython.p_char, size=cython.Py_ssize_t)
    @cython.returns(cython.int)
    def _save_into(self, saved):
        """:meth:`save` into ``saved``."""
        self._begin_read()
        data = saved.data
        size = self.n_slots * cython.sizeof(cython.double)
        memcpy(data, self.x, size)
        data += size
        for element in self.kernels:
            element.save_into(data)
            data += element.saved_size
            data[0] = element.through_valid
            data += 1
        if self.with_extras:
            saved.extras = []
            for chain in self.with_extras:
                saved.extras.append(chain.thermal)
        saved.stale, saved.inputs_set = self.stale, self.inputs_set
        return 0

    @cython.locals(element=Element, chain=ChainKernel, saved=LoopSave, data=cython.p_char, i=cython.int)
    def restore(self, saved):
        """The kernels as :meth:`save` found them (the models then behind)."""
        data = saved.data
        memcpy(self.x, data, self.n_slots * cython.sizeof(cython.double))
        data += self.n_slots * cython.sizeof(cython.double)
        for element in self.kernels:
            element.restore_from(data)
            data += element.saved_size
            element.through_valid = data[0] != 0
            data += 1
        i = 0
        for chain in self.with_extras:
            chain.thermal = saved.extras[i]
            i += 1
        self.stale, self.inputs_set = saved.stale, saved.inputs_set
        self.current = False

    @cython.locals(element=Element, i=cython.int, plan=ReadPlan)
    def plan(self, paths):
        """What :meth:`read` reads for ``paths`` ((element model, variable name) each): a
        kernel's variable from the array, any other from its model's attributes."""
        plan = ReadPlan(len(paths))
        for i, (model, name) in enumerate(paths):
            element = self.by_model.get(id(model))
            if element is not None and name in element.slots:
                through = _is_through(element, name)
                plan.entries.append((element, element.slots[name], through, name))
                plan.slots[i] = element.slots[name]
                if through and element not in plan.refreshed:
                    plan.refreshed.append(element)
            else:
                plan.entries.append((vars(model), name, model if model.feedthrough_names and name in
                                     model.feedthrough_names else None))
                plan.slots[i] = -1
        return plan

    @cython.locals(element=Element, slot=cython.int, through=cython.bint, values=list, x=cython.p_double,
                   plan=ReadPlan, i=cython.int, refreshed=cython.bint)
    def read(self, plan, convert):
        """The values of ``plan`` (:meth:`plan`'s) as ``convert`` (float, int, bool), feedthrough
        outputs brought up to date first (a kernel's that is not finite: by its model, which
        raises)."""
        self._begin_read()
        x = self.x
        values = []
        refreshed = not self.stale
        if refreshed:           # every kernel's feedthrough outputs up to date: its values from x
            for element in plan.refreshed:
                if element.refresh(x) != TAKEN:
                    refreshed = False
                    break
        if refreshed:
            for i in range(plan.n):
                slot = plan.slots[i]
                if slot >= 0:
                    values.append(x[slot] if convert is float else convert(x[slot]))
                else:
                    attributes, name, model = plan.entries[i]
                    values.append(_model_value(attributes, name, model, convert))
            return values
        for entry in plan.entries:
            if type(entry[0]) is dict:
                attributes, name, model = entry
                values.append(_model_value(attributes, name, model, convert))
            else:
                element, slot, through, name = entry
                if not self.stale and through and element.refresh(x) != TAKEN:     # its model words it
                    self.sync()
                    self.stale = True
                if self.stale:          # the models hold the values: read as the algorithm's reader
                    values.append(_model_value(element.attributes, name, element.model if through else None, convert))
                else:
                    values.append(x[slot] if convert is float else convert(x[slot]))
        return values

    @cython.cfunc
    @cython.locals(element=Element)
    @cython.returns(cython.int)
    def _begin_read(self):
        """Before reading: the models read where they changed; they fall behind no further."""
        current = cython.declare(cython.bint, self.current or self.stale)     # stale: read from them
        if self.stale or self.inputs_set:
            self._begin()
            self.current = current
        return 0

    # ------------------------------------------------------------------ the algorithm
    @cython.cfunc
    @cython.locals(first_stage=cython.int, stage=cython.int, x=cython.p_double, i=cython.int, element=Element,
                   slot=cython.int, attributes=dict)
    @cython.returns(cython.int)
    def _exchange(self, first_stage):
        x = self.x
        for element in self.kernels:            # their inputs are about to change
            element.through_valid = False
        for stage in range(first_stage, 2):
            for element in self.refreshes[stage]:
                if element.refresh(x) != TAKEN:
                    raise UseReference()
            for attributes, name, slot in self.gathers[stage]:
                x[slot] = attributes[name]
            for i in range(2 * self.stage_moves[stage], 2 * self.stage_moves[stage + 1], 2):
                x[self.moves[i + 1]] = x[self.moves[i]]
            for element in self.retargeted[stage]:     # the flush: their feedthrough is stale
                element.through_valid = False
            for attributes, name, slot in self.scatters[stage]:
                attributes[name] = x[slot]
            for model in self.flushes[stage]:
                model.fresh = False
        return 0

    def exchange(self, first_stage: int = 0):
        """Algorithm.exchange(0, first_stage)."""
        self._begin()
        self._exchange(first_stage)

    @cython.cfunc
    @cython.locals(due=cython.int)
    @cython.returns(cython.int)
    def _exchange_due(self, due):
        """The exchange SystemModel._exchange makes on this loop when ``due`` (its ``_due``:
        2 the whole one, 1 stage 2 only)."""
        self._begin()
        self._exchange(0 if due == 2 else 1)
        return 0

    def run(self, n0: int, count: int, start: float, h: float, extra: float):
        """``count`` base steps of h from base step ``n0`` (t = start + n h + extra), each after
        the exchange (the first's done): Algorithm.step for one rate.  Raising, the kernels
        may have moved: the caller sets back what :meth:`save` kept."""
        self._begin()
        try:
            self._steps(n0, count, start, h, extra)
        except BaseException:
            self.algorithm.at = (self.at_t, h)
            raise

    @cython.cfunc
    @cython.locals(n0=cython.longlong, count=cython.longlong, start=cython.double, h=cython.double,
                   extra=cython.double, j=cython.longlong, element=Element, x=cython.p_double)
    @cython.returns(cython.int)
    def _steps(self, n0, count, start, h, extra):
        """:meth:`run` once begun; ``at_t``: the time of the step in progress."""
        x = self.x
        self.at_t = start + cython.cast(cython.double, n0) * h + extra
        for j in range(count):
            self.at_t = start + cython.cast(cython.double, n0 + j) * h + extra
            if j:
                self._exchange(0)
            for element in self.steppers:
                if element.step(x, self.at_t, h) != TAKEN:
                    raise UseReference()
                element.through_valid = False
        return 0

    # ------------------------------------------------------------------ the fast calls (Run)
    @cython.locals(element=Element)
    def slot_of(self, name: str) -> int:
        """A kernel's variable ``name`` ('inst.var', the system FMU's) for a get or a set."""
        inst, _, variable = name.partition(".")
        element = self.by_name.get(inst)
        return -1 if element is None else element.slots.get(variable, -1)

    @cython.locals(element=Element)
    def preparation(self, names, write: bool):
        """For a get, the kernels whose feedthrough outputs are among ``names`` (each refreshed
        first); for a set, what SystemModel.writer writes: (vars(model), name) of each input,
        and their models."""
        if write:
            targets, models = [], []
            for name in names:
                element = self.by_name[name.partition(".")[0]]
                targets.append((element.attributes, sys.intern(name.partition(".")[2])))
                if element.model not in models:
                    models.append(element.model)
            return targets, models
        refreshed = []
        for name in names:
            inst, _, variable = name.partition(".")
            element = self.by_name[inst]
            if _is_through(element, variable) and element not in refreshed:
                refreshed.append(element)
        return refreshed

    @cython.cfunc
    @cython.exceptval(-1, check=False)
    @cython.locals(slots=cython.p_int, n=cython.Py_ssize_t, values=cython.p_double, i=cython.Py_ssize_t,
                   targets=list, models=list, attributes=dict)
    @cython.returns(cython.int)
    def write(self, owner, preparation, slots, n, values):
        """SystemModel.writer's write of FMU inputs: into the element models, their
        feedthrough outputs stale, the kernels to read them, stage 2 due where they change
        what it moves."""
        targets, models = preparation
        for i in range(n):
            attributes, name = targets[i]
            attributes[name] = values[i]
        for model in models:
            model.fresh = False
        self.inputs_set = True
        if owner.algorithm is not None and owner._restage and not owner._due:
            owner._due = 1
        return 1

    @cython.cfunc
    @cython.exceptval(-1, check=False)
    @cython.locals(element=Element, due=cython.int)
    @cython.returns(cython.int)
    def ready(self, owner, preparation):
        """SystemModel.reader's exchange where one is due (as SystemModel._exchange makes it on
        this loop), then the feedthrough outputs of ``preparation`` brought up to date."""
        due = owner._due
        if due:
            try:
                self._exchange_due(due)
            except UseReference:        # the model leaves it to the algorithm: the same copies again
                return 0
            owner._due = 0
        self._begin_read()
        for element in preparation:
            if element.refresh(self.x) != TAKEN:
                return 0
        return 1

    @cython.cfunc
    @cython.exceptval(-1, check=False)
    @cython.returns(cython.int)
    @cython.locals(t=cython.double, h=cython.double, n=cython.longlong, count=cython.longlong,
                   start=cython.double, step=cython.double, extra=cython.double, expected=cython.double,
                   due=cython.int)
    def take(self, owner, t, h):
        """SystemModel.take_step of whole internal steps by this loop, where the model has
        decided the count of a step of h before (``_whole_steps``) and this one continues its
        time.  It saves what the step may move: the loop's own, and the models of the elements
        without a kernel (SystemModel._snapshot); anything it leaves to the model, a refusal
        included, is set back first (SystemModel._put_back), and the model takes the step."""
        if owner._fmu_inputs and owner._input_problem() is not None:
            return 0
        step = owner.internal_step
        known = owner._whole_steps.get(h)
        if known is None or known[1] != step:
            return 0
        n, start, extra = owner._n, owner.start_time, owner._extra
        expected = start + cython.cast(cython.double, n) * step + extra     # SystemModel._sub_steps
        if t != expected and fabs(t - expected) > 1e-9 * max(fabs(expected), h, step):
            return 0
        count, due = known[0], owner._due
        models = None if self.alone else owner._snapshot(count > 1)
        self._save_into(self.spare)
        try:
            if due:                     # SystemModel._advance
                self._exchange_due(due)
            self._begin()
            self._steps(n, count, start, step, extra)
        except BaseException as exc:    # nothing changed: the model takes the step (or meets what failed)
            if models is None:
                self.restore(self.spare)
            else:
                repeat_until_done(owner._put_back, models, None, n, extra, due, self.spare)
            if isinstance(exc, (UseReference, Refused)):
                return 0
            raise
        owner._n = n + count
        owner._due = 2
        return 1


@cython.cfunc
@cython.inline
@cython.locals(element=Element)
def _is_through(element, name) -> cython.bint:
    """``name`` is one of ``element``'s feedthrough outputs."""
    return any(name == entry[0] for entry in element.through_outputs)
