"""Synchronizer: an idler gear and a shaft, a cone clutch that brings them to one speed and dog
teeth that then lock them, the element of a manual gearbox's gear change.

Members (positive direction and torques as every body element):
    J_gear w_gear'   = tau_gear  - tau_cone - tau_dog
    J_shaft w_shaft' = tau_shaft + tau_cone + tau_dog
``gear``: the idler gear and what turns with it (its cone, its dog teeth, the gear train back to
the clutch disc, reflected); ``shaft``: the shaft with the hub and the sleeve.  ``tau_cone`` and
``tau_dog`` are the torques the cone and the dogs pass from the gear to the shaft; the slip is
w_slip = w_gear - w_shaft.

Sources.  The cone torque, the blocking and the release condition are the textbook analysis
of a cone synchronizer (e.g. Naunheimer et al., Automotive Transmissions, on synchronizers).
Simscape Driveline's Synchronizer block is the same arrangement: a cone clutch, then a dog
clutch that locks once the slip is below a speed tolerance and the shift linkage has travelled
to the teeth; here the slip of a stuck cone is exactly zero, so no tolerance is needed.

Cone.  The sleeve pushes the blocker ring onto the gear's cone
with the axial force f_sleeve; on a cone of half angle alpha_cone the surface carries the
normal force f_sleeve / sin(alpha_cone) (axial equilibrium), so the friction at the mean cone
radius r_cone gives the capacity
    T_cone = mu r_cone f_sleeve / sin(alpha_cone)                               (1)
The cone is the friction system of solvers.friction (Biagiotti-Zanasi, exact stick/slip): one
interface between the two members (a two-body chain: their mean motion and their slip), with
Clutch's law at mu_s = mu_k = mu, r_eff = r_cone / sin(alpha_cone), one surface and no Stribeck
drop or viscous part: slipping it passes T_cone sign(w_slip), stuck it holds up to T_cone.  The
slip reaches zero at its exact instant inside a step; from free members with constant torques
that is after
    t_sync = J_eff |w_slip(0)| / (T_cone - sign(w_slip) (J_shaft tau_gear - J_gear tau_shaft)
             / (J_gear + J_shaft)),   J_eff = J_gear J_shaft / (J_gear + J_shaft)     (2)
(J_eff |w_slip| / T_cone without external torques; J_gear |w_slip| / T_cone when tau_shaft =
-T_cone sign(w_slip) cancels the cone's torque on the shaft and holds its speed, as a driven
shaft).  A cone whose angle is within its friction angle (tan(alpha_cone) <= mu) locks itself
and does not release, which no synchronizer is designed to do: such parameters are refused,
which also bounds (1): mu / sin(alpha_cone) < sqrt(1 + mu^2).

Sleeve travel (``x_engage`` [m], ``m_sleeve`` [kg]).  While the cone slips the blocker ring,
dragged round by the cone torque, holds the sleeve on its chamfers: the sleeve cannot move
(the blocking of a well-designed ring is taken to hold, not computed).  At zero slip the cone
torque vanishes, the ring is turned back and the sleeve passes: from then on it travels
    x_sleeve'' = f_sleeve / m_sleeve                                             (3)
from where it was blocked, with the speed it had, and the dog teeth are engaged when it has
travelled x_engage.  The contract gives the sleeve a force, not a position, and a force only
says how far the sleeve goes through a mass: m_sleeve (the sleeve with the shift fork and the
linkage as seen at the sleeve) is the one parameter beyond the contract, and x_engage the
contract's "sleeve travel to engage".  With the inputs held over a communication step, a cone
(one interface) that is stuck holds to the end of the step: its stuck torque M^-1 g is
constant and within T_cone when it locked; one that breaks away at the start accelerates away
from zero slip.  So a cone slipping at the end of a step has blocked the sleeve throughout it,
and a cone stuck at the end has been stuck since the instant t_lock its slip reached zero (the
last event of the step) or since the start.  The sleeve travels over h - t_lock, in closed
form by (3), and the dogs are engaged at the end of the step when x_sleeve >= x_engage.
Inside the step nothing else changes at the instant they engage: the members already turn
together on the stuck cone, whose torque the dogs take over.  A cone that slips
again before the dogs engage (the torques exceed T_cone) blocks the sleeve again where it is
(its speed 0; a simplification: the teeth it has reached stop it) until the slip returns to
zero.

Dogs.  Engaged dogs are a rigid connection: the same interface with an unlimited capacity
(T_s = T_c = inf), stuck at zero slip, passing the torque
    tau_dog = (J_shaft tau_gear - J_gear tau_shaft) / (J_gear + J_shaft)              (4)
that turns both members at (tau_gear + tau_shaft) / (J_gear + J_shaft) (solvers.friction's
eq. 19); tau_cone is then 0: the sleeve has passed the ring, whose cone is no longer pressed.
They engage only on a stuck cone, whose slip solvers.friction keeps at exactly 0.0 (it is not
integrated while stuck): no slip tolerance, no velocity band.  Engagement is decided once, by
x_sleeve >= x_engage from (3), so it cannot chatter: nothing takes it back but the release.

Release.  The contract's f_sleeve is >= 0: the fork pushes the sleeve towards this gear, and
f_sleeve = 0 is the sleeve let go, the shift to another gear or to neutral.  The detent spring
then returns the sleeve to neutral, taken at once: with f_sleeve = 0 the dogs are out
(``engaged`` false at once, a feedthrough of f_sleeve), the cone open (T_cone = 0), the sleeve
at x_sleeve = 0, and the next push starts a new synchronization.  Engaged dogs hold while
f_sleeve > 0, whatever it is.  A two-speed upshift: the old gear's f_sleeve to 0 (with the main
clutch open), the new gear's f_sleeve > 0 (its cone synchronizes, its dogs engage), the main
clutch closes.

Energy: solvers.friction's loss, the work of the held torques minus the change of kinetic
energy (e_loss), is the cone's: a stuck cone and engaged dogs dissipate nothing, so over a
synchronization without external torques e_loss is the kinetic energy lost,
J_eff w_slip(0)^2 / 2.

Left out: the free travel before the ring touches the cone and the pre-synchronization detent
(the cone acts as soon as f_sleeve > 0); the blocking condition of the ring's chamfers (taken
to hold); the second bump, the dog teeth meeting tooth on tooth and turning into a gap (taken
to meet a gap); the oil's drag on the gear; a static coefficient above the kinetic one (the
contract's one mu); the back taper that keeps loaded dogs from walking out, and the time of
the sleeve's return (released dogs let go at once whatever they carry: the master unloads them
first, with the main clutch open).
"""
from __future__ import annotations

import math
from typing import NamedTuple

from drivetrain_fmu.solvers.contract import SolverError
from drivetrain_fmu.solvers.friction import STUCK, ChainState, FrictionChain, InterfaceLaw

from .clutch import FrictionElement
from .variables import BOOLEAN, inertia, input_, mass, output, parameter, with_second_torques

_INPUTS = ("tau_gear", "tau_shaft", "f_sleeve")
#: engaged dogs: an interface of unlimited static and kinetic capacity (module docstring, (4))
_RIGID = ([math.inf], [math.inf])


class SyncState(NamedTuple):
    """The friction system's state (gear and shaft), whether the dogs are engaged, and the
    sleeve's travel from its blocked position [m] and its speed [m/s]."""

    chain: ChainState
    engaged: bool
    x_sleeve: float
    v_sleeve: float


class Synchronizer(FrictionElement):
    """Cone synchronizer and dog clutch (defaults: the gear at 150 rad/s, the shaft at 100 rad/s,
    the sleeve pushed with 500 N: T_cone = 16.41 N.m synchronizes them after 25.4 ms, the dogs
    engage 3.16 ms later)."""

    description = "Synchronizer: idler gear and shaft, cone clutch with exact stick/slip, then dog teeth"
    DEFAULT_STOP = 0.1
    DEFAULT_STEP = 1e-3
    MEMBERS = ("_gear", "_shaft")
    TAGS = ("",)
    VARIABLES = with_second_torques((
        inertia("J_gear", "inertia of the idler gear and what turns with it (the gear train back to the "
                "clutch disc, reflected)", 0.01),
        inertia("J_shaft", "inertia of the shaft with the hub and the sleeve", 0.05),
        parameter("mu", "1", "friction coefficient of the cone (below tan(alpha_cone): a cone within its "
                  "friction angle locks itself)", 0.1, low=0.0, low_open=True),
        parameter("r_cone", "m", "mean radius of the cone's friction surface", 0.04, low=0.0, low_open=True),
        parameter("alpha_cone", "rad", "half angle of the cone (7 degrees by default); T_cone = mu r_cone "
                  "f_sleeve / sin(alpha_cone)", 0.12217304763960307, low=0.0, low_open=True, high=math.pi / 2),
        parameter("x_engage", "m", "sleeve travel from its blocked position (on the ring's chamfers) to "
                  "engaged dogs", 0.005, low=0.0),
        mass("m_sleeve", "mass of the sleeve with the shift fork and linkage as seen at the sleeve (turns "
             "f_sleeve into travel)", 0.5),
        parameter("phi_gear_start", "rad", "initial angle of the gear", 0.0),
        parameter("w_gear_start", "rad/s", "initial speed of the gear", 150.0),
        parameter("phi_shaft_start", "rad", "initial angle of the shaft", 0.0),
        parameter("w_shaft_start", "rad/s", "initial speed of the shaft", 100.0),
        parameter("engaged_start", None, "the dogs start engaged (needs w_gear_start == w_shaft_start; "
                  "released at once if f_sleeve = 0)", False, type=BOOLEAN),
        input_("tau_gear", "N.m", "external torque on the gear, positive accelerating it"),
        input_("tau_shaft", "N.m", "external torque on the shaft, positive accelerating it"),
        input_("f_sleeve", "N", "axial force pushing the sleeve towards this gear; 0 releases the sleeve "
               "(dogs out, cone open)", 500.0, low=0.0),
        output("phi_gear", "rad", "angle of the gear"),
        output("w_gear", "rad/s", "speed of the gear"),
        output("phi_shaft", "rad", "angle of the shaft"),
        output("w_shaft", "rad/s", "speed of the shaft"),
        output("w_slip", "rad/s", "slip speed of the synchronizer, w_gear - w_shaft"),
        output("tau_cone", "N.m", "torque the cone passes from the gear to the shaft (0 once the dogs are "
               "engaged)", depends=_INPUTS),
        output("tau_dog", "N.m", "torque the engaged dogs pass from the gear to the shaft (0 while not "
               "engaged)", depends=_INPUTS),
        output("engaged", None, "the dog teeth are engaged: gear and shaft joined rigidly", type=BOOLEAN,
               depends=("f_sleeve",)),
        output("locked", None, "gear and shaft turn together: the cone holds them stuck or the dogs are "
               "engaged", type=BOOLEAN, depends=_INPUTS),
        output("x_sleeve", "m", "sleeve travel since the cone synchronized (x_engage: engaged; 0 released)",
               depends=("f_sleeve",)),
        output("p_loss", "W", "power dissipated by the cone", depends=("f_sleeve",)),
        output("e_loss", "J", "energy dissipated by the cone since the start"),
    ), ("tau_gear", "tau_shaft"))

    # ------------------------------------------------------------------ parameters
    def cross_check(self):
        problems = []
        # only within the declared ranges (outside them the range check names the value)
        in_range = 0.0 < self.alpha_cone <= math.pi / 2 and 0.0 < self.mu < math.inf
        if in_range and not math.tan(self.alpha_cone) > self.mu:
            problems.append(f"alpha_cone = {self.alpha_cone!r} rad must exceed the friction angle atan(mu) = "
                            f"{math.atan(self.mu)!r} rad of mu = {self.mu!r} (a cone within its friction "
                            f"angle locks itself); allowed range (atan(mu), pi/2]")
        if self.engaged_start and self.w_gear_start != self.w_shaft_start:
            problems.append(f"engaged_start = true needs w_gear_start == w_shaft_start "
                            f"(got {self.w_gear_start!r} and {self.w_shaft_start!r})")
        return problems

    def build_system(self):
        # (1): mu_s = mu_k = mu on the lever r_cone / sin(alpha_cone), one surface, Coulomb only
        lever = self.r_cone / math.sin(self.alpha_cone)
        law = InterfaceLaw(self.mu, self.mu, lever, 1.0, 0.0, 1.0, 0.0)
        return FrictionChain([self.J_gear, self.J_shaft], [law])

    def clamp_names(self):
        return ["f_sleeve"]

    # ------------------------------------------------------------------ state
    def initial_state(self):
        chain = super().initial_state()
        engaged = bool(self.engaged_start)
        return SyncState(chain, engaged, self.x_engage if engaged else 0.0, 0.0)

    def encode_state(self, state):
        return [state.chain.to_json(), state.engaged, state.x_sleeve, state.v_sleeve]

    def decode_state(self, data):
        chain, engaged, x_sleeve, v_sleeve = data
        return SyncState(ChainState.from_json(chain), bool(engaged), float(x_sleeve), float(v_sleeve))

    # ------------------------------------------------------------------ step
    def prepare(self, inputs):
        """(torques, T_cone static and kinetic (1), solvers.friction step_inputs, f_sleeve)."""
        torques, clamps = self._pick_torques(inputs), self._pick_clamps(inputs)
        t_s, t_c = self.chain.capacities(clamps)
        (f_sleeve,) = clamps
        return torques, t_s, t_c, self.chain.step_inputs(torques), f_sleeve

    @staticmethod
    def _capacities(prepared, engaged):
        """The interface's (T_s, T_c): unlimited while the dogs are engaged and the sleeve is
        pushed, the cone's (1) otherwise (released: f_sleeve = 0, T_cone = 0)."""
        _, t_s, t_c, _, f_sleeve = prepared
        return _RIGID if engaged and f_sleeve > 0.0 else (t_s, t_c)

    def step(self, t, h, prepared):
        torques, t_s, _, step_inputs, f_sleeve = prepared
        chain0, engaged, x, v = self.state
        if not t_s[0] < math.inf:
            raise SolverError(f"the cone's capacity mu r_cone f_sleeve / sin(alpha_cone) = {t_s[0]!r} N.m at "
                              f"f_sleeve = {f_sleeve!r} N is not finite")
        start = self._resolution if self.fresh else None   # what the feedthrough resolved here
        if f_sleeve == 0.0:                 # released: the sleeve back in neutral, dogs out, cone open
            engaged, x, v = False, 0.0, 0.0
        capacity_s, capacity_c = self._capacities(prepared, engaged)
        events = []
        chain1 = self.chain.advance(chain0, torques, capacity_s, capacity_c, h, events, start=start,
                                    inputs=step_inputs)
        if engaged or f_sleeve == 0.0:
            return SyncState(chain1, engaged, x, v)
        if chain1.modes[0] != STUCK:        # the cone slips at the end: the ring blocks the sleeve
            return SyncState(chain1, False, x, 0.0)
        # stuck from the last event (the slip reaching zero) or from the start (module docstring)
        t_lock = events[-1][0] if events else 0.0
        dt = h - t_lock
        a = f_sleeve / self.m_sleeve                                # (3)
        x_end = x + (v * dt + 0.5 * a * dt * dt)
        if x_end >= self.x_engage:
            return SyncState(chain1, True, self.x_engage, 0.0)
        return SyncState(chain1, False, x_end, v + a * dt)

    # ------------------------------------------------------------------ outputs
    def outputs(self):
        chain = self.state.chain
        phi_gear, phi_shaft, w_gear, w_shaft = self.chain.member_motion(chain)
        values = (phi_gear, w_gear, phi_shaft, w_shaft, chain.s[0], chain.e_loss)
        (self.phi_gear, self.w_gear, self.phi_shaft, self.w_shaft, self.w_slip, self.e_loss) = values
        return values

    def feedthrough(self, prepared):
        _, _, _, (_, g), f_sleeve = prepared
        chain, engaged, x, _ = self.state
        engaged = engaged and f_sleeve > 0.0
        t_s, t_c = self._capacities(prepared, engaged)
        modes, tau = self._resolution = self.chain.resolve(chain.s, chain.modes, g, t_s, t_c)
        torque = tau[0]
        return {"tau_cone": 0.0 if engaged else torque, "tau_dog": torque if engaged else 0.0,
                "engaged": engaged, "locked": modes[0] == STUCK, "x_sleeve": x if f_sleeve > 0.0 else 0.0,
                "p_loss": torque * chain.s[0]}
