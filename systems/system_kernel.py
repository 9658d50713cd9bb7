"""The system FMU's inner loop over C doubles: the kernel of systems/algorithm.py.

systems/algorithm.py is the specification; this module runs its single-rate exchange and
steps (no multi-rate, no iterations) for :class:`systems.composite_slave.SystemModel`, written
by hand beside it.  Every connected variable, and every variable of an element with a kernel
here, is a slot of one C array of doubles; a connection is a copy between two slots.  An
element with a kernel here (:data:`KERNELS`) computes from the array into it: Inertia, Shaft
and the time tables keep their state as C doubles and compute their outputs with their
reference's IEEE operations in its order (gcc -ffp-contract=off: compiled_modules); a
friction chain without its thermal model keeps its friction system's state as C values
(friction_kernel.ChainValues) and makes its model's calls over them on that system's kernel
(solvers/friction_kernel.py, cimported: its C declarations are solvers/friction_kernel.pxd),
without a Python object between.  So every float is the reference's bit for bit.  Any other element is driven through its model
(fmus.model) as the algorithm's port does, its connected values moved between its
attributes and the array.

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

Uncompiled, this module refuses to be imported and the algorithm runs.
"""
from __future__ import annotations

import cython

if not cython.compiled:
    raise ImportError("systems.system_kernel runs compiled only: systems/algorithm.py runs instead")

from cython.cimports.libc.math import exp, expm1, isfinite  # noqa: E402
from cython.cimports.libc.stdlib import free, malloc  # noqa: E402
from cython.cimports.libc.string import memcmp, memcpy  # noqa: E402

from drivetrain_fmu.fmus.inertia import Inertia  # noqa: E402
from drivetrain_fmu.fmus.shaft import Shaft  # noqa: E402
from drivetrain_fmu.fmus.table import ForceTable, Table, TorqueTable  # noqa: E402
from drivetrain_fmu.fmus.clutch import Clutch, ClutchChain, DualClutch, ThermalChainState  # noqa: E402
from drivetrain_fmu.fmus.variables import BOOLEAN, INPUT, OUTPUT  # noqa: E402
from drivetrain_fmu.solvers.friction_state import Mode  # noqa: E402
from cython.cimports.drivetrain_fmu.solvers.friction_kernel import (ChainValues, FrictionKernel, chain_state,  # noqa: E402
                                                                    chain_values)
from drivetrain_fmu.solvers.rigid import BodyState  # noqa: E402

from .algorithm import Refused, UseReference, stages  # noqa: E402

_TAKEN = cython.declare(cython.int, 0)
_BY_REFERENCE = cython.declare(cython.int, 1)
MAX_CHAIN_INPUTS = cython.declare(cython.int, 24)     # ClutchChain: 12 torques, 5 clamps, T_amb
#: the friction kernel's sizes (solvers/friction_kernel.pxd)
MAX_MEMBERS = cython.declare(cython.int, 8)
MAX_INTERFACES = cython.declare(cython.int, 5)


@cython.cclass
class Element:
    """One element of the loop: its slots, and its model (what the kernel reads at the start
    and writes when the model is asked for)."""

    model = cython.declare(object)
    attributes = cython.declare(dict)        # vars(model)
    label = cython.declare(str)
    #: name -> slot of its variables in the array
    slots = cython.declare(dict)
    #: (name, slot) of its inputs and of its outputs functions of its state (a kernel: all
    #: declared; a model: those connections read and write)
    inputs = cython.declare(list)
    state_outputs = cython.declare(list)
    #: (name, slot) of its inputs the connections set, and of the others (the FMU's inputs)
    connected_inputs = cython.declare(list)
    other_inputs = cython.declare(list)
    #: (name, slot, Boolean) of its feedthrough outputs (a kernel: all declared)
    through_outputs = cython.declare(list)
    stateful = cython.declare(cython.bint)
    #: the bytes save_into writes
    saved_size = cython.declare(cython.int)
    #: its feedthrough outputs in the array are those of its state and inputs now
    through_valid = cython.declare(cython.bint)

    def __init__(self, label, model, slots):
        self.model, self.attributes, self.label, self.slots = model, vars(model), label, slots
        self.inputs = [(v.name, slots[v.name]) for v in model.VARIABLES if v.causality == INPUT and v.name in slots]
        self.state_outputs = [(v.name, slots[v.name]) for v in model.VARIABLES
                              if v.causality == OUTPUT and not v.depends and v.name in slots]
        self.through_outputs = [(v.name, slots[v.name], v.type == BOOLEAN) for v in model.VARIABLES
                                if v.causality == OUTPUT and v.depends and v.name in slots]
        self.stateful, self.through_valid = not model.stateless, False
        self.connect(())

    def connect(self, names):
        """Its inputs ``names`` are those the connections set."""
        self.connected_inputs = [(name, slot) for name, slot in self.inputs if name in names]
        self.other_inputs = [(name, slot) for name, slot in self.inputs if name not in names]

    @cython.cfunc
    @cython.locals(x=cython.p_double, slot=cython.int)
    @cython.returns(cython.int)
    def read_model(self, x):
        """The model's state, inputs and state outputs into the kernel."""
        for name, slot in self.inputs:
            x[slot] = self.attributes[name]
        for name, slot in self.state_outputs:
            x[slot] = self.attributes[name]
        self.read_state(self.model.state)
        self.through_valid = False
        return 0

    @cython.cfunc
    @cython.locals(x=cython.p_double, slot=cython.int)
    @cython.returns(cython.int)
    def read_other_inputs(self, x):
        """The inputs no connection sets (the FMU's, set into the model) into the kernel."""
        for name, slot in self.other_inputs:
            x[slot] = self.attributes[name]
        self.through_valid = False
        return 0

    @cython.cfunc
    @cython.locals(x=cython.p_double, slot=cython.int, boolean=cython.bint)
    @cython.returns(cython.int)
    def write_model(self, x):
        """The kernel's state, state outputs, connected inputs and (``fresh`` where they are
        up to date) feedthrough outputs into the model."""
        attributes = self.attributes
        model = self.model
        if self.stateful:
            model.state = self.new_state()
            for name, slot in self.state_outputs:
                attributes[name] = x[slot]
        for name, slot in self.connected_inputs:
            attributes[name] = x[slot]
        if self.through_outputs:
            if self.through_valid:
                for name, slot, boolean in self.through_outputs:
                    attributes[name] = x[slot] != 0.0 if boolean else x[slot]
            model.fresh = self.model_fresh()
        return 0

    @cython.cfunc
    @cython.returns(cython.bint)
    def model_fresh(self):
        """Whether the model, written, is ``fresh`` (and what it keeps with that is set)."""
        return self.through_valid

    @cython.cfunc
    @cython.locals(x=cython.p_double)
    @cython.returns(cython.int)
    def refresh(self, x):
        """Its feedthrough outputs brought up to date in x: _TAKEN, or _BY_REFERENCE."""
        if not self.through_valid:
            if self.feedthrough(x) != _TAKEN:
                return _BY_REFERENCE
            self.through_valid = True
        return _TAKEN

    # ------------------------------------------------------------------ a kernel's part
    @cython.cfunc
    @cython.locals(out=cython.p_char)
    @cython.returns(cython.int)
    def save_into(self, out):
        """Its state's C values into ``out`` (``saved_size`` bytes: SystemLoop.save)."""
        return 0

    @cython.cfunc
    @cython.locals(saved=cython.p_char)
    @cython.returns(cython.int)
    def restore_from(self, saved):
        """Its state from what :meth:`save_into` wrote."""
        return 0

    @cython.cfunc
    @cython.returns(cython.int)
    def read_state(self, state):
        """The kernel's state from a model's ``state``."""
        return 0

    @cython.cfunc
    def new_state(self):
        """The kernel's state as its model's."""
        return self.model.state

    @cython.cfunc
    @cython.locals(x=cython.p_double, t=cython.double, h=cython.double)
    @cython.returns(cython.int)
    def step(self, x, t, h):
        """The state at t + h into the kernel, its state outputs into x: _TAKEN, or
        _BY_REFERENCE (nothing changed)."""
        return _TAKEN

    @cython.cfunc
    @cython.locals(x=cython.p_double)
    @cython.returns(cython.int)
    def feedthrough(self, x):
        """The feedthrough outputs at the state and inputs into x: _TAKEN, or _BY_REFERENCE."""
        return _TAKEN


@cython.cclass
class ModelElement(Element):
    """An element without a kernel: its model, as systems.composite_slave.ModelPort drives it."""

    take_step = cython.declare(object)

    def __init__(self, label, model, slots):
        Element.__init__(self, label, model, slots)
        self.take_step = model.take_step

    @cython.cfunc
    @cython.locals(x=cython.p_double, t=cython.double, h=cython.double)
    @cython.returns(cython.int)
    def step(self, x, t, h):
        problem = self.take_step(t, h)
        if problem is not None:
            raise Refused(self.label, problem)
        return _TAKEN

    @cython.cfunc
    @cython.locals(x=cython.p_double)
    @cython.returns(cython.int)
    def refresh(self, x):
        self.model.update_feedthrough()     # it knows whether its outputs are up to date (fresh)
        return _TAKEN


@cython.cclass
class InertiaKernel(Element):
    """fmus.inertia.Inertia: J w' = tau_1 + tau_2 - d_ground w, solvers.rigid.damped_motion."""

    J = cython.declare(cython.double)
    d_ground = cython.declare(cython.double)
    phi = cython.declare(cython.double)
    w = cython.declare(cython.double)
    tau_1 = cython.declare(cython.int)
    tau_2 = cython.declare(cython.int)
    out_phi = cython.declare(cython.int)
    out_w = cython.declare(cython.int)
    out_a = cython.declare(cython.int)

    def __init__(self, label, model, slots):
        Element.__init__(self, label, model, slots)
        self.J, self.d_ground = model.J, model.d_ground
        self.tau_1, self.tau_2 = slots["tau_1"], slots["tau_2"]
        self.out_phi, self.out_w, self.out_a = slots["phi"], slots["w"], slots["a"]
        self.saved_size = 2 * cython.sizeof(cython.double)

    @cython.cfunc
    @cython.returns(cython.int)
    def read_state(self, state):
        self.phi, self.w = state
        return 0

    @cython.cfunc
    def new_state(self):
        return tuple.__new__(BodyState, (self.phi, self.w))

    @cython.cfunc
    @cython.locals(out=cython.p_char)
    @cython.returns(cython.int)
    def save_into(self, out):
        memcpy(out, cython.address(self.phi), cython.sizeof(cython.double))
        memcpy(out + cython.sizeof(cython.double), cython.address(self.w), cython.sizeof(cython.double))
        return 0

    @cython.cfunc
    @cython.locals(saved=cython.p_char)
    @cython.returns(cython.int)
    def restore_from(self, saved):
        memcpy(cython.address(self.phi), saved, cython.sizeof(cython.double))
        memcpy(cython.address(self.w), saved + cython.sizeof(cython.double), cython.sizeof(cython.double))
        return 0

    @cython.cfunc
    @cython.locals(x=cython.p_double, t=cython.double, h=cython.double, torque=cython.double,
                   inertia=cython.double, damping=cython.double, phi=cython.double, w=cython.double,
                   xd=cython.double, impulse=cython.double, p1=cython.double, p2=cython.double,
                   expm1_x=cython.double)
    @cython.returns(cython.int)
    def step(self, x, t, h):
        torque = x[self.tau_1] + x[self.tau_2]            # Inertia.prepare: tau_1 + tau_2
        if not isfinite(torque):        # Model.input_problem's screen (0.0 + tau_1 + tau_2)
            return _BY_REFERENCE
        inertia, damping, phi, w = self.J, self.d_ground, self.phi, self.w
        # solvers.rigid.damped_motion, operation for operation
        if damping == 0.0:
            phi, w = phi + w * h + 0.5 * torque / inertia * h * h, w + torque / inertia * h
        else:
            xd = damping * h / inertia
            impulse = torque * h / inertia
            if xd < 0.05:
                p1 = -expm1(-xd) / xd if xd else 1.0
                p2 = 0.5 - xd * (1.0 / 6.0 - xd * (1.0 / 24.0 - xd * (1.0 / 120.0 - xd * (
                    1.0 / 720.0 - xd * (1.0 / 5040.0 - xd / 40320.0)))))
            else:
                expm1_x = expm1(-xd)
                p1 = -expm1_x / xd
                p2 = (xd + expm1_x) / (xd * xd)
            phi, w = phi + w * h * p1 + impulse * h * p2, w * exp(-xd) + impulse * p1
        if not (isfinite(phi) and isfinite(w)):
            return _BY_REFERENCE
        self.phi, self.w = phi, w
        x[self.out_phi], x[self.out_w] = phi, w
        return _TAKEN

    @cython.cfunc
    @cython.locals(x=cython.p_double, a=cython.double)
    @cython.returns(cython.int)
    def feedthrough(self, x):
        a = (x[self.tau_1] + x[self.tau_2] - self.d_ground * self.w) / self.J     # Inertia.feedthrough
        if not isfinite(a):
            return _BY_REFERENCE
        x[self.out_a] = a
        return _TAKEN


@cython.cclass
class ShaftKernel(Element):
    """fmus.shaft.Shaft (fmus.compliance): stateless, its outputs the feedthrough
    tau = k (phi_rel + w_rel T_comm / 2) + d w_rel of solvers.compliance."""

    k = cython.declare(cython.double)
    d = cython.declare(cython.double)
    t_comm = cython.declare(cython.double)
    ratio = cython.declare(cython.double)
    phi_rel_start = cython.declare(cython.double)
    flanges = cython.declare(cython.int[4])       # phi_1, w_1, phi_2, w_2
    outs = cython.declare(cython.int[4])          # tau_1, tau_2, phi_rel, e_spring

    def __init__(self, label, model, slots):
        Element.__init__(self, label, model, slots)
        self.k, self.d, self.t_comm, self.ratio, self.phi_rel_start = (
            model.k, model.d, model.T_comm, model.ratio, model.phi_rel_start)
        for i, name in enumerate(("phi_1", "w_1", "phi_2", "w_2")):
            self.flanges[i] = slots[name]
        for i, name in enumerate(("tau_1", "tau_2", "phi_rel", "e_spring")):
            self.outs[i] = slots[name]

    @cython.cfunc
    @cython.locals(x=cython.p_double, ratio=cython.double, phi_rel=cython.double, w_rel=cython.double,
                   tau=cython.double, tau_1=cython.double, e_spring=cython.double)
    @cython.returns(cython.int)
    def feedthrough(self, x):
        ratio = self.ratio
        # solvers.compliance: twist, spring_damper_torque, spring_energy; fmus.compliance
        phi_rel = x[self.flanges[0]] / ratio - x[self.flanges[2]] + self.phi_rel_start
        w_rel = x[self.flanges[1]] / ratio - x[self.flanges[3]]
        tau = self.k * (phi_rel + 0.5 * w_rel * self.t_comm) + self.d * w_rel
        e_spring = 0.5 * self.k * phi_rel * phi_rel
        tau_1 = -tau / ratio
        if not (isfinite(tau_1) and isfinite(tau) and isfinite(phi_rel) and isfinite(e_spring)):
            return _BY_REFERENCE
        x[self.outs[0]], x[self.outs[1]], x[self.outs[2]], x[self.outs[3]] = tau_1, tau, phi_rel, e_spring
        return _TAKEN


@cython.cclass
class TableKernel(Element):
    """fmus.table.Table, TorqueTable, ForceTable: y(t) of solvers.signal.table_value; the state
    is the time of the communication point."""

    times = cython.declare(cython.double[6])       # fmus.table.MAX_POINTS
    values = cython.declare(cython.double[6])
    n = cython.declare(cython.int)
    hold = cython.declare(cython.bint)
    time = cython.declare(cython.double)
    out_y = cython.declare(cython.int)

    def __init__(self, label, model, slots):
        Element.__init__(self, label, model, slots)
        self.n, self.hold = len(model._t), bool(model.hold)
        for i in range(self.n):
            self.times[i], self.values[i] = model._t[i], model._y[i]
        self.out_y = slots["y"]
        self.saved_size = cython.sizeof(cython.double)

    @cython.cfunc
    @cython.returns(cython.int)
    def read_state(self, state):
        self.time = state
        return 0

    @cython.cfunc
    def new_state(self):
        return self.time

    @cython.cfunc
    @cython.locals(out=cython.p_char)
    @cython.returns(cython.int)
    def save_into(self, out):
        memcpy(out, cython.address(self.time), cython.sizeof(cython.double))
        return 0

    @cython.cfunc
    @cython.locals(saved=cython.p_char)
    @cython.returns(cython.int)
    def restore_from(self, saved):
        memcpy(cython.address(self.time), saved, cython.sizeof(cython.double))
        return 0

    @cython.cfunc
    @cython.locals(x=cython.p_double, t=cython.double, h=cython.double, time=cython.double,
                   index=cython.int, i=cython.int, y=cython.double, fraction=cython.double)
    @cython.returns(cython.int)
    def step(self, x, t, h):
        time = t + h                                    # ClockedModel.step
        index = -1                                      # table_value: the last point at or before
        for i in range(self.n):                         # time (bisect_right - 1 over increasing times)
            if self.times[i] <= time:
                index = i
            else:
                break
        if index < 0:
            y = self.values[0]
        elif self.hold or index == self.n - 1:
            y = self.values[index]
        else:
            fraction = (time - self.times[index]) / (self.times[index + 1] - self.times[index])
            y = self.values[index] + (self.values[index + 1] - self.values[index]) * fraction
        if not isfinite(y):
            return _BY_REFERENCE
        self.time = time
        x[self.out_y] = y
        return _TAKEN


@cython.cclass
class ChainKernel(Element):
    """fmus.clutch's FrictionChainElement without its thermal model (Clutch, DualClutch,
    ClutchChain): the calls its prepare, step, outputs and feedthrough make of its friction
    system, made over C values on the kernel of that system (solvers/friction_kernel.py:
    capacities_into, step_inputs_into, resolve_into, advance_into, motion_into), without the
    model around them.  The inputs are screened as Model.take_step screens them and the
    prepared values made again when an input changed, as Model.prepared does; the capacities
    are made again only when a clamp force changed bit for bit (they are a function of the
    clamp forces alone: == would take -0.0 for 0.0)."""

    friction = cython.declare(FrictionKernel)
    values = cython.declare(ChainValues)            # the friction system's state (model.state[0])
    thermal = cython.declare(tuple)                 # the rest of the model's ThermalChainState
    n_inputs = cython.declare(cython.int)
    input_slots = cython.declare(cython.int[24])    # every input, in the model's order
    prepared_at = cython.declare(cython.double[24])   # the inputs the prepared values were made at
    prepared = cython.declare(cython.bint)
    first = cython.declare(cython.int[8])           # each member's two torques' slots
    second = cython.declare(cython.int[8])
    n_clamps = cython.declare(cython.int)
    clamp_slots = cython.declare(cython.int[5])
    clamps_at = cython.declare(cython.double[5])    # the clamp forces the capacities were made at
    capacities_made = cython.declare(cython.bint)
    bounded = cython.declare(list)                  # (slot, lo, hi): Model._bounded_inputs
    torque_slots = cython.declare(cython.int[5])    # each interface's friction torque, locked flag
    locked_slots = cython.declare(cython.int[5])
    signs = cython.declare(cython.double[5])
    loss_slot = cython.declare(cython.int)
    n_motion = cython.declare(cython.int)           # the state outputs its step sets (chain_outputs)
    motion_slots = cython.declare(cython.int[22])
    slip_outputs = cython.declare(cython.bint)
    torque = cython.declare(cython.double[8])       # the prepared values (FrictionChainElement.prepare)
    t_s = cython.declare(cython.double[5])
    t_c = cython.declare(cython.double[5])
    a_mean = cython.declare(cython.double)
    g = cython.declare(cython.double[5])
    resolved_modes = cython.declare(cython.int[5])  # the resolution at this state and these inputs
    resolved_tau = cython.declare(cython.double[5])
    resolved = cython.declare(cython.bint)

    @cython.locals(i=cython.int, friction=FrictionKernel)
    def __init__(self, label, model, slots):
        Element.__init__(self, label, model, slots)
        friction = FrictionKernel(model.chain)
        self.friction = friction
        names = [v.name for v in model.input_variables]
        self.n_inputs = len(names)
        for i, name in enumerate(names):
            self.input_slots[i] = slots[name]
        second = {v.adds_to: v.name for v in model.input_variables if v.adds_to}
        members = list(model.active_members())
        if len(members) != friction.n or len(model._interface_outputs) != friction.k:
            raise ValueError(f"{label}: its friction system has {friction.n} members and {friction.k} interfaces")
        for i, m in enumerate(members):
            self.first[i], self.second[i] = slots[f"tau{m}"], slots[second[f"tau{m}"]]
        clamps = model.clamp_names()
        self.n_clamps = len(clamps)
        for i, name in enumerate(clamps):
            self.clamp_slots[i] = slots[name]
        self.bounded = [(slots[names[i]], lo, hi) for i, lo, hi in model._bounded_inputs]
        for i, (torque, locked, sign) in enumerate(model._interface_outputs):
            self.torque_slots[i], self.locked_slots[i], self.signs[i] = slots[torque], slots[locked], sign
        self.loss_slot = slots["p_loss"]
        # what its step sets: the members' motion, the slips and e_loss (the others keep theirs);
        # its friction outputs (the interfaces' not in use and the heat flows keep theirs)
        self.n_motion = len(model._output_names)
        for i, name in enumerate(model._output_names):
            self.motion_slots[i] = slots[name]
        self.slip_outputs = model.SLIP_OUTPUTS
        self.through_outputs = [(name, slots[name], name == locked)
                                for torque, locked, _ in model._interface_outputs for name in (torque, locked)]
        self.through_outputs.append(("p_loss", self.loss_slot, False))
        self.prepared = self.resolved = self.capacities_made = False
        self.saved_size = cython.sizeof(ChainValues)

    @cython.cfunc
    @cython.returns(cython.int)
    def read_state(self, state):
        chain_values(state[0], self.friction.k, cython.address(self.values))
        self.thermal = tuple(state[1:])
        self.prepared = self.resolved = False
        return 0

    @cython.cfunc
    def new_state(self):
        return tuple.__new__(ThermalChainState, (chain_state(cython.address(self.values), self.friction.k),
                                                 *self.thermal))

    @cython.cfunc
    @cython.locals(out=cython.p_char)
    @cython.returns(cython.int)
    def save_into(self, out):
        memcpy(out, cython.address(self.values), cython.sizeof(ChainValues))
        return 0

    @cython.cfunc
    @cython.locals(saved=cython.p_char)
    @cython.returns(cython.int)
    def restore_from(self, saved):
        memcpy(cython.address(self.values), saved, cython.sizeof(ChainValues))
        self.prepared = self.resolved = False
        return 0

    @cython.cfunc
    @cython.returns(cython.bint)
    def model_fresh(self):
        if self.through_valid and self.resolved:        # the step reuses the resolution kept with it
            self.model._resolution = ([Mode(self.resolved_modes[j]) for j in range(self.friction.k)],
                                      [self.resolved_tau[j] for j in range(self.friction.k)])
            return True
        return False

    @cython.cfunc
    @cython.locals(x=cython.p_double, i=cython.int, total=cython.double, changed=cython.bint,
                   slot=cython.int, lo=cython.double, hi=cython.double, clamps=cython.double[5])
    @cython.returns(cython.int)
    def prepare(self, x):
        """The prepared values at the inputs in x (FrictionChainElement.prepare), made again
        when one changed; _BY_REFERENCE when an input is not finite or out of its range
        (Model.input_problem's screen: the reference words it)."""
        total = 0.0
        for i in range(self.n_inputs):
            total += x[self.input_slots[i]]
        if not isfinite(total):
            return _BY_REFERENCE
        for slot, lo, hi in self.bounded:
            if not lo <= x[slot] <= hi:
                return _BY_REFERENCE
        changed = not self.prepared
        for i in range(self.n_inputs):
            if x[self.input_slots[i]] != self.prepared_at[i]:
                changed = True
        if changed:     # the values made whole before they count as made (an interrupt may cut it)
            self.prepared = self.resolved = False
            for i in range(self.friction.n):
                self.torque[i] = x[self.first[i]] + x[self.second[i]]
            for i in range(self.n_clamps):
                clamps[i] = x[self.clamp_slots[i]]
            if not self.capacities_made or memcmp(clamps, self.clamps_at, self.n_clamps * cython.sizeof(cython.double)):
                self.capacities_made = False
                self.friction.capacities_into(clamps, self.t_s, self.t_c)
                memcpy(self.clamps_at, clamps, self.n_clamps * cython.sizeof(cython.double))
                self.capacities_made = True
            self.a_mean = self.friction.step_inputs_into(self.torque, self.g)
            for i in range(self.n_inputs):
                self.prepared_at[i] = x[self.input_slots[i]]
            self.prepared = True
        return _TAKEN

    @cython.cfunc
    @cython.locals(x=cython.p_double, t=cython.double, h=cython.double, i=cython.int, n=cython.int,
                   k=cython.int, j=cython.int, total=cython.double, new=ChainValues, motion=cython.double[22])
    @cython.returns(cython.int)
    def step(self, x, t, h):
        if self.prepare(x) != _TAKEN:
            return _BY_REFERENCE
        friction = self.friction
        n, k = friction.n, friction.k
        try:        # FrictionChainElement.step without the thermal model
            if not self.resolved:
                friction.resolve_into(self.values.s, self.values.modes, self.g, self.t_s, self.t_c,
                                      self.resolved_modes, self.resolved_tau)
            friction.advance_into(cython.address(self.values), self.torque, self.a_mean, self.g, self.t_s, self.t_c,
                                  h, self.resolved_modes, self.resolved_tau, None, cython.address(new))
        except Exception:
            self.resolved = False
            return _BY_REFERENCE
        friction.motion_into(cython.address(new), motion)   # chain_outputs: angles, speeds, slips, e_loss
        i = 2 * n
        if self.slip_outputs:
            for j in range(k):
                motion[i] = new.s[j]
                i += 1
        motion[i] = new.e_loss
        total = 0.0
        for i in range(self.n_motion):
            total += motion[i]
        if not isfinite(total):
            self.resolved = False
            return _BY_REFERENCE
        for i in range(self.n_motion):
            x[self.motion_slots[i]] = motion[i]
        self.values = new
        self.resolved = False
        return _TAKEN

    @cython.cfunc
    @cython.locals(x=cython.p_double, j=cython.int, torque=cython.double, p_loss=cython.double)
    @cython.returns(cython.int)
    def feedthrough(self, x):
        if self.prepare(x) != _TAKEN:
            return _BY_REFERENCE
        if not self.resolved:       # FrictionElement.friction_feedthrough
            try:
                self.friction.resolve_into(self.values.s, self.values.modes, self.g, self.t_s, self.t_c,
                                           self.resolved_modes, self.resolved_tau)
            except Exception:
                return _BY_REFERENCE
            self.resolved = True
        p_loss = 0.0
        for j in range(self.friction.k):
            torque = self.resolved_tau[j]
            x[self.torque_slots[j]] = self.signs[j] * torque
            x[self.locked_slots[j]] = 1.0 if self.resolved_modes[j] == 0 else 0.0     # STUCK
            p_loss += torque * self.values.s[j]
        if not isfinite(p_loss):        # every torque and slip is finite when their products' sum is
            return _BY_REFERENCE
        x[self.loss_slot] = p_loss
        return _TAKEN


#: the elements with a kernel here (exactly these classes: a subclass may change the law)
KERNELS = {Inertia: InertiaKernel, Shaft: ShaftKernel, Table: TableKernel, TorqueTable: TableKernel,
           ForceTable: TableKernel, Clutch: ChainKernel, DualClutch: ChainKernel, ClutchChain: ChainKernel}


def _kernel_of(model, stepped: bool):
    """The kernel class for ``model``, or None: its class has none, or it checks an input's
    range (the kernels but the chain's screen finiteness only), or it is a friction chain with
    its thermal model or larger than the friction kernel takes, or it is stateless and a step
    refuses."""
    kernel = KERNELS.get(type(model))
    if kernel is None or (model.stateless and stepped):
        return None
    if kernel is ChainKernel:
        fits = (len(model.input_variables) <= MAX_CHAIN_INPUTS and model.chain.n <= MAX_MEMBERS
                and model.chain.n_interfaces <= MAX_INTERFACES)
        return kernel if fits and not model._thermal else None
    return None if model._bounded_inputs else kernel


@cython.cfunc
@cython.locals(size=cython.Py_ssize_t)
@cython.returns(cython.p_void)
def _allocated(size, what: str):
    """``size`` bytes from malloc (at least one); MemoryError naming ``what`` when there are none."""
    memory = cython.declare(cython.p_void, malloc(max(size, 1)))
    if not memory:
        raise MemoryError(what)
    return memory


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
        self.data = cython.cast(cython.p_char, _allocated(size, "a saved system loop"))

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
        self.slots = cython.cast(cython.p_int, _allocated(n * cython.sizeof(cython.int), "a read plan"))

    def __dealloc__(self):
        free(self.slots)


@cython.cclass
class SystemLoop:
    """The single-rate exchange and steps of ``algorithm`` (:class:`systems.algorithm.Algorithm`)
    over ``ports`` ({name: systems.composite_slave.ModelPort}) and ``connections``, base step
    ``step`` (module docstring).  A step that raises sets the algorithm's ``at`` to its (t, h).

    Between calls the kernel elements' values are the array's and the kernels' own, and their
    models are behind: :meth:`read` reads the array, :meth:`sync` writes the models, and
    :meth:`save` / :meth:`restore` keep and set back what the kernels hold.  The caller says
    what else changed: ``stale`` (the models were changed: read them all again) and
    ``inputs_set`` (the FMU's inputs were set into them)."""

    x = cython.declare(cython.p_double)
    n_slots = cython.declare(cython.int)
    kernels = cython.declare(list)              # the Elements with a kernel
    with_extras = cython.declare(list)          # the ChainKernels (save keeps their thermal parts)
    saved_size = cython.declare(cython.Py_ssize_t)    # the bytes of a LoopSave
    steppers = cython.declare(list)             # the Elements stepped, in the ports' order
    by_model = cython.declare(dict)             # id(model) -> its Element
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
        kinds = {name: _kernel_of(port.model, name in stepped) for name, port in ports.items()}
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
        self.x = cython.cast(cython.p_double, _allocated(len(slots) * cython.sizeof(cython.double),
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
        self.steppers = [by_port[name] for name in ports if name in stepped]
        self.refreshes, self.gathers, self.scatters, self.flushes, self.retargeted = [], [], [], [], []
        self.moves = cython.cast(cython.p_int, _allocated(2 * len(connections) * cython.sizeof(cython.int),
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

    @cython.locals(element=Element, chain=ChainKernel, saved=LoopSave, data=cython.p_char, size=cython.Py_ssize_t)
    def save(self):
        """What the kernels hold (the models read first where they changed), for :meth:`restore`:
        the array, each kernel's state and whether its feedthrough outputs are up to date."""
        self._begin_read()
        saved = LoopSave(self.saved_size)
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
        return saved

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
                through = any(name == entry[0] for entry in element.through_outputs)
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
                if element.refresh(x) != _TAKEN:
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
                if not self.stale and through and element.refresh(x) != _TAKEN:     # its model words it
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
                if element.refresh(x) != _TAKEN:
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

    @cython.locals(n0=cython.longlong, count=cython.longlong, start=cython.double, h=cython.double,
                   extra=cython.double, j=cython.longlong, t=cython.double, element=Element, x=cython.p_double)
    def run(self, n0, count, start, h, extra):
        """``count`` base steps of h from base step ``n0`` (t = start + n h + extra), each after
        the exchange (the first's done): Algorithm.step for one rate.  Raising, the kernels
        may have moved: the caller sets back what :meth:`save` kept."""
        x = self.x
        self._begin()
        t = start + cython.cast(cython.double, n0) * h + extra
        try:
            for j in range(count):
                t = start + cython.cast(cython.double, n0 + j) * h + extra
                if j:
                    self._exchange(0)
                for element in self.steppers:
                    if element.step(x, t, h) != _TAKEN:
                        raise UseReference()
                    element.through_valid = False
        except BaseException:
            self.algorithm.at = (t, h)
            raise
