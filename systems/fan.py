"""F: Fan, Walker & Wang's vehicle with its powertrain (REFERENCE_CASES.md F1-F3).

Engine J_e --Shaft(k1, c1)-- Clutch(J_f | J_c) --Shaft(k2, c2)-- Vehicle (driven wheel).
J_e = 0.6, J_f = 0.2, J_c = 0.28 kg.m2; k1 = 77 kN.m/rad, c1 = 1.76 N.m.s/rad;
k2 = 16 kN.m/rad, c2 = 0.12 N.m.s/rad.  The clutch capacities T_S, T_C are given as
mu r n f_n with r = 0.125 m, n = 2, f_n = 1000 N (so mu_s = T_S / 250, mu_k = T_C / 250).
Initial state (all cases): 20 rad/s on every shaft, 5 m/s, the seed's geometry (tires
undeflected).  The shafts average their torque over the communication step (T_comm).
F1: T_e = 200 N.m, dry road (mu_0 0.8, mu 0.75), clutch never slips (T_S = T_C = 5000).
F2: T_e = 323.47 N.m, T_S = 400, T_C = 320 (judder); F2_100: T_e = 100 N.m with the seed's
Stribeck clutch values T_S = 100, T_C = 80 (w_s = 10 rad/s, exponent 0.6 with
``stribeck=True``; Coulomb otherwise); F3: ice (0.1, 0.07), T_e = -168.48 N.m, "a
rear-drive-wheel vehicle moving in the opposite direction to cases 1 and 2" (seed
section 4.3): every initial speed reversed (-5 m/s, -20 rad/s), so the driven wheel (the
same one) trails and the negative torque drives the backward motion.
"""
from __future__ import annotations

from .master import Connection, Result
from .ssp import Component, run_system, write_ssp

LEVER = 0.125 * 2 * 1000.0      # r n f_n: T = mu * LEVER
CASES = {
    "F1": dict(T0=200.0, T_S=5000.0, T_C=5000.0, mu_s_road=0.8, mu_k_road=0.75, wheel="f"),
    "F2": dict(T0=323.47, T_S=400.0, T_C=320.0, mu_s_road=0.8, mu_k_road=0.75, wheel="f"),
    "F2_100": dict(T0=100.0, T_S=100.0, T_C=80.0, mu_s_road=0.8, mu_k_road=0.75, wheel="f"),
    "F3": dict(T0=-168.48, T_S=400.0, T_C=320.0, mu_s_road=0.1, mu_k_road=0.07, wheel="f", direction=-1),
}
RECORD = ["engine.w", "clutch.w_1", "clutch.w_2", "clutch.w_slip", "clutch.locked", "clutch.tau_fric",
          "vehicle.v", "vehicle.pitch", "vehicle.F_n_f", "vehicle.F_n_r", "vehicle.stick_f", "vehicle.stick_r",
          "vehicle.drift", "vehicle.w_wheel_f", "vehicle.w_wheel_r", "vehicle.ax"]


def components(case: str = "F1", step: float = 1e-4, stribeck: bool = False, **overrides) -> dict[str, Component]:
    """The system's components (element and parameters), the single description that
    simulation and SSP export use; ``overrides`` replace entries of the case (T0, T_S, ...)."""
    unknown = set(overrides) - set(CASES[case])
    if unknown:
        raise ValueError(f"unknown case values {sorted(unknown)}; known: {sorted(CASES[case])}")
    c = {**CASES[case], **overrides}
    w0 = 20.0 * c.get("direction", 1)
    clutch = dict(J_1=0.2, J_2=0.28, mu_s=c["T_S"] / LEVER, mu_k=c["T_C"] / LEVER, r_eff=0.125, n_surfaces=2.0,
                  w_1_start=w0, w_2_start=w0, locked_start=True,
                  **({"w_stribeck": 10.0, "alpha_stribeck": 0.6} if stribeck else {}))
    return {
        "engine": Component("Engine", {"J": 0.6, "T0": c["T0"], "w_start": w0}),
        "input_shaft": Component("Shaft", {"k": 77e3, "d": 1.76, "T_comm": step}),
        "clutch": Component("Clutch", clutch),
        "half_shaft": Component("Shaft", {"k": 16e3, "d": 0.12, "T_comm": step}),
        "vehicle": Component("Vehicle", {"mu_s_road": c["mu_s_road"], "mu_k_road": c["mu_k_road"],
                                         "settle_start": False, "v_start": 0.25 * w0,
                                         "w_wheel_f_start": w0, "w_wheel_r_start": w0}),
    }


def connections(case: str = "F1", wheel: str | None = None) -> list[Connection]:
    wheel = wheel or CASES[case]["wheel"]
    return [
        Connection("engine", "phi", "input_shaft", "phi_1"), Connection("engine", "w", "input_shaft", "w_1"),
        Connection("clutch", "phi_1", "input_shaft", "phi_2"), Connection("clutch", "w_1", "input_shaft", "w_2"),
        Connection("input_shaft", "tau_1", "engine", "tau_load"), Connection("input_shaft", "tau_2", "clutch", "tau_1"),
        Connection("clutch", "phi_2", "half_shaft", "phi_1"), Connection("clutch", "w_2", "half_shaft", "w_1"),
        Connection("vehicle", f"phi_wheel_{wheel}", "half_shaft", "phi_2"),
        Connection("vehicle", f"w_wheel_{wheel}", "half_shaft", "w_2"),
        Connection("half_shaft", "tau_1", "clutch", "tau_2"),
        Connection("half_shaft", "tau_2", "vehicle", f"tau_wheel_{wheel}"),
    ]


def simulate(fmu_dir, case: str = "F1", step: float = 5e-4, stop: float = 2.0, progress: bool = False,
             stribeck: bool = False, iterations: int = 0, step_mean: bool = True, **overrides) -> Result:
    """Co-simulate a case; ``iterations`` > 0 repeats each step from saved FMU states
    (systems.master.run), ``step_mean`` = False samples the shaft torques (T_comm = 0)."""
    parts = components(case, step if step_mean else 0.0, stribeck, **overrides)
    return run_system(fmu_dir, parts, connections(case, overrides.get("wheel")), stop, step, RECORD, progress,
                      iterations)


def export_ssp(path, fmu_dir, case: str = "F1", step: float = 1e-3, stop: float = 2.0, stribeck: bool = False):
    """The case as an SSP (parameters bound as 'initialValues'); run it at ``step``,
    the T_comm its shafts were given."""
    return write_ssp(path, f"fan_{case}", components(case, step, stribeck), connections(case), fmu_dir, stop)
