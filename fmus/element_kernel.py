"""The elements' compiled kernels: an element's state and law over C doubles, for the system
FMU's inner loop and for an element FMU.

An element whose class has a kernel here (:data:`KERNELS`) computes from one C array of
doubles into it, each of its inputs and outputs a slot of that array: Inertia, the Engine
without harmonics, Shaft, the time tables and the torque sources keep their state as C
doubles and compute their outputs with their reference's IEEE operations in its order (gcc
-ffp-contract=off: compiled_modules; a clocked source's law is its ``value_at``); a friction chain
without its thermal model keeps its friction system's state as C values
(friction_kernel.ChainValues) and makes its model's calls over them on that system's kernel
(solvers/friction_kernel.py, cimported), without a Python object between.  So every float is
the reference's (the model, fmus/) bit for bit.  What a kernel does not decide alone it
leaves to its model: an input out of its range, a value that is not finite, a friction step
that raises make it return BY_REFERENCE with nothing changed, and the driver has the model
take the step (which refuses it or raises, with its message).

Two drivers: systems/system_kernel.py's SystemLoop (a system's elements, connections as copies
between slots) and :class:`ElementRun` (one element alone: an element FMU, fmus.kernel_run).
Its C declarations are fmus/element_kernel.pxd (the system loop cimports them).

Uncompiled, this module refuses to be imported and the models run.
"""
from __future__ import annotations

import sys

import cython

if not cython.compiled:
    raise ImportError("fmus.element_kernel runs compiled only: the element models run instead")

from cython.cimports.libc.math import M_PI, NAN, exp, expm1, fabs, isfinite, pow, sin  # noqa: E402
from cython.cimports.libc.stdlib import free, malloc  # noqa: E402
from cython.cimports.libc.string import memcmp, memcpy  # noqa: E402

from drivetrain_fmu.fmus.clutch import ThermalChainState  # noqa: E402
from drivetrain_fmu.fmus.compliance import SLIVER, STEP_ROUNDING  # noqa: E402
from drivetrain_fmu.fmus.variables import BOOLEAN, INPUT, OUTPUT  # noqa: E402
from drivetrain_fmu.solvers.friction_state import Mode  # noqa: E402
from cython.cimports.drivetrain_fmu.solvers.friction_kernel import (ChainValues, FrictionKernel, chain_state,  # noqa: E402
                                                                    chain_values)
from drivetrain_fmu.solvers.rigid import BodyState  # noqa: E402
from drivetrain_fmu.solvers.signal import SQRT_FLOAT_MAX, SQRT_FLOAT_MIN  # noqa: E402

# TAKEN and BY_REFERENCE, what a kernel's step and feedthrough return: the .pxd's enum
_STEP_ROUNDING = cython.declare(cython.double, STEP_ROUNDING)     # fmus.compliance's
_SLIVER = cython.declare(cython.double, SLIVER)
_SQRT_FLOAT_MAX = cython.declare(cython.double, SQRT_FLOAT_MAX)    # solvers.signal's
_SQRT_FLOAT_MIN = cython.declare(cython.double, SQRT_FLOAT_MIN)
MAX_CHAIN_INPUTS = cython.declare(cython.int, 24)     # ClutchChain: 12 torques, 5 clamps, T_amb
#: the friction kernel's sizes (solvers/friction_kernel.pxd)
MAX_MEMBERS = cython.declare(cython.int, 8)
MAX_INTERFACES = cython.declare(cython.int, 5)


@cython.cclass
class Element:
    """One element of the loop: its slots, and its model (what the kernel reads at the start
    and writes when the model is asked for)."""

    #: name -> slot of its variables in the array
    #: (name, slot) of its inputs and of its outputs functions of its state (a kernel: all
    #: declared; a model: those connections read and write)
    #: (name, slot) of its inputs the connections set, and of the others (the FMU's inputs)
    #: (name, slot, Boolean) of its feedthrough outputs (a kernel: all declared)
    #: the bytes save_into writes
    #: its feedthrough outputs in the array are those of its state and inputs now

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

    @cython.locals(slot=cython.int)
    def read_model(self, x):
        """The model's state, inputs and state outputs into the kernel."""
        for name, slot in self.inputs:
            x[slot] = self.attributes[name]
        for name, slot in self.state_outputs:
            x[slot] = self.attributes[name]
        self.read_state(self.model.state)
        self.through_valid = False
        return 0

    @cython.locals(slot=cython.int)
    def read_other_inputs(self, x):
        """The inputs no connection sets (the FMU's, set into the model) into the kernel."""
        for name, slot in self.other_inputs:
            x[slot] = self.attributes[name]
        self.through_valid = False
        return 0

    @cython.locals(slot=cython.int, boolean=cython.bint)
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

    def model_fresh(self):
        """Whether the model, written, is ``fresh`` (and what it keeps with that is set)."""
        return self.through_valid

    def refresh(self, x):
        """Its feedthrough outputs brought up to date in x: TAKEN, or BY_REFERENCE."""
        if not self.through_valid:
            if self.feedthrough(x) != TAKEN:
                return BY_REFERENCE
            self.through_valid = True
        return TAKEN

    # ------------------------------------------------------------------ a kernel's part
    def save_into(self, out):
        """Its state's C values into ``out`` (``saved_size`` bytes: SystemLoop.save)."""
        return 0

    def restore_from(self, saved):
        """Its state from what :meth:`save_into` wrote."""
        return 0

    def read_state(self, state):
        """The kernel's state from a model's ``state``."""
        return 0

    def new_state(self):
        """The kernel's state as its model's."""
        return self.model.state

    def step(self, x, t, h):
        """The state at t + h into the kernel, its state outputs into x: TAKEN, or
        BY_REFERENCE (nothing changed)."""
        return TAKEN

    def feedthrough(self, x):
        """The feedthrough outputs at the state and inputs into x: TAKEN, or BY_REFERENCE."""
        return TAKEN


@cython.cclass
class InertiaKernel(Element):
    """fmus.inertia.Inertia: J w' = tau_1 + tau_2 - d_ground w, solvers.rigid.damped_motion."""

    def __init__(self, label, model, slots):
        Element.__init__(self, label, model, slots)
        self.J, self.d_ground = model.J, model.d_ground
        self.tau_1, self.tau_2 = slots["tau_1"], slots["tau_2"]
        self.out_phi, self.out_w, self.out_a = slots["phi"], slots["w"], slots["a"]
        self.saved_size = 2 * cython.sizeof(cython.double)

    def read_state(self, state):
        self.phi, self.w = state
        return 0

    def new_state(self):
        return tuple.__new__(BodyState, (self.phi, self.w))

    def save_into(self, out):
        memcpy(out, cython.address(self.phi), cython.sizeof(cython.double))
        memcpy(out + cython.sizeof(cython.double), cython.address(self.w), cython.sizeof(cython.double))
        return 0

    def restore_from(self, saved):
        memcpy(cython.address(self.phi), saved, cython.sizeof(cython.double))
        memcpy(cython.address(self.w), saved + cython.sizeof(cython.double), cython.sizeof(cython.double))
        return 0

    @cython.locals(torque=cython.double, inertia=cython.double, damping=cython.double, phi=cython.double,
                   w=cython.double, xd=cython.double, impulse=cython.double, p1=cython.double, p2=cython.double,
                   expm1_x=cython.double)
    def step(self, x, t, h):
        torque = x[self.tau_1] + x[self.tau_2]            # Inertia.prepare: tau_1 + tau_2
        if not isfinite(torque):        # Model.input_problem's screen (0.0 + tau_1 + tau_2)
            return BY_REFERENCE
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
            return BY_REFERENCE
        self.phi, self.w = phi, w
        x[self.out_phi], x[self.out_w] = phi, w
        return TAKEN

    @cython.locals(a=cython.double)
    def feedthrough(self, x):
        a = (x[self.tau_1] + x[self.tau_2] - self.d_ground * self.w) / self.J     # Inertia.feedthrough
        if not isfinite(a):
            return BY_REFERENCE
        x[self.out_a] = a
        return TAKEN


@cython.cclass
class EngineKernel(Element):
    """fmus.inertia.Engine without harmonics (h2 = h4 = 0; kernel_of leaves the others to the
    model): J w' = throttle T0 + tau_load, solvers.rigid.step_engine's undamped step; the state
    also holds the time of the communication point, at which tau_engine is the feedthrough
    T0 throttle (1 + h2 sin(2 w t) + h4 sin(4 w t)) of solvers.rigid.engine_torque."""

    def __init__(self, label, model, slots):
        Element.__init__(self, label, model, slots)
        self.J, self.T0, self.h2, self.h4 = model.J, model.T0, model.h2, model.h4
        self.tau_load, self.tau_load_2, self.throttle = slots["tau_load"], slots["tau_load_2"], slots["throttle"]
        self.out_phi, self.out_w, self.out_tau = slots["phi"], slots["w"], slots["tau_engine"]
        self.saved_size = 3 * cython.sizeof(cython.double)

    def read_state(self, state):
        (self.phi, self.w), self.time = state
        return 0

    def new_state(self):
        return tuple.__new__(BodyState, (self.phi, self.w)), self.time

    def save_into(self, out):
        memcpy(out, cython.address(self.phi), cython.sizeof(cython.double))
        memcpy(out + cython.sizeof(cython.double), cython.address(self.w), cython.sizeof(cython.double))
        memcpy(out + 2 * cython.sizeof(cython.double), cython.address(self.time), cython.sizeof(cython.double))
        return 0

    def restore_from(self, saved):
        memcpy(cython.address(self.phi), saved, cython.sizeof(cython.double))
        memcpy(cython.address(self.w), saved + cython.sizeof(cython.double), cython.sizeof(cython.double))
        memcpy(cython.address(self.time), saved + 2 * cython.sizeof(cython.double), cython.sizeof(cython.double))
        return 0

    @cython.locals(torque=cython.double, phi=cython.double, w=cython.double)
    def step(self, x, t, h):
        # Model.input_problem's screen, over the inputs in their declared order
        if not isfinite(0.0 + x[self.tau_load] + x[self.throttle] + x[self.tau_load_2]):
            return BY_REFERENCE
        # Engine.step: step_engine(mean = throttle T0, load = tau_load + tau_load_2), without
        # harmonics solvers.rigid.damped_motion's undamped step of the torque mean + load
        torque = x[self.throttle] * self.T0 + (x[self.tau_load] + x[self.tau_load_2])
        phi = self.phi + self.w * h + 0.5 * torque / self.J * h * h
        w = self.w + torque / self.J * h
        if not (isfinite(phi) and isfinite(w)):
            return BY_REFERENCE
        self.phi, self.w, self.time = phi, w, t + h
        x[self.out_phi], x[self.out_w] = phi, w
        return TAKEN

    @cython.locals(tau=cython.double)
    def feedthrough(self, x):
        # Engine.feedthrough: engine_torque(time, w, throttle T0, h2, h4)
        tau = x[self.throttle] * self.T0 * (1.0 + self.h2 * sin(2.0 * self.w * self.time)
                                             + self.h4 * sin(4.0 * self.w * self.time))
        if not isfinite(tau):
            return BY_REFERENCE
        x[self.out_tau] = tau
        return TAKEN


@cython.cclass
class ShaftKernel(Element):
    """fmus.shaft.Shaft (fmus.compliance): stateless, its outputs the feedthrough
    tau = k (phi_rel + w_rel T_comm / 2) + d w_rel of solvers.compliance."""

    def __init__(self, label, model, slots):
        Element.__init__(self, label, model, slots)
        self.k, self.d, self.t_comm, self.ratio, self.phi_rel_start = (
            model.k, model.d, model.T_comm, model.ratio, model.phi_rel_start)
        for i, name in enumerate(("phi_1", "w_1", "phi_2", "w_2")):
            self.flanges[i] = slots[name]
        for i, name in enumerate(("tau_1", "tau_2", "phi_rel", "e_spring")):
            self.outs[i] = slots[name]

    def step(self, x, t, h):
        # ComplianceElement.step: the steps its torques were averaged for; any other the model refuses
        if self.t_comm > 0.0 and fabs(h - self.t_comm) > _STEP_ROUNDING * self.t_comm and h > _SLIVER * self.t_comm:
            return BY_REFERENCE
        return TAKEN

    @cython.locals(ratio=cython.double, phi_rel=cython.double, w_rel=cython.double, tau=cython.double,
                   tau_1=cython.double, e_spring=cython.double)
    def feedthrough(self, x):
        ratio = self.ratio
        # solvers.compliance: twist, spring_damper_torque, spring_energy; fmus.compliance
        phi_rel = x[self.flanges[0]] / ratio - x[self.flanges[2]] + self.phi_rel_start
        w_rel = x[self.flanges[1]] / ratio - x[self.flanges[3]]
        tau = self.k * (phi_rel + 0.5 * w_rel * self.t_comm) + self.d * w_rel
        e_spring = 0.5 * self.k * phi_rel * phi_rel
        tau_1 = -tau / ratio
        if not (isfinite(tau_1) and isfinite(tau) and isfinite(phi_rel) and isfinite(e_spring)):
            return BY_REFERENCE
        x[self.outs[0]], x[self.outs[1]], x[self.outs[2]], x[self.outs[3]] = tau_1, tau, phi_rel, e_spring
        return TAKEN


@cython.cclass
class ClockedKernel(Element):
    """A source of fmus.model.ClockedModel: its state is the time of the communication point,
    its output y a function of it (``value_at``, each source's law)."""

    def __init__(self, label, model, slots):
        Element.__init__(self, label, model, slots)
        self.out_y = slots["y"]
        self.saved_size = cython.sizeof(cython.double)

    def value_at(self, time):
        """y at ``time``; NaN leaves the step to the model."""
        return NAN

    @cython.locals(time=cython.double, y=cython.double)
    def step(self, x, t, h):
        time = t + h                                    # ClockedModel.step
        y = self.value_at(time)
        if not isfinite(y):
            return BY_REFERENCE
        self.time = time
        x[self.out_y] = y
        return TAKEN

    def read_state(self, state):
        self.time = state
        return 0

    def new_state(self):
        return self.time

    def save_into(self, out):
        memcpy(out, cython.address(self.time), cython.sizeof(cython.double))
        return 0

    def restore_from(self, saved):
        memcpy(cython.address(self.time), saved, cython.sizeof(cython.double))
        return 0


@cython.cclass
class TableKernel(ClockedKernel):
    """fmus.table.Table, TorqueTable, ForceTable: y(t) of solvers.signal.table_value."""

    def __init__(self, label, model, slots):
        ClockedKernel.__init__(self, label, model, slots)
        self.n, self.hold = len(model._t), bool(model.hold)
        for i in range(self.n):
            self.times[i], self.values[i] = model._t[i], model._y[i]

    @cython.locals(index=cython.int, i=cython.int, fraction=cython.double)
    def value_at(self, time):
        index = -1                                      # table_value: the last point at or before
        for i in range(self.n):                         # time (bisect_right - 1 over increasing times)
            if self.times[i] <= time:
                index = i
            else:
                break
        if index < 0:
            return self.values[0]
        if self.hold or index == self.n - 1:
            return self.values[index]
        fraction = (time - self.times[index]) / (self.times[index + 1] - self.times[index])
        return self.values[index] + (self.values[index + 1] - self.values[index]) * fraction


@cython.cclass
class SineTorqueKernel(ClockedKernel):
    """fmus.sources.SineTorque: y = solvers.signal.gated_sine at the time of the communication
    point."""

    def __init__(self, label, model, slots):
        ClockedKernel.__init__(self, label, model, slots)
        self.amplitude, self.f, self.phase, self.offset = model.amplitude, model.f, model.phase, model.offset
        self.t_start, self.t_stop = model.t_start, model.t_stop

    def value_at(self, time):
        if self.t_start <= time < self.t_stop:          # gated_sine, operation for operation
            return self.offset + self.amplitude * sin(2.0 * M_PI * self.f * (time - self.t_start) + self.phase)
        return self.offset


@cython.cclass
class SpeedTorqueKernel(Element):
    """fmus.sources.SpeedDependentTorque: stateless, tau = tau_nominal (w / w_nominal)^2 of
    solvers.signal.quadratic_speed_torque where (w / w_nominal)^2 is a normal float; beyond,
    where the reference splits the numbers into mantissas and powers of two, it leaves the
    feedthrough to the model."""

    def __init__(self, label, model, slots):
        Element.__init__(self, label, model, slots)
        self.tau_nominal, self.w_nominal = model.tau_nominal, model.w_nominal
        self.opposes_motion, self.two = bool(model.opposes_motion), 2.0
        self.w, self.out_tau = slots["w"], slots["tau"]

    def step(self, x, t, h):
        if not isfinite(0.0 + x[self.w]):              # Model.input_problem's screen
            return BY_REFERENCE
        return TAKEN

    @cython.locals(w=cython.double, ratio=cython.double, torque=cython.double)
    def feedthrough(self, x):
        w = x[self.w]
        ratio = w / self.w_nominal
        if not (_SQRT_FLOAT_MIN <= fabs(ratio) < _SQRT_FLOAT_MAX or ratio == 0.0):
            return BY_REFERENCE
        # Python's ratio ** 2 is libm's pow(ratio, 2.0), which differs from ratio * ratio in the
        # last bit for some ratios; the exponent is a field so that gcc cannot fold pow into that
        torque = self.tau_nominal * pow(ratio, self.two)
        if self.opposes_motion and w < 0.0:
            torque = -torque
        if not isfinite(torque):
            return BY_REFERENCE
        x[self.out_tau] = torque
        return TAKEN


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

    def read_state(self, state):
        chain_values(state[0], self.friction.k, cython.address(self.values))
        self.thermal = tuple(state[1:])
        self.prepared = self.resolved = False
        return 0

    def new_state(self):
        return tuple.__new__(ThermalChainState, (chain_state(cython.address(self.values), self.friction.k),
                                                 *self.thermal))

    def save_into(self, out):
        memcpy(out, cython.address(self.values), cython.sizeof(ChainValues))
        return 0

    def restore_from(self, saved):
        memcpy(cython.address(self.values), saved, cython.sizeof(ChainValues))
        self.prepared = self.resolved = False
        return 0

    def model_fresh(self):
        if self.through_valid and self.resolved:        # the step reuses the resolution kept with it
            self.model._resolution = ([Mode(self.resolved_modes[j]) for j in range(self.friction.k)],
                                      [self.resolved_tau[j] for j in range(self.friction.k)])
            return True
        return False

    @cython.locals(i=cython.int, total=cython.double, changed=cython.bint, slot=cython.int, lo=cython.double,
                   hi=cython.double, clamps=cython.double[5])
    def prepare(self, x):
        """The prepared values at the inputs in x (FrictionChainElement.prepare), made again
        when one changed; BY_REFERENCE when an input is not finite or out of its range
        (Model.input_problem's screen: the reference words it)."""
        total = 0.0
        for i in range(self.n_inputs):
            total += x[self.input_slots[i]]
        if not isfinite(total):
            return BY_REFERENCE
        for slot, lo, hi in self.bounded:
            if not lo <= x[slot] <= hi:
                return BY_REFERENCE
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
        return TAKEN

    @cython.locals(i=cython.int, n=cython.int, k=cython.int, j=cython.int, total=cython.double, new=ChainValues,
                   motion=cython.double[22])
    def step(self, x, t, h):
        if self.prepare(x) != TAKEN:
            return BY_REFERENCE
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
            return BY_REFERENCE
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
            return BY_REFERENCE
        for i in range(self.n_motion):
            x[self.motion_slots[i]] = motion[i]
        self.values = new
        self.resolved = False
        return TAKEN

    @cython.locals(j=cython.int, torque=cython.double, p_loss=cython.double)
    def feedthrough(self, x):
        if self.prepare(x) != TAKEN:
            return BY_REFERENCE
        if not self.resolved:       # FrictionElement.friction_feedthrough
            try:
                self.friction.resolve_into(self.values.s, self.values.modes, self.g, self.t_s, self.t_c,
                                           self.resolved_modes, self.resolved_tau)
            except Exception:
                return BY_REFERENCE
            self.resolved = True
        p_loss = 0.0
        for j in range(self.friction.k):
            torque = self.resolved_tau[j]
            x[self.torque_slots[j]] = self.signs[j] * torque
            x[self.locked_slots[j]] = 1.0 if self.resolved_modes[j] == 0 else 0.0     # STUCK
            p_loss += torque * self.values.s[j]
        if not isfinite(p_loss):        # every torque and slip is finite when their products' sum is
            return BY_REFERENCE
        x[self.loss_slot] = p_loss
        return TAKEN


#: the element models with a kernel here, by module and name (exactly these classes: a subclass
#: may change the law; named, not imported: an FMU imports the modules of its own elements only)
KERNELS = {"inertia.Inertia": InertiaKernel, "inertia.Engine": EngineKernel, "shaft.Shaft": ShaftKernel,
           "table.Table": TableKernel, "table.TorqueTable": TableKernel, "table.ForceTable": TableKernel,
           "sources.SineTorque": SineTorqueKernel, "sources.SpeedDependentTorque": SpeedTorqueKernel,
           "clutch.Clutch": ChainKernel, "clutch.DualClutch": ChainKernel, "clutch.ClutchChain": ChainKernel}
#: the package of those modules
_MODELS_PACKAGE = "drivetrain_fmu.fmus."


def kernel_class(model_class):
    """The kernel of the element model class ``model_class`` when it is one of :data:`KERNELS`
    (the class its module holds under that name, not a class named as it: an FMU class), or None."""
    module, name = model_class.__module__, model_class.__qualname__
    if not module.startswith(_MODELS_PACKAGE) or getattr(sys.modules.get(module), name, None) is not model_class:
        return None
    return KERNELS.get(f"{module[len(_MODELS_PACKAGE):]}.{name}")


def kernel_of(model, model_class):
    """The kernel class for ``model``, of the element model class ``model_class`` (an element
    FMU's class is a subclass of it), or None: that class has none, or it checks an input's
    range (the kernels but the chain's screen finiteness only), or it is a friction chain with
    its thermal model or larger than the friction kernel takes, or an engine with harmonics
    (solvers.rigid.step_engine integrates it adaptively)."""
    kernel = kernel_class(model_class)
    if kernel is None or (kernel is EngineKernel and (model.h2 != 0.0 or model.h4 != 0.0)):
        return None
    if kernel is ChainKernel:
        fits = (len(model.input_variables) <= MAX_CHAIN_INPUTS and model.chain.n <= MAX_MEMBERS
                and model.chain.n_interfaces <= MAX_INTERFACES)
        return kernel if fits and not model._thermal else None
    return None if model._bounded_inputs else kernel


def allocated(size, what):
    """``size`` bytes from malloc (at least one); MemoryError naming ``what`` when there are none."""
    memory = cython.declare(cython.p_void, malloc(max(size, 1)))
    if not memory:
        raise MemoryError(what)
    return memory


@cython.cclass
class Run:
    """What the FMU's binary makes its hot calls on (fmus/fmi_kernel.py): an FMU instance's
    variables as slots of the C array ``x``, driven by its model (``owner``, the shell's model:
    an element model with :class:`ElementRun`, a system model with systems/system_kernel.py's
    SystemLoop).  Each method either makes the call as the model would and returns 1, or
    returns 0 having changed nothing but what the model's own call would change first, and the
    model makes the call."""

    def slot_of(self, name: str) -> int:
        """The slot of the FMU variable ``name`` a fast get or set may use, or -1."""
        return -1

    def preparation(self, names, write: bool):
        """What :meth:`ready` needs to bring the variables ``names`` (each with a slot) up to
        date, or (``write``) what :meth:`write` needs to set them."""
        return None

    def take(self, owner, t, h):
        """fmi2DoStep from t over h, once the instance is initialized with no message queued."""
        return 0

    def ready(self, owner, preparation):
        """Before a get: the slots of :meth:`preparation`'s variables hold their values now."""
        return 0

    def write(self, owner, preparation, slots, n, values):
        """fmi2SetReal of the ``n`` inputs at ``slots`` (their :meth:`preparation`)."""
        return 0


@cython.cclass
class ElementRun(Run):
    """One element's kernel driving its model alone (an element FMU: fmus.kernel_run), as
    SystemLoop drives a system's: its inputs and outputs are the slots of one C array, in the
    order of its declared variables; a step, a get of an input or output and an undo run on the
    kernel, and the model falls behind.  Its driver says when the model changed (``stale``:
    read it all again) or its inputs were set (``inputs_set``), has it written (:meth:`sync`)
    before anything else reads or changes it, and hands a step over to it with
    :meth:`hand_over`.  ``stepped``: the last step taken was the kernel's (:meth:`undo` undoes it)."""

    @cython.locals(i=cython.int)
    def __init__(self, model, kernel):
        names = [v.name for v in model.VARIABLES if v.causality in (INPUT, OUTPUT)]
        self.slots = {name: i for i, name in enumerate(names)}
        self.n_slots = len(names)
        self.x = cython.cast(cython.p_double, allocated(self.n_slots * cython.sizeof(cython.double),
                                                        "an element's values"))
        for i in range(self.n_slots):
            self.x[i] = 0.0
        self.kernel = kernel(type(model).__name__, model, self.slots)
        self.before = cython.cast(cython.p_char, allocated(self.n_slots * cython.sizeof(cython.double)
                                                           + self.kernel.saved_size + 1, "an element's last state"))
        self.through = frozenset(entry[0] for entry in self.kernel.through_outputs)
        self.stale, self.inputs_set, self.behind, self.stepped = True, False, False, False

    def __dealloc__(self):
        free(self.x)
        free(self.before)

    def _begin(self):
        """Before the kernel computes: the model read where it changed."""
        if self.stale:
            self.kernel.read_model(self.x)
            self.stale = self.inputs_set = self.behind = False
        elif self.inputs_set:
            self.kernel.read_other_inputs(self.x)
            self.kernel.through_valid = False
            self.inputs_set = False
        return 0

    @cython.locals(t=cython.double, h=cython.double)
    def step(self, t, h) -> bool:
        """The step from t over h on the kernel: True; False when the kernel leaves it to the
        model (nothing changed).  What it steps from is kept for :meth:`undo`."""
        return self.advance(t, h) == 1

    @cython.locals(kernel=Element, size=cython.Py_ssize_t)
    def advance(self, t, h):
        """:meth:`step` over C values (fmus/fmi_kernel.py calls it): 1 taken, 0 left to the model."""
        self._begin()
        kernel = self.kernel
        size = self.n_slots * cython.sizeof(cython.double)
        memcpy(self.before, self.x, size)
        kernel.save_into(self.before + size)
        self.before[size + kernel.saved_size] = kernel.through_valid
        if kernel.step(self.x, t, h) != TAKEN:
            return 0
        kernel.through_valid = False
        self.behind = self.stepped = True
        return 1

    # ------------------------------------------------------------------ the fast calls (Run)
    def slot_of(self, name: str) -> int:
        return self.slots.get(name, -1)

    def preparation(self, names, write: bool):
        """Whether a feedthrough output is among ``names`` (the kernel computes them first);
        for a set, the names."""
        return list(names) if write else not self.through.isdisjoint(names)

    def take(self, owner, t, h):
        return self.advance(t, h)

    def ready(self, owner, preparation):
        self._begin()
        return 0 if preparation and self.kernel.refresh(self.x) != TAKEN else 1

    @cython.locals(i=cython.Py_ssize_t, x=cython.p_double, attributes=dict, names=list)
    def write(self, owner, preparation, slots, n, values):
        self._begin()
        x, attributes, names = self.x, self.kernel.attributes, preparation
        for i in range(n):              # the model's inputs and the kernel's (Model.writer, _begin)
            attributes[names[i]] = values[i]
            x[slots[i]] = values[i]
        self.kernel.through_valid = False
        return 1

    @cython.locals(kernel=Element, size=cython.Py_ssize_t)
    def undo(self):
        """The kernel as before its last :meth:`step`."""
        kernel = self.kernel
        size = self.n_slots * cython.sizeof(cython.double)
        memcpy(self.x, self.before, size)
        kernel.restore_from(self.before + size)
        kernel.through_valid = self.before[size + kernel.saved_size] != 0
        self.behind = True

    def hand_over(self):
        """The model given what the kernel holds, to take a step itself (the kernel reads it
        again after)."""
        self.sync()
        self.stale, self.stepped = True, False

    def sync(self):
        """The model given what the kernel holds."""
        if self.stale:
            return
        self._begin()
        if self.behind:
            self.kernel.write_model(self.x)
            self.behind = False

    def plan(self, names):
        """What :meth:`read` reads for the variables ``names``: (the slot of each, -1 for one
        that has none (a parameter: the model's), the names, whether one is a feedthrough output)."""
        return (tuple([self.slots.get(name, -1) for name in names]), tuple(names),
                not self.through.isdisjoint(names))

    @cython.locals(slots=tuple, names=tuple, through=cython.bint, values=list, i=cython.Py_ssize_t,
                   slot=cython.int, x=cython.p_double)
    def read(self, plan, convert):
        """The values of :meth:`plan`'s variables as ``convert`` (float, int, bool), the
        feedthrough outputs brought up to date first; None when the kernel leaves those to the
        model (one is not finite, or its friction resolution raises: the model words it)."""
        slots, names, through = plan
        self._begin()
        x = self.x
        if through and self.kernel.refresh(x) != TAKEN:
            return None
        values = []
        for i in range(len(slots)):
            slot = slots[i]
            if slot >= 0:
                values.append(x[slot] if convert is float else convert(x[slot]))
            else:
                values.append(convert(self.kernel.attributes[names[i]]))
        return values
