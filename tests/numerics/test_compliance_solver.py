"""solvers.compliance: the twist through the gear and the step-mean spring torque."""
import random

import pytest

from drivetrain_fmu.solvers.compliance import spring_damper_torque, spring_energy, twist


def test_the_step_mean_spring_torque_does_exactly_the_work_the_spring_stores():
    """Held over a step T with the twist advancing at the held w_rel, the step-mean torque
    does the work k (phi + w T/2) w T = k ((phi + w T)^2 - phi^2) / 2, the change of the
    spring's energy: an explicit coupling neither creates nor destroys energy (relative
    1e-12: a few roundings of products of the same numbers).  The sampled torque (T_comm =
    0) does k phi w T, off by k (w T)^2 / 2, which is what grew R3's oscillation."""
    rng = random.Random(5)
    for _ in range(1000):
        k, phi, w, h = 10 ** rng.uniform(1, 6), rng.uniform(-1, 1), rng.uniform(-50, 50), 10 ** rng.uniform(-5, -2)
        work = spring_damper_torque(k, 0.0, phi, w, h) * w * h
        stored = spring_energy(k, phi + w * h) - spring_energy(k, phi)
        assert work == pytest.approx(stored, rel=1e-12, abs=1e-12 * k * (abs(phi) + abs(w * h)) ** 2)
        sampled = spring_damper_torque(k, 0.0, phi, w, 0.0) * w * h
        assert stored - sampled == pytest.approx(0.5 * k * (w * h) ** 2, rel=1e-6, abs=1e-9 * abs(stored))


def test_the_step_mean_is_the_mean_of_the_spring_torque_over_the_step():
    """(1/T) integral_0^T k (phi + w s) ds by the midpoint rule on 10^4 panels (exact for a
    linear integrand up to rounding), plus the damper d w."""
    k, d, phi, w, h = 5000.0, 5.0, 0.01, 3.0, 2e-3
    n = 10_000
    mean = sum(k * (phi + w * (i + 0.5) * h / n) for i in range(n)) / n
    assert spring_damper_torque(k, d, phi, w, h) == pytest.approx(mean + d * w, rel=1e-12)


def test_twist_through_the_gear():
    """Body 1 turned by ratio times body 2 is untwisted: phi_1 / ratio - phi_2 = 0."""
    phi_rel, w_rel = twist(7.0, 14.0, 2.0, 4.0, 3.5, 0.0)
    assert phi_rel == 0.0 and w_rel == 0.0
    assert twist(0.0, 0.0, 0.0, 0.0, 2.0, 0.25) == (0.25, 0.0)
