"""R3: Reiter's hybrid-driveline extensions (Tables 11-12 and 15-16) by co-simulation.

Described once, in ``systems/catalog/ssd/r3_spring_<case>.ssd`` and ``r3_clearance_<case>.ssd``.
Inertias J_z = 3.4093 (intermediate), J_w = 1.5 (wheel), J_v = 135 kg.m2 (vehicle for a
1 m wheel radius).  The thesis's input torques (its Fig. 47 and 72-73) are not given, so
the drives are *chosen* (REFERENCE_CASES.md: use them everywhere).

Nonlinear spring (Table 12): J_z --NonlinearSpring(breakpoint, k_reg1, k_reg2)-- J_w + J_v
lumped, a 20 N.m step on J_z from rest.

Clearance (Table 16): Backlash(J_1 = J_z, J_2 = J_w, b = max angle, e_rest = c_r) with a
Shaft k2 = 4000 N.m/rad (d = 5 N.m.s/rad chosen) from the wheel to the vehicle inertia;
a drive torque of +100 N.m on J_z for 1 s, then -100 N.m (a load reversal through the
play, a staircase Table), from rest with the play centred.

The clearance system's shaft and the spring average their torque over the communication
step (T_comm = step, see fmus.compliance), which keeps the explicit coupling energy-
consistent: with the torque at the communication point (``step_mean=False``, T_comm = 0)
the undamped spring system gains energy at every step and is 66 % RMS off its closed form
at 1 ms (case 1), 0.05 % with the step-mean torque.  ``spring.tau_2`` is then the mean
torque over the coming step; ``step_mean=False`` shows the characteristic itself.
The constants below are read from the files (the references and tests use them).
"""
from __future__ import annotations

from ..master import Result
from ..ssp import catalog, load_system, run_system

SPRING = {int(name.rpartition("_")[2]): load_system(name) for name in catalog() if name.startswith("r3_spring_")}
CLEARANCE = {int(name.rpartition("_")[2]): load_system(name) for name in catalog()
             if name.startswith("r3_clearance_")}

SPRING_CASES = {case: tuple(s.components["spring"].parameters[name] for name in ("phi_s_1", "k_1", "k_2"))
                for case, s in SPRING.items()}
CLEARANCE_CASES = {case: (s.components["mesh"].parameters["b"], s.components["mesh"].parameters["e_rest"])
                   for case, s in CLEARANCE.items()}
# the documented values shared by the cases, as case 1 binds them (the references and the
# clearance signal mesh.w_mean read each case's own components)
_MESH, _SHAFT = CLEARANCE[1].components["mesh"].parameters, CLEARANCE[1].components["shaft"].parameters
_DRIVE = CLEARANCE[1].components["drive"].parameters
J_Z, J_W, J_V = _MESH["J_1"], _MESH["J_2"], CLEARANCE[1].components["vehicle"].parameters["J"]
J_WV = SPRING[1].components["wv"].parameters["J"]            # wheel and vehicle lumped
SPRING_TORQUE = SPRING[1].components["drive"].parameters["y_1"]
DRIVE_TORQUE, REVERSAL_TIME = _DRIVE["y_1"], _DRIVE["t_2"]
K2, D2 = _SHAFT["k"], _SHAFT["d"]

SPRING_RECORD = ["spring.phi_rel", "spring.tau_2", "spring.region", "spring.e_spring", "z.w", "wv.w"]
CLEARANCE_RECORD = ["mesh.phi_rel", "mesh.contact", "mesh.n_impacts", "mesh.w_1", "mesh.w_2", "mesh.e_loss",
                    "vehicle.w", "shaft.tau_2"]


def mesh_mean_speed(case: int, w_1, w_2):
    """(J_1 w_1 + J_2 w_2) / (J_1 + J_2): the speed of the mesh's centre of momentum, which
    no impact changes (the reproducible signal of the rattling case)."""
    mesh = CLEARANCE[case].components["mesh"].with_defaults()
    return (mesh["J_1"] * w_1 + mesh["J_2"] * w_2) / (mesh["J_1"] + mesh["J_2"])


def mesh_mean_speed_of(mesh, w_1, w_2):
    """The same for a Backlash component (systems.ssp.Component) of any system file."""
    values = mesh.with_defaults()
    return (values["J_1"] * w_1 + values["J_2"] * w_2) / (values["J_1"] + values["J_2"])


def spring_components(case: int, step: float | None = None, step_mean: bool | None = None):
    """The nonlinear-spring system for a run at ``step``; ``step_mean`` False gives the
    spring T_comm = 0, the torque at the point (the files bind the step-mean torque)."""
    return SPRING[case].at_step(SPRING[case].step if step is None else step, step_mean)


def simulate_spring(fmu_dir, case: int, step: float | None = None, stop: float | None = None,
                    progress: bool = False, step_mean: bool | None = None) -> Result:
    step = SPRING[case].step if step is None else step
    stop = SPRING[case].stop if stop is None else stop
    return run_system(fmu_dir, spring_components(case, step, step_mean), SPRING[case].connections, stop, step,
                      SPRING_RECORD, progress)



def clearance_components(case: int, step: float | None = None):
    """The clearance system for a run at ``step`` (its shaft's T_comm = step)."""
    return CLEARANCE[case].at_step(CLEARANCE[case].step if step is None else step)


def simulate_clearance(fmu_dir, case: int, step: float | None = None, stop: float | None = None,
                       progress: bool = False) -> Result:
    step = CLEARANCE[case].step if step is None else step
    stop = CLEARANCE[case].stop if stop is None else stop
    result = run_system(fmu_dir, clearance_components(case, step), CLEARANCE[case].connections, stop, step,
                        CLEARANCE_RECORD, progress)
    result.signals["mesh.w_mean"] = mesh_mean_speed(case, result["mesh.w_1"], result["mesh.w_2"])
    return result
