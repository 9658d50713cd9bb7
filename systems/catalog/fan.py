"""F: Fan, Walker & Wang's vehicle with its powertrain (REFERENCE_CASES.md F1-F3).

Engine J_e --Shaft(k1, c1)-- Clutch(J_f | J_c) --Shaft(k2, c2)-- Vehicle (driven wheel),
described once per case in ``systems/catalog/ssd/fan_<case>.ssd``:
J_e = 0.6, J_f = 0.2, J_c = 0.28 kg.m2; k1 = 77 kN.m/rad, c1 = 1.76 N.m.s/rad;
k2 = 16 kN.m/rad, c2 = 0.12 N.m.s/rad.  The clutch capacities T_S, T_C are given as
mu r n f_n with r = 0.125 m, n = 2, f_n = 1000 N (the Clutch's clamp-force start value,
so mu_s = T_S / 250, mu_k = T_C / 250).
Initial state (all cases): 20 rad/s on every shaft, 5 m/s, the seed's geometry (tires
undeflected).  The shafts average their torque over the communication step (T_comm).
F1: T_e = 200 N.m, dry road (mu_0 0.8, mu 0.75), clutch never slips (T_S = T_C = 5000).
F2: T_e = 323.47 N.m, T_S = 400, T_C = 320 (judder); F2_100: T_e = 100 N.m with the seed's
clutch values T_S = 100, T_C = 80, Coulomb, and F2_100_stribeck the same with the Stribeck
drop (w_s = 10 rad/s, exponent 0.6); F3: ice (0.1, 0.07), T_e = -168.48 N.m, "a
rear-drive-wheel vehicle moving in the opposite direction to cases 1 and 2" (seed
section 4.3): every initial speed reversed (-5 m/s, -20 rad/s), so the driven wheel (the
same one) trails and the negative torque drives the backward motion.

Studies vary a case through ``case values`` (T0, T_S, T_C, mu_s_road, mu_k_road), which
map onto the components' parameters (:func:`components`).
"""
from __future__ import annotations

from functools import lru_cache

from ..master import Connection, Result
from ..ssp import Component, System, catalog, load_system, run_system

CASES = tuple(name[len("fan_"):] for name in catalog() if name.startswith("fan_"))
CASE_VALUES = ("T0", "T_S", "T_C", "mu_s_road", "mu_k_road")
RECORD = ["engine.w", "clutch.w_1", "clutch.w_2", "clutch.w_slip", "clutch.locked", "clutch.tau_fric",
          "vehicle.v", "vehicle.pitch", "vehicle.F_n_f", "vehicle.F_n_r", "vehicle.stick_f", "vehicle.stick_r",
          "vehicle.drift", "vehicle.w_wheel_f", "vehicle.w_wheel_r", "vehicle.ax"]


@lru_cache(maxsize=None)
def system(case: str) -> System:
    """The case's system (systems/catalog/ssd/fan_<case>.ssd)."""
    if case not in CASES:
        raise ValueError(f"unknown Fan et al. case {case!r}; cases: {', '.join(CASES)}")
    return load_system(f"fan_{case}")


def _lever(clutch: Component) -> float:
    """r_eff n_surfaces f_n of the clutch (f_n: its clamp-force input's start value, which
    no connection drives here): T = mu * lever."""
    values = clutch.with_defaults()
    return values["r_eff"] * values["n_surfaces"] * values["f_n"]


def driven_wheel(case: str) -> str:
    """'f' or 'r': the wheel the half shaft drives."""
    target = next(c.input for c in system(case).connections if c.source == "half_shaft" and c.target == "vehicle")
    return target[-1]


def case_values(case: str) -> dict:
    """The case in the seed's terms: T0, T_S, T_C [N.m], mu_s_road, mu_k_road, read from
    its components."""
    components = system(case).components
    parts = {name: c.with_defaults() for name, c in components.items()}
    lever = _lever(components["clutch"])
    return dict(T0=parts["engine"]["T0"], T_S=parts["clutch"]["mu_s"] * lever, T_C=parts["clutch"]["mu_k"] * lever,
                mu_s_road=parts["vehicle"]["mu_s_road"], mu_k_road=parts["vehicle"]["mu_k_road"])


def components(case: str = "F1", step: float | None = None, step_mean: bool | None = None,
               **values) -> dict[str, Component]:
    """The case's components for a run at ``step`` (default: the case's), with case values
    (T0, T_S, T_C, mu_s_road, mu_k_road) replaced by ``values``; ``step_mean`` True or False
    overrides the file's T_comm choice for the shafts."""
    unknown = set(values) - set(CASE_VALUES)
    if unknown:
        raise ValueError(f"unknown case values {sorted(unknown)}; known: {list(CASE_VALUES)}")
    parts = system(case).at_step(system(case).step if step is None else step, step_mean)
    changes = {"engine": {}, "clutch": {}, "vehicle": {}}
    lever = _lever(parts["clutch"])
    for name, value in values.items():
        if name == "T0":
            changes["engine"]["T0"] = value
        elif name in ("T_S", "T_C"):
            changes["clutch"]["mu_s" if name == "T_S" else "mu_k"] = value / lever
        else:
            changes["vehicle"][name] = value
    return {name: Component(c.element, {**c.parameters, **changes.get(name, {})}) for name, c in parts.items()}


def connections(case: str = "F1") -> list[Connection]:
    return system(case).connections


def simulate(fmu_dir, case: str = "F1", step: float | None = None, stop: float | None = None,
             progress: bool = False, iterations: int = 0, step_mean: bool | None = None, rates=None,
             record: list[str] | None = None, **values) -> Result:
    """Co-simulate a case (``step`` and ``stop`` default to its file's); ``iterations`` > 0
    repeats each step from saved FMU states (systems.master.run), ``step_mean`` = False
    samples the shaft torques (T_comm = 0), True averages them (default: as the file says);
    ``rates`` {inst: H}: multi-rate over the base step ``step`` (systems.ssp.run_system);
    ``record``: the signals recorded (default RECORD; a run records what it is asked,
    reading values changes nothing in it)."""
    step = system(case).step if step is None else step
    stop = system(case).stop if stop is None else stop
    return run_system(fmu_dir, components(case, step, step_mean, **values), connections(case), stop, step,
                      RECORD if record is None else record, progress, iterations, rates=rates)
