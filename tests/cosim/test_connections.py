"""Connections are checked when a system is loaded (an .ssd, an .ssp) and when it runs:
each joins an existing output to an existing input of the same type and unit, and no input
is driven twice.  Every problem is named with both ends; before, a speed wired to a
torque input ran silently (issue 17, item 7)."""
from __future__ import annotations

import zipfile

import pytest

from drivetrain_fmu import cli
from drivetrain_fmu.systems.master import Connection, Instance, run
from drivetrain_fmu.systems.ssp import CATALOG, parse_ssd, write_ssp

Z3 = (CATALOG / "z3.ssd").read_bytes()


def _z3_with(old: bytes, new: bytes) -> bytes:
    assert Z3.count(old) == 1, old
    return Z3.replace(old, new)


@pytest.mark.parametrize("old, new, message", [
    # a speed (the vehicle inertia's w, rad/s) wired to the clutch's torque input
    (b'startElement="engine_torque" startConnector="y"', b'startElement="vehicle" startConnector="w"',
     "connection vehicle.w -> clutch.tau_2: the units differ (rad/s and N.m)"),
    # the dimensionless Table where Z3 has its torque source
    (b'name="engine_torque" source="resources/TorqueTable.fmu"', b'name="engine_torque" source="resources/Table.fmu"',
     "connection engine_torque.y -> clutch.tau_2: the units differ (1 and N.m)"),
    # an output as the end of a connection, a misspelt connector, an input driven twice
    (b'endElement="clutch" endConnector="tau_2"', b'endElement="clutch" endConnector="w_2"',
     "connection engine_torque.y -> clutch.w_2: clutch.w_2 is an output, not an input"),
    (b'startElement="clamp_a" startConnector="y"', b'startElement="clamp_a" startConnector="yy"',
     "connection clamp_a.yy -> clutch.f_n_a: clamp_a.yy does not exist"),
    (b'startElement="clamp_b" startConnector="y" endElement="clutch" endConnector="f_n_b"',
     b'startElement="clamp_b" startConnector="y" endElement="clutch" endConnector="f_n_a"',
     "clutch.f_n_a is driven twice: by clamp_a.y and by clamp_b.y"),
])
def test_a_system_file_with_a_bad_connection_is_refused_when_loaded_naming_both_ends(old, new, message):
    with pytest.raises(ValueError) as info:
        parse_ssd(_z3_with(old, new))
    assert message in str(info.value)


def test_the_master_refuses_a_bad_connection_between_fmus_before_the_first_step(fmu_dir):
    """The same check in systems.master.run, from the FMUs' modelDescription (it covers
    FMUs that are not elements of this project): an Inertia's speed into a Clutch's torque."""
    inertia = Instance(fmu_dir / "Inertia.fmu", "flywheel", {"J": 1.0})
    clutch = Instance(fmu_dir / "Clutch.fmu", "clutch")
    try:
        with pytest.raises(ValueError, match=r"connection flywheel\.w -> clutch\.tau_1: the units differ "
                                             r"\(rad/s and N\.m\)"):
            run({"flywheel": inertia, "clutch": clutch}, [Connection("flywheel", "w", "clutch", "tau_1")],
                1.0, 0.1, ["clutch.w_1"])
    finally:
        inertia.free()
        clutch.free()


def test_the_command_line_names_a_bad_connection_in_one_line(tmp_path, capsys):
    """`drivetrain-fmu ssp` of an .ssp whose speed drives a torque input ends with one line
    naming the connection, a usage error (exit status 2; before: it ran silently)."""
    path = tmp_path / "bad.ssp"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("SystemStructure.ssd", _z3_with(b'startElement="engine_torque" startConnector="y"',
                                                         b'startElement="vehicle" startConnector="w"'))
    with pytest.raises(SystemExit) as info:
        cli.main(["ssp", str(path), "--step", "1e-3"])
    assert info.value.code == 2
    assert str(info.value).startswith(f"{path}: ") and "\n" not in str(info.value)
    assert "connection vehicle.w -> clutch.tau_2: the units differ (rad/s and N.m)" in str(info.value)
