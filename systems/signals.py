"""What a run of a system records and plots by default: the signals of its family.

A documented system belongs to a family (z3, fan, r3_spring, ...): its plot panels
(``PLOTS``, drawn by ``drivetrain-fmu run``) and the signals its module records.  A copy of a
documented system, edited or renamed, keeps its family as long as every plotted signal still
exists (:func:`family_of`).  ``drivetrain-fmu run`` records :func:`default_record`, and a
system exported as one FMU (systems/composite.py) has the same signals as its default outputs.
"""
from __future__ import annotations

from drivetrain_fmu.fmus import ELEMENTS

from .catalog import fan, msl, r3, z3

# per family of systems (the name's prefix): title and plot panels [(y label, [(signal, legend), ...]), ...];
# a panel whose label starts with FLAGS draws its 0/1 signals stacked, one row each
FLAGS = "stick flags"
PLOTS = {
    "z3": ("Double-clutch gear shift (after Biagiotti & Zanasi)", [
        ("speed [rad/s]", [("clutch.w_2", "w_2 engine side"), ("clutch.w_1", "w_1 odd-gear shaft"),
                           ("clutch.w_3", "w_3 even-gear shaft")]),
        ("friction torque [N.m]", [("clutch.tau_fric_a", "tau_fric_a (1 -> 2)"),
                                   ("clutch.tau_fric_b", "tau_fric_b (2 -> 3)")])]),
    "r3_spring": ("Driveline with a nonlinear spring (after Reiter)", [
        ("twist [rad]", [("spring.phi_rel", "phi_rel")]),
        ("spring torque [N.m]", [("spring.tau_2", "tau on J_w + J_v")]),
        ("speed [rad/s]", [("z.w", "w_z (drive side, J_z)"), ("wv.w", "w_wv (load side, J_w + J_v)")])]),
    "r3_clearance": ("Driveline with gear clearance (after Reiter)", [
        ("relative angle [rad]", [("mesh.phi_rel", "phi_z - phi_w")]),
        ("impacts", [("mesh.n_impacts", "n_impacts")]),
        ("speed [rad/s]", [("mesh.w_1", "w_z (drive gear, J_z)"), ("mesh.w_2", "w_w (driven gear, J_w)"),
                           ("vehicle.w", "w_v (vehicle, J_v)")])]),
    "fan": ("Vehicle launch: clutch judder, pitch and tire stick-slip (after Fan, Walker & Wang)", [
        ("pitch [rad]", [("vehicle.pitch", "theta_1")]),
        ("normal force [N]", [("vehicle.F_n_f", "F_N1 front"), ("vehicle.F_n_r", "F_N2 rear")]),
        ("clutch slip [rad/s]", [("clutch.w_slip", "theta_r' (flywheel - disc)")]),
        ("clutch torque [N.m]", [("clutch.tau_fric", "T_f")]),
        (FLAGS, [("vehicle.stick_f", "front tire"), ("vehicle.stick_r", "rear tire"),
                 ("clutch.locked", "clutch")])]),
    "planetary_shift": ("Two-speed upshift on a planetary gear set: brake hands over to clutch", [
        ("speed [rad/s]", [("gear.w_sun", "engine (sun)"), ("gear.w_carrier", "carrier (output)"),
                           ("gear.w_ring", "ring"), ("vehicle.w", "vehicle (after the final drive)")]),
        ("torque [N.m]", [("gear.tau_fric_b", "brake on the ring"), ("gear.tau_fric_c", "clutch (sun to carrier)")]),
        (FLAGS, [("gear.locked_b", "brake"), ("gear.locked_c", "clutch")])]),
    "automatic_launch": ("Automatic launch from stall: torque converter, then lock-up at a speed ratio", [
        ("speed [rad/s]", [("converter.w_pump", "pump (engine)"), ("converter.w_turbine", "turbine"),
                           ("vehicle.w", "vehicle (after the gear ratio)")]),
        ("torque [N.m]", [("converter.tau_fluid_pump", "fluid on the pump (engine load)"),
                          ("converter.tau_fluid_turbine", "fluid on the turbine (multiplied)"),
                          ("converter.tau_fric", "lock-up clutch")]),
        (FLAGS, [("lockup.on", "lock-up applied"), ("converter.locked", "lock-up clutch stuck")])]),
    "heating_clutch": ("Repeated launches heating a clutch until its friction falls", [
        ("speed [rad/s]", [("clutch.w_1", "engine"), ("clutch.w_2", "vehicle (at the clutch)")]),
        ("torque [N.m]", [("clutch.tau_fric", "clutch (engine -> vehicle)"), ("drag.tau", "drag on the vehicle")]),
        ("clutch temperature [K]", [("clutch.T_th", "T_th")]),
        ("heat [J]", [("clutch.e_loss", "dissipated (e_loss)"), ("clutch.e_heat", "transferred to the ambient")]),
        (FLAGS, [("clutch.locked", "clutch")])]),
    "synchro_upshift": ("Manual upshift: clutch opens, gear-2 cone synchronizes, dogs engage, clutch closes", [
        ("speed [rad/s]", [("gearbox.w_1", "engine"), ("gearbox.w_2", "input shaft (clutch disc)"),
                           ("synchro.w_gear", "gear-2 idler"), ("synchro.w_shaft", "output shaft"),
                           ("vehicle.w", "vehicle (after the final drive)")]),
        ("torque [N.m]", [("gearbox.tau_fric_1", "main clutch"), ("gearbox.tau_fric_2", "gear-1 dogs"),
                          ("synchro.tau_cone", "gear-2 cone"), ("synchro.tau_dog", "gear-2 dogs")]),
        (FLAGS, [("gearbox.locked_1", "main clutch stuck"), ("gearbox.locked_2", "gear 1 engaged"),
                 ("synchro.locked", "gear-2 cone stuck"), ("synchro.engaged", "gear-2 dogs engaged")])]),
    "split_mu": ("Split-mu launch: left wheel on ice, right on asphalt, behind a differential", [
        ("speed [rad/s]", [("vehicle.w_left", "left wheel (ice)"), ("vehicle.w_right", "right wheel (asphalt)"),
                           ("diff.w_carrier", "differential carrier")]),
        ("torque [N.m]", [("shaft_left.tau_2", "left half-shaft"), ("shaft_right.tau_2", "right half-shaft"),
                          ("diff.tau_fric", "limited-slip clutch (left to right)")]),
        ("tire force [N]", [("vehicle.F_t_left", "left tire (ice)"), ("vehicle.F_t_right", "right tire (asphalt)")]),
        ("speed [m/s]", [("vehicle.v", "vehicle")]),
        (FLAGS, [("vehicle.stick_left", "left tire"), ("vehicle.stick_right", "right tire"),
                 ("diff.locked", "limited-slip clutch")])]),
    "msl_friction": ("MSL Friction: motor, clutch, spring and brake", [
        ("speed [rad/s]", [("clutch.w_1", "w motor side (J = 1)"), ("clutch.w_2", "w clutch output (J = 0.05)"),
                           ("brake.w", "w braked body (J = 1)")]),
        ("torque [N.m]", [("clutch.tau_fric", "clutch"), ("brake.tau_fric", "brake on its body"),
                          ("spring.tau_2", "spring on the braked body")]),
        (FLAGS, [("clutch.locked", "clutch"), ("brake.locked", "brake")])]),
    "msl_one_way_clutch": ("MSL OneWayClutch: freewheel with an engaged friction clutch", [
        ("speed [rad/s]", [("clutch.w_1", "w_1 driving body"), ("clutch.w_2", "w_2 driven body")]),
        ("clamp force [N]", [("clutch.f_n", "f_n of the clutch")]),
        (FLAGS, [("clutch.locked", "locked")])]),
    "msl_simple_gear_shift": ("MSL SimpleGearShift: planetary two-speed shift", [
        ("speed [rad/s]", [("gear.w_sun", "engine (sun)"), ("gear.w_carrier", "load (carrier)"),
                           ("gear.w_ring", "ring")]),
        ("torque [N.m]", [("gear.tau_fric_c", "clutch (sun to ring)"), ("gear.tau_fric_b", "brake on the ring")]),
        (FLAGS, [("gear.locked_b", "brake"), ("gear.locked_c", "clutch")])]),
}


def family_record(family: str | None) -> list[str]:
    """What a run of a system of ``family`` records besides its plotted signals and every
    connected output (the family module's RECORD)."""
    return {"z3": z3.RECORD, "fan": fan.RECORD, "r3_spring": r3.SPRING_RECORD,
            "r3_clearance": r3.CLEARANCE_RECORD, **msl.RECORD}.get(family, [])


def declared(system) -> dict[str, dict[str, str]]:
    """{instance: {variable: its FMI type}} for the components that are this project's elements."""
    variables = {e.__name__: {v.name: v.type for v in e.VARIABLES} for e in ELEMENTS}
    return {name: variables[c.element] for name, c in system.components.items() if c.element in variables}


def family_of(system) -> str | None:
    """The documented family whose plotted signals all exist in ``system`` (a copy of z3
    edited or renamed is still plotted as Z3), None if none."""
    variables = declared(system)
    for family, (_, panels) in PLOTS.items():
        keys = [key for _, signals in panels for key, _ in signals]
        if all(key.split(".", 1)[1] in variables.get(key.split(".", 1)[0], ()) for key in keys):
            return family
    return None


def default_record(system) -> list[str]:
    """What a run records: the family's signals that exist, then every connected output."""
    variables = declared(system)
    family = family_of(system)
    plotted = [key for _, signals in PLOTS[family][1] for key, _ in signals] if family else []
    wanted = [key for key in family_record(family) + plotted
              if key.split(".", 1)[1] in variables.get(key.split(".", 1)[0], ())]
    return list(dict.fromkeys(wanted + [f"{c.source}.{c.output}" for c in system.connections]))
