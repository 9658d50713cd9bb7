"""Z3: the double-clutch vehicle of Biagiotti & Zanasi, section 4 (Fig. 9-11).

Engine: constant 400 N.m on the engine-side shaft (body 2) of the DualClutch.  Body 1
(odd gear) and body 3 (even gear) drive the vehicle inertia J_v through shafts
(k, b, ratio R1 = 3.5) and (k, b, ratio R3 = 2.2); the vehicle loses b_v w_v.
Clutch a is clamped with 6000 N from t = 0; at 4 s it opens and clutch b closes
with linear ramps over 0.5 s.  Values marked *chosen* in REFERENCE_CASES.md.

The system is data (``components``, ``CONNECTIONS``): the engine torque and the two
clamp forces come from Table FMUs, so the same description runs in systems.master and,
exported by ``export_ssp``, unchanged in any SSP engine.
"""
from __future__ import annotations

from .master import Connection, Result
from .ssp import Component, run_system, write_ssp

ENGINE_TORQUE = 400.0
CLAMP_FORCE = 6000.0
SHIFT_START, SHIFT_DURATION = 4.0, 0.5
STOP = 10.0

CLUTCH = dict(J_1=0.05, J_2=0.25, J_3=0.05,
              **{f"{p}_{c}": v for c in "ab" for p, v in
                 dict(mu_s=0.4, mu_k=0.3, r_eff=0.15, n_surfaces=2.0, w_stribeck=5.0, alpha_stribeck=1.0).items()})
SHAFT_ODD = dict(k=5000.0, d=5.0, ratio=3.5)
SHAFT_EVEN = dict(k=5000.0, d=5.0, ratio=2.2)
VEHICLE = dict(J=135.0, d_ground=20.0)

CONNECTIONS = [
    Connection("clutch", "phi_1", "shaft_odd", "phi_1"), Connection("clutch", "w_1", "shaft_odd", "w_1"),
    Connection("vehicle", "phi", "shaft_odd", "phi_2"), Connection("vehicle", "w", "shaft_odd", "w_2"),
    Connection("clutch", "phi_3", "shaft_even", "phi_1"), Connection("clutch", "w_3", "shaft_even", "w_1"),
    Connection("vehicle", "phi", "shaft_even", "phi_2"), Connection("vehicle", "w", "shaft_even", "w_2"),
    Connection("shaft_odd", "tau_1", "clutch", "tau_1"), Connection("shaft_even", "tau_1", "clutch", "tau_3"),
    Connection("shaft_odd", "tau_2", "vehicle", "tau_1"), Connection("shaft_even", "tau_2", "vehicle", "tau_2"),
    Connection("engine_torque", "y", "clutch", "tau_2"),
    Connection("clamp_a", "y", "clutch", "f_n_a"), Connection("clamp_b", "y", "clutch", "f_n_b"),
]

RECORD = ["clutch.w_1", "clutch.w_2", "clutch.w_3", "vehicle.w", "clutch.tau_fric_a", "clutch.tau_fric_b",
          "clutch.locked_a", "clutch.locked_b", "clutch.w_slip_a", "clutch.w_slip_b",
          "shaft_odd.tau_1", "shaft_even.tau_1", "clutch.f_n_a", "clutch.f_n_b", "clutch.e_loss"]


def clamp_forces(t: float) -> tuple[float, float]:
    """(f_n_a, f_n_b): a closed until the shift, then linear hand-over to b."""
    x = min(max((t - SHIFT_START) / SHIFT_DURATION, 0.0), 1.0)
    return CLAMP_FORCE * (1.0 - x), CLAMP_FORCE * x


def _table(points):
    values = {"n_points": len(points)}
    for i, (t, y) in enumerate(points, start=1):
        values[f"t_{i}"], values[f"y_{i}"] = t, y
    return Component("Table", values)


def components(step: float = 1e-3, step_mean: bool = True) -> dict[str, Component]:
    """Every component with its parameters; ``step_mean`` gives the shafts T_comm = step."""
    t_comm = {"T_comm": step} if step_mean else {}
    end = SHIFT_START + SHIFT_DURATION
    return {
        "clutch": Component("DualClutch", CLUTCH),
        "shaft_odd": Component("Shaft", SHAFT_ODD | t_comm),
        "shaft_even": Component("Shaft", SHAFT_EVEN | t_comm),
        "vehicle": Component("Inertia", VEHICLE),
        "engine_torque": _table([(0.0, ENGINE_TORQUE)]),
        "clamp_a": _table([(0.0, CLAMP_FORCE), (SHIFT_START, CLAMP_FORCE), (end, 0.0)]),
        "clamp_b": _table([(0.0, 0.0), (SHIFT_START, 0.0), (end, CLAMP_FORCE)]),
    }


def simulate(fmu_dir, step: float = 1e-3, stop: float = STOP, progress: bool = False,
             step_mean: bool = True, iterations: int = 0) -> Result:
    """Co-simulate Z3.  ``step_mean`` sets the shafts' T_comm to the step: their torque is
    the mean over the coming step (systems.reference measures the gain: at 1 ms the
    engine-side speed's RMS error falls from 2.5 % to 0.075 % of its range)."""
    return run_system(fmu_dir, components(step, step_mean), CONNECTIONS, stop, step, RECORD, progress, iterations)


def export_ssp(path, fmu_dir, step: float = 1e-3, stop: float = STOP):
    """Z3 as an SSP (parameters bound as 'initialValues'); run it at ``step``."""
    return write_ssp(path, "z3", components(step), CONNECTIONS, fmu_dir, stop)
