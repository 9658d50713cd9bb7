"""Contact laws of solvers.elasto_backlash, coupled to two free inertias as a master couples
the ElastoBacklash FMU to two Inertia FMUs: the contact torque is evaluated at each
communication point from the bodies' angles and speeds there and held over the step
(zero-order hold), each body moves exactly under its held torque.

The step-mean torque (``mean_torque``, T_comm > 0) is checked against a quadrature of the
sampled law along the linear twist, its limit T -> 0, and the energy of an undamped rattle.

Tolerances: the held torque is the only approximation.  Over a contact lasting T it
changes the relative speed by a fraction of order h / T (h the communication step): each
test states its h / T and the deviation measured, and allows a little more than measured.
"""
import math

import pytest

from drivetrain_fmu.solvers.elasto_backlash import INITIAL, ContactMemory, FloresContact, LimitedSpringDamper

J1, J2 = 1.0, 2.0
M_EFF = J1 * J2 / (J1 + J2)        # inertia of the relative motion phi_rel = phi_1 - phi_2


def cosimulate(law, phi_1, w_1, phi_2, w_2, h, t_end):
    """Samples (t, w_1, w_2, phi_rel, tau, side) at the communication points 0, h, ..., t_end."""
    memory, samples = INITIAL, []
    for i in range(int(round(t_end / h)) + 1):
        phi_rel, w_rel = phi_1 - phi_2, w_1 - w_2
        contact = law.contact(memory, phi_rel, w_rel)
        samples.append((i * h, w_1, w_2, phi_rel, contact.tau, contact.side))
        memory = law.remember(memory, phi_rel, w_rel)
        a_1, a_2 = -contact.tau / J1, contact.tau / J2      # tau_1 = -tau, tau_2 = +tau
        phi_1, w_1 = phi_1 + w_1 * h + 0.5 * a_1 * h * h, w_1 + a_1 * h
        phi_2, w_2 = phi_2 + w_2 * h + 0.5 * a_2 * h * h, w_2 + a_2 * h
    return samples


def kinetic_energy(sample):
    _, w_1, w_2, *_ = sample
    return 0.5 * (J1 * w_1 * w_1 + J2 * w_2 * w_2)


def momentum(sample):
    return J1 * sample[1] + J2 * sample[2]


def test_a_contact_starting_loaded_at_rest_pushes_the_bodies_apart():
    """Review defect: the bodies start at rest, 0.05 rad deep in the contact (k = 1e4,
    n = 1.5, e = 0.5, b = 0.01).  Before the fix the impact speed of this contact was
    w_impact_min (1e-3 rad/s, no impact was seen), so c = 8 (1 - e) k / (5 e 1e-3) = 1.6e7:
    once the bodies separated faster than 5 e w_impact_min / (8 (1 - e)) = 6.25e-4 rad/s the
    damping cancelled the spring, the torque was cut to zero and they crept out at that
    speed, the stored energy lost.

    Now the contact is unloaded with the torque e^2 k p^n (energetic restitution e): it
    returns e^2 of the stored energy E0 = k p0^(n+1) / (n+1), so the bodies leave the contact
    (at 57 ms) with the relative speed e sqrt(2 E0 / M_EFF).  h / T = 1e-5 s / 57 ms = 1.8e-4:
    measured deviation 1.2e-4 (2.5e-4 at 2e-5 s: first order in h), allowed 1e-3.  Momentum:
    the torques act pairwise, kept to rounding (1e-12 of the exit momentum of body 2).
    Energy (kinetic + stored k p^(n+1) / (n+1)) never grows by more than the held torque can
    feed in one step: at the first step k p0^n held while p falls (measured 1.2e-13 J), at
    the last the torque of the last point in contact, p <= v_exit h, held on past p = 0
    (measured 2.9e-11 J): allowed k (v_exit h)^(n+1) = 6e-9 J per step (E0 = 2.2 J).
    The energy left after the contact is e^2 E0 to the tolerance of the speed.  The torque
    pushes (s tau > 0) while p > 0: no creeping with zero torque."""
    k, n, e, b, p0 = 1e4, 1.5, 0.5, 0.01, 0.05
    law = FloresContact(b=b, k=k, n_exp=n, e_rest=e, w_impact_min=1e-3)
    samples = cosimulate(law, phi_1=b + p0, w_1=0.0, phi_2=0.0, w_2=0.0, h=1e-5, t_end=0.06)
    stored = [k * max(abs(s[3]) - b, 0.0) ** (n + 1) / (n + 1) for s in samples]
    e0 = stored[0]
    v_exit = e * math.sqrt(2 * e0 / M_EFF)
    exit = next((s for s in samples if s[5] == 0), None)
    assert exit is not None, "the contact never opened"
    _, w_1, w_2, *_ = exit
    assert w_1 - w_2 == pytest.approx(-v_exit, rel=1e-3)
    assert all(abs(momentum(s)) <= 1e-12 * J2 * v_exit for s in samples)
    energy = [kinetic_energy(s) + u for s, u in zip(samples, stored)]
    held_work = k * (v_exit * 1e-5) ** (n + 1)
    assert all(later <= earlier + held_work for earlier, later in zip(energy, energy[1:]))
    assert energy[-1] <= e * e * e0 * (1 + 1e-3)
    assert all(s[4] * s[5] > 0.0 for s in samples if abs(s[3]) > b)


def contact_phase(samples):
    """(samples in contact, the first sample after it) of the first contact."""
    start = next(i for i, s in enumerate(samples) if s[5])
    end = next(i for i in range(start, len(samples)) if not samples[i][5])
    return samples[start:end], samples[end]


def test_msl_law_undamped_contact_is_half_a_spring_period_and_elastic():
    """Law 2 with d = 0: a linear spring c = 1e4 N.m/rad between the two inertias, entered
    at 1 rad/s from the middle of the dead zone (b = 0.01).  The contact lasts half a period
    pi sqrt(M_EFF / c) = 25.65 ms and the bodies leave with the entry speed reversed.
    h = 1e-5 s: the contact is sampled at points h apart, so its measured length is within
    h of the true one, plus the held torque's shift; measured 2e-6 s, allowed 2 h.  The held
    torque feeds energy in (explicit coupling of an undamped spring): exit speed measured
    1.0006 times the entry speed (h omega = 1.2e-3), allowed 2e-3.  Momentum kept to rounding."""
    c, b, v0, h = 1e4, 0.01, 1.0, 1e-5
    samples = cosimulate(LimitedSpringDamper(b=b, c=c, d=0.0), 0.0, v0, 0.0, 0.0, h, 0.06)
    inside, after = contact_phase(samples)
    assert len(inside) * h == pytest.approx(math.pi * math.sqrt(M_EFF / c), abs=2 * h)
    assert after[1] - after[2] == pytest.approx(-v0, rel=2e-3)
    assert all(abs(momentum(s) - J1 * v0) <= 1e-12 * J1 * v0 for s in samples)
    assert all(s[4] * s[5] >= 0.0 for s in samples)


def msl_exit_speed(c, d, v0):
    """Exit speed of an MSL contact entered at v0, from its piecewise solution: while the
    damper would push harder than the spring (d x' > c x) the torque is 2 c x, an undamped
    oscillation x = v0 sin(w2 t) / w2, w2 = sqrt(2 c / M_EFF), until tan(w2 t1) = d w2 / c;
    then M_EFF x'' = -(c x + d x') (scipy, rtol 1e-12) until c x + d x' = 0, after which the
    torque is zero and the bodies leave at that speed."""
    from scipy.integrate import solve_ivp

    w2 = math.sqrt(2 * c / M_EFF)
    t1 = math.atan(d * w2 / c) / w2
    x1, v1 = v0 * math.sin(w2 * t1) / w2, v0 * math.cos(w2 * t1)

    def opens(t, y):
        return c * y[0] + d * y[1]
    opens.terminal, opens.direction = True, -1
    run = solve_ivp(lambda t, y: (y[1], -(c * y[0] + d * y[1]) / M_EFF), (0.0, 1.0), (x1, v1),
                    events=opens, rtol=1e-12, atol=1e-15)
    return -run.y_events[0][0][1]


def test_msl_law_damped_contact_loses_the_energy_of_the_limited_damper_and_never_pulls():
    """Law 2 with c = 1e4 N.m/rad, d = 30 N.m.s/rad, entered at 1 rad/s: the exit speed of
    the piecewise solution (msl_exit_speed, 0.633 of the entry speed) and so the energy lost,
    M_EFF (v0^2 - v_exit^2) / 2.  h = 1e-5 s (h w2 = 1.7e-3): exit speed measured within
    6e-4 of v0, allowed 2e-3 v0; loss within 1e-3 of the kinetic energy of the relative
    motion.  Over the contact the torque pushes or is zero (s tau >= 0) and never exceeds
    2 c p (the damper limited by the spring); the energy (kinetic + c p^2 / 2) never grows
    by more than the held torque 2 c p <= 2 c v0 h can feed in a step, c (v0 h)^2 per step."""
    c, d, b, v0, h = 1e4, 30.0, 0.01, 1.0, 1e-5
    samples = cosimulate(LimitedSpringDamper(b=b, c=c, d=d), 0.0, v0, 0.0, 0.0, h, 0.06)
    inside, after = contact_phase(samples)
    v_exit = msl_exit_speed(c, d, v0)
    assert 0.0 < v_exit < v0
    assert -(after[1] - after[2]) == pytest.approx(v_exit, abs=2e-3 * v0)
    loss = 0.5 * M_EFF * (v0 ** 2 - (after[1] - after[2]) ** 2)
    assert loss == pytest.approx(0.5 * M_EFF * (v0 ** 2 - v_exit ** 2), abs=1e-3 * 0.5 * M_EFF * v0 ** 2)
    assert all(0.0 <= s[4] * s[5] <= 2 * c * (abs(s[3]) - b) for s in inside)
    assert all(s[4] == 0.0 for s in samples if not s[5])
    energy = [kinetic_energy(s) + 0.5 * c * max(abs(s[3]) - b, 0.0) ** 2 for s in samples]
    assert all(later <= earlier + c * (v0 * h) ** 2 for earlier, later in zip(energy, energy[1:]))
    assert all(abs(momentum(s) - J1 * v0) <= 1e-12 * J1 * v0 for s in samples)


def test_flores_impact_keeps_momentum_and_loses_energy():
    """Law 1 (k = 1e6, n = 1.5, e = 0.5), an impact entered at 1 rad/s from the dead zone:
    its impact speed is measured, the Flores damping acts.  The bodies part with about e
    times the entry speed (the Flores law gives e only approximately: measured 0.471,
    allowed 0.45 .. 0.55), momentum kept to rounding, and the energy after the contact is
    below the energy before (kinetic + k p^(n+1) / (n+1))."""
    k, n, e, b, v0 = 1e6, 1.5, 0.5, 0.01, 1.0
    samples = cosimulate(FloresContact(b=b, k=k, n_exp=n, e_rest=e, w_impact_min=1e-3), 0.0, v0, 0.0, 0.0,
                         5e-6, 0.03)
    inside, after = contact_phase(samples)
    assert -(after[1] - after[2]) / v0 == pytest.approx(e, abs=0.05)
    assert all(abs(momentum(s) - J1 * v0) <= 1e-12 * J1 * v0 for s in samples)
    assert kinetic_energy(after) < kinetic_energy(samples[0])
    assert all(s[4] * s[5] >= 0.0 for s in samples)


# ---------------------------------------------------------------- step-mean contact torque
B = 0.01
FLORES_DAMPED = FloresContact(b=B, k=1e4, n_exp=1.5, e_rest=0.5, w_impact_min=1e-3)
FLORES_DEEP = FloresContact(b=B, k=1e4, n_exp=2.7, e_rest=0.8, w_impact_min=1e-3)
MSL_DAMPED = LimitedSpringDamper(b=B, c=1e4, d=50.0)       # knee |d p'| = c p at p = 5e-3 |w_rel|
LAWS = {"flores": FLORES_DAMPED, "flores n=2.7": FLORES_DEEP, "msl": MSL_DAMPED}
#: (name, memory at the point, phi_rel, w_rel, T): each kind of path the mean integrates over
PATHS = [
    ("inside the gap", ContactMemory(0, 0.0), -0.004, 0.5, 0.01),
    ("in contact, pressing in (impact measured)", ContactMemory(1, 0.8), 0.013, 0.4, 0.01),
    ("in contact, unloading (impact measured)", ContactMemory(1, 0.8), 0.02, -0.3, 0.02),
    ("in contact, no impact measured, unloading", INITIAL, -0.025, 0.5, 0.02),
    ("gap into contact", ContactMemory(0, 0.0), 0.004, 1.0, 0.02),
    ("contact out into the gap", ContactMemory(-1, 3.0), -0.016, 1.0, 0.01),
    ("across the whole gap", ContactMemory(1, 0.6), 0.015, -1.0, 0.04),
    ("across the whole gap, at once from the first point", INITIAL, -0.012, 2.0, 0.015),
]


def path_quadrature(law, memory, phi_rel, w_rel, t_comm, n=50_000):
    """Midpoint rule of the sampled contact torque along phi_rel + w_rel s, s in [0, t_comm]:
    each point with the memory a communication point there would have (the given one on
    the start point's side; on another side the point before lay outside that contact, so
    the contact is an impact at the penetration speed).  (mean, largest |torque| met)."""
    start_side = law.contact(memory, phi_rel, w_rel).side
    entered = ContactMemory(0, 0.0)
    total, largest = 0.0, 0.0
    for i in range(n):
        phi = phi_rel + w_rel * t_comm * (i + 0.5) / n
        contact = law.contact(memory, phi, w_rel)
        if contact.side and contact.side != start_side:
            contact = law.contact(entered, phi, w_rel)
        total += contact.tau
        largest = max(largest, abs(contact.tau))
    return total / n, largest


@pytest.mark.parametrize("path", PATHS, ids=[p[0] for p in PATHS])
@pytest.mark.parametrize("name", LAWS)
def test_step_mean_torque_is_the_mean_of_the_torque_along_the_linear_twist(name, path):
    """The step-mean torque equals a 50000-point midpoint quadrature of the sampled law along
    the twist moving at w_rel over T, for paths inside the gap, in contact either way (with and
    without a measured impact), from the gap into the contact, out of it, and across the whole
    gap (law 1 with n = 1.5 and 2.7, law 2 across its knee).

    Tolerance.  Along the path the torque is continuous (0 at p = 0 for both laws) and smooth
    but for at most three kinks (the gap edges, law 2's knee).  The composite midpoint rule
    errs on the mean by at most T V / (8 N^2), V the total variation of d tau/ds (kinks
    included); on each piece |d tau/ds| T <= m tau_max |travel| / p_max (law 1: tau = K p^n,
    m = n; law 2: m = 2, the slope 2 c below the knee), so T V <= 4 m tau_max |travel| / p_max.
    Here m <= 2.7 and |travel| / p_max <= 6: at most 3.3e-9 tau_max, allowed 1e-8 tau_max
    (tau_max the largest |torque| along the path).  Measured at most 1.6e-10 tau_max, falling
    as 1/N^2 (1e-9 at N = 20000): the quadrature's own error; 1e-16 where law 2's torque is
    affine along the path (the midpoint rule is exact there)."""
    law, (_, memory, phi_rel, w_rel, t_comm) = LAWS[name], path
    mean = law.mean_torque(memory, phi_rel, w_rel, t_comm)
    expected, largest = path_quadrature(law, memory, phi_rel, w_rel, t_comm)
    print(f"\n{name}, {path[0]}: mean {mean!r}, quadrature {expected!r}, "
          f"difference / largest torque {abs(mean - expected) / max(largest, 1e-300):.2g}")
    assert mean == pytest.approx(expected, rel=0.0, abs=1e-8 * largest)
    if path[0] == "inside the gap":
        assert mean == 0.0
    else:
        assert mean != 0.0


@pytest.mark.parametrize("name, memory, phi_rel, w_rel", [
    ("flores", ContactMemory(1, 0.8), 0.03, 0.5),          # pressing in, measured impact
    ("flores", ContactMemory(0, 0.0), 0.03, 0.5),          # just entered: impact at p' = 0.5
    ("flores", INITIAL, -0.03, 0.3),                       # no impact measured: hysteresis, unloading
    ("flores", INITIAL, -0.03, -0.3),                      # ... loading
    ("flores n=2.7", ContactMemory(1, 0.2), 0.015, -0.1),  # unloading with Flores damping
    ("msl", INITIAL, 0.03, 0.5),                           # above the knee: c p + d p'
    ("msl", INITIAL, 0.011, 1.0),                          # below it: 2 c p
    ("msl", INITIAL, -0.05, -1.0),                         # pressing in on side -1
])
def test_step_mean_torque_tends_to_the_sampled_torque_as_t_comm_goes_to_zero(name, memory, phi_rel, w_rel):
    """The mean over T of a torque that is smooth along the path is the sampled torque plus
    its rate along the path times T/2, plus O(T^2): checked for T = 1e-6, 1e-9, 1e-12 s with
    the rate from a central difference of the sampled law (step 1e-7 s), to 1e-3 of the
    first-order term plus 1e-12 of the torque (the closed form of law 1 loses no digits to a
    difference of powers: measured within 1e-5 of the first-order term at T = 1e-12).
    T_comm = 0 and w_rel = 0 give the sampled torque itself."""
    law = LAWS[name]
    sampled = law.contact(memory, phi_rel, w_rel).tau
    delta = 1e-7
    rate = (law.contact(memory, phi_rel + w_rel * delta, w_rel).tau
            - law.contact(memory, phi_rel - w_rel * delta, w_rel).tau) / (2 * delta)
    scale = abs(sampled) + abs(law.contact(memory, phi_rel, 0.0).tau)
    for t_comm in (1e-6, 1e-9, 1e-12):
        mean = law.mean_torque(memory, phi_rel, w_rel, t_comm)
        assert mean - sampled == pytest.approx(rate * t_comm / 2,
                                               abs=1e-3 * abs(rate) * t_comm / 2 + 1e-12 * scale)
    assert law.mean_torque(memory, phi_rel, w_rel, 0.0) == sampled
    assert law.mean_torque(memory, phi_rel, 0.0, 1e-3) == law.contact(memory, phi_rel, 0.0).tau


def rattle_energy(law, stored, h, t_end, step_mean):
    """Relative speed 1 rad/s from the middle of the gap between the two free inertias: the
    bodies rattle from one contact to the other (about 40 contacts in 2 s).  Zero-order hold
    as ``cosimulate``, the torque sampled or its step mean over h.  E(t) / E(0) at every
    point, E = kinetic + ``stored``(phi_rel)."""
    phi_1, w_1, phi_2, w_2, memory = 0.0, 1.0, 0.0, 0.0, INITIAL
    ratios, e0 = [], None
    for _ in range(int(round(t_end / h)) + 1):
        phi_rel, w_rel = phi_1 - phi_2, w_1 - w_2
        energy = 0.5 * (J1 * w_1 * w_1 + J2 * w_2 * w_2) + stored(phi_rel)
        e0 = energy if e0 is None else e0
        ratios.append(energy / e0)
        tau = law.mean_torque(memory, phi_rel, w_rel, h) if step_mean else law.contact(memory, phi_rel, w_rel).tau
        memory = law.remember(memory, phi_rel, w_rel)
        a_1, a_2 = -tau / J1, tau / J2
        phi_1, w_1 = phi_1 + w_1 * h + 0.5 * a_1 * h * h, w_1 + a_1 * h
        phi_2, w_2 = phi_2 + w_2 * h + 0.5 * a_2 * h * h, w_2 + a_2 * h
    return ratios


@pytest.mark.parametrize("name", ["flores", "msl"])
def test_step_mean_torque_keeps_the_energy_of_an_undamped_rattle(name):
    """Undamped laws (law 1: k = 1e5, n = 1.5, e_rest = 1; law 2: c = 1e4, d = 0), b = 0.01,
    two free inertias rattling at 1 rad/s for 2 s, h = 1e-4 s (contacts last about 30 ms and
    26 ms: 300 and 260 points).  The sampled torque feeds energy into every contact: E grows
    to 2.20 (law 1) and 2.01 (law 2) times E(0) (at h = 1 ms: overflow and 4.4e5).  The step
    mean hands the bodies the work the contact stores along the predicted twist, so only the
    curvature of the real path within a step is left: |E/E0 - 1| at most 3.3e-5 and 2.5e-5
    (at 1 ms: 5.4e-3 and 2.7e-3); allowed 1e-4."""
    if name == "flores":
        k, n = 1e5, 1.5
        law = FloresContact(b=B, k=k, n_exp=n, e_rest=1.0, w_impact_min=1e-3)
        stored = lambda phi: k * max(abs(phi) - B, 0.0) ** (n + 1) / (n + 1)     # noqa: E731
    else:
        c = 1e4
        law = LimitedSpringDamper(b=B, c=c, d=0.0)
        stored = lambda phi: 0.5 * c * max(abs(phi) - B, 0.0) ** 2               # noqa: E731
    sampled = rattle_energy(law, stored, 1e-4, 2.0, step_mean=False)
    averaged = rattle_energy(law, stored, 1e-4, 2.0, step_mean=True)
    print(f"\n{name}: E(2 s)/E(0) sampled {sampled[-1]:.4g}, step mean {averaged[-1]:.8f}, "
          f"largest step-mean deviation {max(abs(r - 1.0) for r in averaged):.2g}")
    assert sampled[-1] > 1.5
    assert max(abs(r - 1.0) for r in averaged) < 1e-4
