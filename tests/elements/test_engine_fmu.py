"""Engine FMU: J w' = throttle T0 (1 + h2 sin(2 w t) + h4 sin(4 w t)) + tau_load (Fan et al.)."""
import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from drivetrain_fmu.systems.master import Instance, run


def _run(fmu_dir, params, load, duration=0.5, h=1e-3):
    engine = Instance(fmu_dir / "Engine.fmu", "engine", params)
    try:
        return run({"engine": engine}, [], duration, h, ["engine.w", "engine.phi"],
                   inputs=lambda t: {"engine.tau_load": load})
    finally:
        engine.free()


def test_constant_torque_accelerates_uniformly(fmu_dir):
    """h2 = h4 = 0: w(t) = w0 + (T0 + load) t / J exactly (1e-12)."""
    out = _run(fmu_dir, {"J": 0.6, "T0": 200.0, "w_start": 20.0}, -50.0)
    assert out["engine.w"] == pytest.approx(20.0 + 150.0 * out.time / 0.6, rel=1e-12)


def test_harmonic_torque_matches_a_tight_reference(fmu_dir):
    """The seed's harmonics (h2 = 1.8, h4 = 0.7, T0 = 60 N.m, 20 rad/s): the speed agrees
    with scipy's DOP853 at rtol 1e-12 to 1e-8 rad/s over 0.5 s."""
    J, T0, load = 0.6, 60.0, -10.0

    def rhs(t, y):
        return [y[1], (T0 * (1 + 1.8 * math.sin(2 * y[1] * t) + 0.7 * math.sin(4 * y[1] * t)) + load) / J]

    out = _run(fmu_dir, {"J": J, "T0": T0, "h2": 1.8, "h4": 0.7, "w_start": 20.0}, load)
    ref = solve_ivp(rhs, (0.0, 0.5), [0.0, 20.0], method="DOP853", rtol=1e-12, atol=1e-12, dense_output=True)
    assert np.max(np.abs(out["engine.w"] - ref.sol(out.time)[1])) < 1e-8
