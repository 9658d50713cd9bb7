"""Z3: the double-clutch vehicle of Biagiotti & Zanasi, section 4 (Fig. 9-11).

Described once, in ``systems/catalog/ssd/z3.ssd``: engine 400 N.m on the engine-side shaft
(body 2) of the DualClutch; body 1 (odd gear) and body 3 (even gear) drive the vehicle
inertia J_v through shafts (k, b, ratio R1 = 3.5) and (k, b, ratio R3 = 2.2); the vehicle
loses b_v w_v.  Clutch a is clamped with 6000 N from t = 0; at 4 s it opens and clutch b
closes with linear ramps over 0.5 s.  The engine torque and the two clamp forces are
Table components.  Values marked *chosen* in REFERENCE_CASES.md.

The constants below are read from that file, with the element's declared defaults for
what it does not bind (the monolithic reference and the tests use them), never written a
second time.
"""
from __future__ import annotations

from drivetrain_fmu.solvers.signal import table_points, table_value

from ..master import Result
from ..ssp import load_system, run_system

SYSTEM = load_system("z3")
CONNECTIONS = SYSTEM.connections
STOP = SYSTEM.stop
CLUTCH = SYSTEM.components["clutch"].with_defaults()
SHAFT_ODD = SYSTEM.components["shaft_odd"].with_defaults()
SHAFT_EVEN = SYSTEM.components["shaft_even"].with_defaults()
VEHICLE = SYSTEM.components["vehicle"].with_defaults()
_TABLES = {name: (*table_points(values), values["hold"])
           for name, values in ((name, SYSTEM.components[name].with_defaults())
                                for name in ("engine_torque", "clamp_a", "clamp_b"))}
#: every instant where an input table has a kink or a step (the reference restarts there)
TABLE_TIMES = sorted({t for times, _, _ in _TABLES.values() for t in times})
ENGINE_TORQUE = _TABLES["engine_torque"][1][0]       # its first value (the documented case: constant)
_CLAMPS = [_TABLES["clamp_a"], _TABLES["clamp_b"]]
CLAMP_FORCE = _CLAMPS[0][1][0]
SHIFT_START = _CLAMPS[0][0][1]
SHIFT_DURATION = _CLAMPS[0][0][2] - SHIFT_START

RECORD = ["clutch.w_1", "clutch.w_2", "clutch.w_3", "vehicle.w", "clutch.tau_fric_a", "clutch.tau_fric_b",
          "clutch.locked_a", "clutch.locked_b", "clutch.w_slip_a", "clutch.w_slip_b",
          "shaft_odd.tau_1", "shaft_even.tau_1", "clutch.f_n_a", "clutch.f_n_b", "clutch.e_loss"]


def clamp_forces(t: float) -> tuple[float, float]:
    """(f_n_a, f_n_b) at time t: the clamp-force Tables of the system."""
    return tuple(table_value(times, values, hold, t) for times, values, hold in _CLAMPS)


def engine_torque(t: float) -> float:
    """The engine torque at time t: the system's engine-torque Table."""
    return table_value(*_TABLES["engine_torque"][:2], _TABLES["engine_torque"][2], t)


def components(step: float = SYSTEM.step, step_mean: bool | None = None):
    """The components for a run at ``step``; ``step_mean`` True or False overrides the
    file's T_comm choice (step-mean shafts) for every shaft."""
    return SYSTEM.at_step(step, step_mean)


def simulate(fmu_dir, step: float = SYSTEM.step, stop: float = STOP, progress: bool = False,
             step_mean: bool | None = None, iterations: int = 0, rates=None) -> Result:
    """Co-simulate Z3.  ``step_mean`` sets the shafts' T_comm to the step: their torque is
    the mean over the coming step (systems.catalog.reference measures the gain: at 1 ms the
    engine-side speed's RMS error falls from 2.5 % to 0.075 % of its range); ``rates``
    {inst: H}: multi-rate over the base step ``step`` (systems.ssp.run_system)."""
    return run_system(fmu_dir, components(step, step_mean), CONNECTIONS, stop, step, RECORD, progress, iterations,
                      rates=rates)
