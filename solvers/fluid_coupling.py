"""The fluid coupling of a hydrodynamic torque converter: the torques the fluid applies to the
pump (impeller) and the turbine, from tables of the speed ratio SR = w_turbine / w_pump.

Definition (drive: the pump turns faster than the turbine, the same way)
    T     = (w_pump / K(SR))^2 = C(SR) w_pump^2,   C = 1 / K^2          (eq. 1)
    pump:    -T   (the fluid opposes the pump: the engine's load)
    turbine: +TR(SR) T   (the fluid drives the turbine, the torque multiplied by TR)
This is the steady-state characteristic Simscape Driveline's Torque Converter and Chrono's
ChShaftsTorqueConverter both take: the capacity factor K (rad/s/sqrt(N.m)) says how much
torque the pump absorbs at a speed, the torque ratio TR how much of it reaches the turbine (the
stator, held by its freewheel, takes the difference: TR - 1 times T).  At stall (SR = 0) the
turbine receives TR(0) T, the torque multiplication; the coupling point is the SR where TR
falls to 1, above it the converter works as a fluid coupling.

Tables (ConverterTable): breakpoints SR_1 < ... < SR_n < 1 with K_i > 0 and TR_i >= 0,
linear interpolation of K and TR between them, both held below SR_1.  Between SR_n and 1 the
capacity C = 1 / K^2 falls linearly from 1 / K_n^2 to 0 and TR holds TR_n           (eq. 2)
    C(SR) = (1 - SR) / ((1 - SR_n) K_n^2)      for SR_n <= SR <= 1:
at zero slip (SR = 1) the fluid no longer circulates and transmits nothing, so the torque
passes through 0 there, linearly in the slip (T = w_pump (w_pump - w_turbine) / ((1 - SR_n)
K_n^2)), as a fluid coupling's torque does near zero slip.  A table with K finite at SR = 1
(Chrono's) would make the torque jump where the flow reverses.

Reverse flow (our rule; continuous in both speeds, also through zero and a change of sign).
Whichever member turns faster drives the fluid (the larger |w|; the pump at a tie):
    a = the driver's speed, b = the follower's, r = b / a in [-1, 1],
    T = C(max(r, 0)) a^2,  the driver receives -sign(a) T,  the follower +sign(a) g(r) T   (eq. 3)
    pump drives:     g(r) = TR(r) for r >= 0;  g(r) = TR(0) + (TR(0) - 1) r for r < 0
    turbine drives:  g(r) = 1
- SR > 1, the turbine overrunning (coasting, engine braking): the turbine drives the fluid, the
  roles of the two members swap (r = w_pump / w_turbine = 1 / SR) and the pump receives the
  torque the turbine loses, TR = 1: the stator freewheels, nothing is multiplied.  This is
  Chrono's rule (coasting, its stator is inactive and passes no torque: TR = 1), but Chrono
  reflects the speed ratio (2 - SR) and keeps the pump's speed; we keep the driver's speed, so
  that a turbine spinning against a stopped pump is braked (T = C(0) w_turbine^2), where
  Chrono's torque would vanish with the pump's speed.  The same table C serves both ways:
  a real converter coasting has another capacity (Simscape's block models the coast mode,
  power from the turbine to the impeller, apart from the drive mode); coast tables of
  their own are left out here.
- Opposite directions (r < 0, e.g. the turbine rolled backwards while the pump drives): the
  table's stall values at r = 0 (Chrono clamps SR < 0 to stall likewise), with the pump's g
  going linearly from TR(0) at r = 0 to 1 at r = -1, where the two rules meet.
- w_pump < 0: the same rule (eq. 3 is odd in the speeds: reversing both reverses the torques);
  Chrono sets the torques to zero there, which is a jump.
Continuity: at |w_pump| = |w_turbine| with equal signs T = C(1) a^2 = 0 on both sides; with
opposite signs both sides give T = C(0) a^2 with g = 1; at r = 0 both branches of g agree.

Power: the fluid dissipates p_fluid = -(f_pump w_pump + f_turbine w_turbine), in eq. 3's
terms p_fluid = T (|a| - sign(a) g b):
- pump drives, r >= 0: T |a| (1 - r TR(r)) >= 0 exactly when the efficiency SR TR(SR) <= 1,
  which :meth:`ConverterTable.problems` requires over the whole table (a converter cannot
  deliver more power than it takes);
- turbine drives, r >= 0 (g = 1): T (|a| - |b|) >= 0 since |b| <= |a|;
- r < 0 (b against a): T (|a| + g |b|) > 0, g >= 0 between TR(0) and 1.

Jacobian (:func:`fluid_jacobian`): with r = b / a, d(C a^2)/da = 2 C a - C' b and
d(C a^2)/db = C' a; d(g C a^2)/da = g (2 C a - C' b) - C g' b and d(g C a^2)/db =
(g C' + C g') a, C' and g' the slopes of the table's segment at r (the segment above r at a
breakpoint).  :func:`fluid_rate` is the spectral radius of diag(1 / J) times it: the fastest
rate of the coupling's motion, which bounds an explicit step (fmus/torque_converter.py).
"""
from __future__ import annotations

import math

#: The smallest capacity factor a table takes [rad/s/sqrt(N.m)]: K = 1e-3 would absorb
#: 1e6 w^2 N.m (1e10 N.m at 100 rad/s), far beyond any converter (passenger cars' K(0) is about
#: 10 to 20); it keeps 1 / K^2 <= 1e6 finite with ample headroom.
K_MIN = 1e-3


class ConverterTable:
    """Breakpoints ``sr`` (strictly increasing, in [0, 1)) with the capacity factors ``k``
    (> 0, rad/s/sqrt(N.m)) and torque ratios ``tr`` (>= 0) at them (module docstring, eq. 2)."""

    def __init__(self, sr, k, tr):
        self.sr = [float(x) for x in sr]
        self.k = [float(x) for x in k]
        self.tr = [float(x) for x in tr]
        problems = self.problems(self.sr, self.k, self.tr)
        if problems:
            raise ValueError("; ".join(problems))
        n = len(self.sr)
        self.c_last = 1.0 / (self.k[-1] * self.k[-1])
        #: C' on SR_n .. 1 (eq. 2)
        self.c_last_slope = -self.c_last / (1.0 - self.sr[-1])
        self._k_slopes = [(self.k[i + 1] - self.k[i]) / (self.sr[i + 1] - self.sr[i]) for i in range(n - 1)]
        self._tr_slopes = [(self.tr[i + 1] - self.tr[i]) / (self.sr[i + 1] - self.sr[i]) for i in range(n - 1)]

    @staticmethod
    def problems(sr, k, tr, names=("SR", "K", "TR")) -> list[str]:
        """Why the breakpoints cannot be a converter's table, one message each naming the values
        (``names``: the stems of the parameters, members 1..n)."""
        s, kk, t = names
        n = len(sr)
        problems = []
        if not (len(k) == len(tr) == n >= 1):
            return [f"a table needs as many {s}, {kk} and {t} values, at least one (got {n}, {len(k)}, {len(tr)})"]
        values = [*sr, *k, *tr]
        if not all(math.isfinite(v) for v in values):
            return problems             # the range checks name the value that is not finite
        for i in range(1, n):
            if not sr[i] > sr[i - 1]:
                problems.append(f"{s}_{i + 1} = {sr[i]!r} must be greater than {s}_{i} = {sr[i - 1]!r} "
                                f"(speed-ratio breakpoints strictly increasing)")
        for i in range(n):
            if not 0.0 <= sr[i] < 1.0:
                problems.append(f"{s}_{i + 1} = {sr[i]!r} is outside [0, 1): the breakpoints lie below the "
                                f"zero-slip point SR = 1, where the fluid transmits nothing")
            if not k[i] >= K_MIN:
                problems.append(f"{kk}_{i + 1} = {k[i]!r} must be at least {K_MIN:g} rad/s/sqrt(N.m) (a capacity "
                                f"factor is > 0; K = {K_MIN:g} absorbs 1e6 w^2 N.m, beyond any converter)")
            if not tr[i] >= 0.0:
                problems.append(f"{t}_{i + 1} = {tr[i]!r} must be >= 0 (the turbine is driven the way the pump turns)")
        if problems:
            return problems
        # the efficiency SR TR(SR) <= 1 everywhere: on each segment TR is linear, so SR TR(SR) is a
        # quadratic whose largest value is at an end or at its vertex; below SR_1 it grows to
        # SR_1 TR_1, above SR_n to 1 * TR_n at SR = 1 (TR held, eq. 2)
        segments = [(sr[i], tr[i], sr[i + 1], tr[i + 1], f"between {s}_{i + 1} and {s}_{i + 2}")
                    for i in range(n - 1)] + [(sr[-1], tr[-1], 1.0, tr[-1], f"above {s}_{n} (TR held at {t}_{n})")]
        for x0, y0, x1, y1, where in segments:
            slope = (y1 - y0) / (x1 - x0)
            candidates = [x0, x1]
            if slope < 0.0:
                vertex = (slope * x0 - y0) / (2.0 * slope)       # d/dx x (y0 + slope (x - x0)) = 0
                if x0 < vertex < x1:
                    candidates.append(vertex)
            for x in candidates:
                eta = x * (y0 + slope * (x - x0))
                if eta > 1.0 + 1e-12:
                    problems.append(f"the efficiency SR * TR = {eta:.6g} > 1 at SR = {x:.6g} {where} "
                                    f"({t} from {y0!r} to {y1!r}): a converter cannot deliver more power "
                                    f"than it takes; allowed SR * TR <= 1")
                    break
        return problems

    def _segment(self, r: float) -> int:
        """i with SR_i <= r < SR_(i+1) (0-based), -1 below SR_1, n - 1 at or above SR_n."""
        sr = self.sr
        if r < sr[0]:
            return -1
        i = 0
        n = len(sr)
        while i + 1 < n and r >= sr[i + 1]:
            i += 1
        return i

    def capacity(self, r: float) -> tuple[float, float]:
        """(C(r), C'(r)) for r in [0, 1]: C = 1 / K^2 (eq. 1, 2)."""
        i = self._segment(r)
        if i < 0:
            k = self.k[0]
            return 1.0 / (k * k), 0.0
        if i == len(self.sr) - 1:
            return self.c_last * ((1.0 - r) / (1.0 - self.sr[-1])), self.c_last_slope
        slope = self._k_slopes[i]
        k = self.k[i] + (self.k[i + 1] - self.k[i]) * ((r - self.sr[i]) / (self.sr[i + 1] - self.sr[i]))
        return 1.0 / (k * k), -2.0 * slope / (k * k * k)

    def ratio(self, r: float) -> tuple[float, float]:
        """(TR(r), TR'(r)) for r in [0, 1] (eq. 2)."""
        i = self._segment(r)
        if i < 0:
            return self.tr[0], 0.0
        if i == len(self.sr) - 1:
            return self.tr[-1], 0.0
        tr = self.tr[i] + (self.tr[i + 1] - self.tr[i]) * ((r - self.sr[i]) / (self.sr[i + 1] - self.sr[i]))
        return tr, self._tr_slopes[i]


def _law(table: ConverterTable, w_pump: float, w_turbine: float):
    """(pump drives, a, b, r, C, C', g, g') of eq. 3 at these speeds; None when both are 0."""
    pump_drives = abs(w_pump) >= abs(w_turbine)
    a, b = (w_pump, w_turbine) if pump_drives else (w_turbine, w_pump)
    if a == 0.0:
        return None
    r = min(b / a, 1.0)             # |b| <= |a|: r in [-1, 1] (min: a rounding above 1)
    if r >= 0.0:
        c, dc = table.capacity(r)
    else:
        c, dc = table.capacity(0.0)[0], 0.0
    if not pump_drives:
        g, dg = 1.0, 0.0
    elif r >= 0.0:
        g, dg = table.ratio(r)
    else:
        g0 = table.ratio(0.0)[0]
        g, dg = g0 + (g0 - 1.0) * r, g0 - 1.0
    return pump_drives, a, b, r, c, dc, g, dg


def fluid_torques(table: ConverterTable, w_pump: float, w_turbine: float) -> tuple[float, float]:
    """(torque on the pump, torque on the turbine) [N.m], each positive accelerating its member
    (eq. 3; in drive (-T, TR T) with T = (w_pump / K(SR))^2)."""
    law = _law(table, w_pump, w_turbine)
    if law is None:
        return 0.0, 0.0
    pump_drives, a, _, _, c, _, g, _ = law
    torque = c * a * a                       # T = C a^2 >= 0
    driver = -torque if a > 0.0 else torque
    follower = -g * driver
    return (driver, follower) if pump_drives else (follower, driver)


def fluid_jacobian(table: ConverterTable, w_pump: float, w_turbine: float):
    """[[d f_pump / d w_pump, d f_pump / d w_turbine], [d f_turbine / d w_pump, d f_turbine / d
    w_turbine]] of :func:`fluid_torques` (module docstring, "Jacobian"); zeros at rest."""
    law = _law(table, w_pump, w_turbine)
    if law is None:
        return [[0.0, 0.0], [0.0, 0.0]]
    pump_drives, a, b, _, c, dc, g, dg = law
    sign = 1.0 if a > 0.0 else -1.0
    t_a = 2.0 * c * a - dc * b               # d(C a^2)/da
    t_b = dc * a                             # d(C a^2)/db
    driver = (-sign * t_a, -sign * t_b)      # d f_driver / d(a, b)
    follower = (sign * (g * t_a - c * dg * b), sign * (g * dc + c * dg) * a)
    if pump_drives:                          # (a, b) = (w_pump, w_turbine)
        return [list(driver), list(follower)]
    return [[follower[1], follower[0]], [driver[1], driver[0]]]     # (a, b) = (w_turbine, w_pump)


def fluid_rate(table: ConverterTable, j_pump: float, j_turbine: float, w_pump: float, w_turbine: float) -> float:
    """The spectral radius of diag(1 / J_pump, 1 / J_turbine) times the Jacobian [1/s]: the
    fastest rate of the members' motion under the fluid torques alone (inf when it overflows,
    nan when it cannot be computed)."""
    (a, b), (c, d) = fluid_jacobian(table, w_pump, w_turbine)
    a, b, c, d = a / j_pump, b / j_pump, c / j_turbine, d / j_turbine
    half_trace, half_gap = 0.5 * (a + d), 0.5 * (a - d)
    discriminant = half_gap * half_gap + b * c
    if discriminant >= 0.0:                  # real eigenvalues half_trace +- sqrt(discriminant)
        return abs(half_trace) + math.sqrt(discriminant)
    if discriminant < 0.0:                   # complex pair: |lambda|^2 = det
        return math.sqrt(a * d - b * c)
    return math.nan
