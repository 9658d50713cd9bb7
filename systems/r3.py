"""R3: Reiter's hybrid-driveline extensions (Tables 11-12 and 15-16) by co-simulation.

Inertias J_z = 3.4093 (intermediate), J_w = 1.5 (wheel), J_v = 135 kg.m2 (vehicle for a
1 m wheel radius).  The thesis's input torques (its Fig. 47 and 72-73) are not given, so
the drives below are *chosen* (REFERENCE_CASES.md: use them everywhere).

Nonlinear spring (Table 12): J_z --NonlinearSpring(breakpoint, k_reg1, k_reg2)-- J_w + J_v
lumped, a 20 N.m step on J_z from rest.

Clearance (Table 16): Backlash(J_1 = J_z, J_2 = J_w, b = max angle, e_rest = c_r) with a
Shaft k2 = 4000 N.m/rad (d = 5 N.m.s/rad chosen) from the wheel to the vehicle inertia;
a drive torque of +100 N.m on J_z for 1 s, then -100 N.m (a load reversal through the
play), from rest with the play centred.

The clearance system's shaft averages its torque over the communication step
(T_comm = step, see fmus.compliance), which keeps the explicit coupling energy-
consistent; the spring system shows the characteristic itself (torque at the point).
"""
from __future__ import annotations

from .master import Connection, Result
from .ssp import Component, run_system, write_ssp

J_Z, J_W, J_V = 3.4093, 1.5, 135.0
SPRING_CASES = {1: (6e-3, 800.0, 20000.0), 2: (7e-3, 800.0, 20000.0), 3: (0.25e-3, 20000.0, 800.0)}
CLEARANCE_CASES = {1: (1e-4, 0.0), 2: (1e-4, 1.0), 3: (2e-3, 0.0)}
SPRING_TORQUE = 20.0
DRIVE_TORQUE, REVERSAL_TIME = 100.0, 1.0
K2, D2 = 4000.0, 5.0


SPRING_CONNECTIONS = [
    Connection("z", "phi", "spring", "phi_1"), Connection("z", "w", "spring", "w_1"),
    Connection("wv", "phi", "spring", "phi_2"), Connection("wv", "w", "spring", "w_2"),
    Connection("spring", "tau_1", "z", "tau_1"), Connection("spring", "tau_2", "wv", "tau_1"),
    Connection("drive", "y", "z", "tau_2"),
]


def spring_components(case: int, step: float = 1e-3, step_mean: bool = False) -> dict[str, Component]:
    """The nonlinear-spring system as data (constant drive torque as a one-point Table)."""
    breakpoint, k_1, k_2 = SPRING_CASES[case]
    return {
        "z": Component("Inertia", {"J": J_Z}),
        "spring": Component("NonlinearSpring", {"n_regions": 2, "phi_s_1": breakpoint, "k_1": k_1, "k_2": k_2,
                                                "T_comm": step if step_mean else 0.0}),
        "wv": Component("Inertia", {"J": J_W + J_V}),
        "drive": Component("Table", {"n_points": 1, "t_1": 0.0, "y_1": SPRING_TORQUE}),
    }


def simulate_spring(fmu_dir, case: int, step: float = 1e-3, stop: float = 1.0, progress: bool = False,
                    step_mean: bool = False) -> Result:
    record = ["spring.phi_rel", "spring.tau_2", "spring.region", "spring.e_spring", "z.w", "wv.w"]
    return run_system(fmu_dir, spring_components(case, step, step_mean), SPRING_CONNECTIONS, stop, step, record,
                      progress)


def export_spring_ssp(path, fmu_dir, case: int, step: float = 1e-3, stop: float = 1.0, step_mean: bool = True):
    return write_ssp(path, f"r3_spring_{case}", spring_components(case, step, step_mean), SPRING_CONNECTIONS,
                     fmu_dir, stop)


CLEARANCE_CONNECTIONS = [
    Connection("mesh", "phi_2", "shaft", "phi_1"), Connection("mesh", "w_2", "shaft", "w_1"),
    Connection("vehicle", "phi", "shaft", "phi_2"), Connection("vehicle", "w", "shaft", "w_2"),
    Connection("shaft", "tau_1", "mesh", "tau_2"), Connection("shaft", "tau_2", "vehicle", "tau_1"),
    Connection("drive", "y", "mesh", "tau_1"),
]


def clearance_components(case: int, step: float = 1e-3) -> dict[str, Component]:
    """The clearance system as data; the drive torque reversal is a staircase Table."""
    b, c_r = CLEARANCE_CASES[case]
    return {
        "mesh": Component("Backlash", {"J_1": J_Z, "J_2": J_W, "b": b, "e_rest": c_r}),
        "shaft": Component("Shaft", {"k": K2, "d": D2, "T_comm": step}),
        "vehicle": Component("Inertia", {"J": J_V}),
        "drive": Component("Table", {"n_points": 2, "t_1": 0.0, "y_1": DRIVE_TORQUE, "t_2": REVERSAL_TIME,
                                     "y_2": -DRIVE_TORQUE, "hold": True}),
    }


def simulate_clearance(fmu_dir, case: int, step: float = 1e-3, stop: float = 2.0, progress: bool = False) -> Result:
    record = ["mesh.phi_rel", "mesh.contact", "mesh.n_impacts", "mesh.w_1", "mesh.w_2", "mesh.e_loss",
              "vehicle.w", "shaft.tau_2"]
    return run_system(fmu_dir, clearance_components(case, step), CLEARANCE_CONNECTIONS, stop, step, record, progress)


def export_clearance_ssp(path, fmu_dir, case: int, step: float = 1e-3, stop: float = 2.0):
    return write_ssp(path, f"r3_clearance_{case}", clearance_components(case, step), CLEARANCE_CONNECTIONS,
                     fmu_dir, stop)
