"""What an .ssd or the command line gives a run is checked and named (issue 30, section 2):
Integer values against FMI 2.0's 32-bit Integer, the type of each bound value against its
variable's, step and stop times (finite, > 0, a step count and a recorded table that fit),
the units written on the file's connectors against the FMUs' declared units, and the
inputs that no connection drives.  Each was a silent wrong run or an internal error before
(the docstring of each test says which)."""
from __future__ import annotations

import re

import pytest

from drivetrain_fmu.systems import master, ssp
from drivetrain_fmu.systems.ssp import CATALOG, catalog, load_system, parse_ssd
from tests.cli.test_cli_errors import assert_refused, cli

Z3 = (CATALOG / "z3.ssd").read_text()
F2 = (CATALOG / "fan_F2.ssd").read_text()


def _edited(document: str, old: str, new: str) -> str:
    assert document.count(old) == 1, old
    return document.replace(old, new)


def _clutch_surfaces(value: str) -> str:
    """fan_F2 with the clutch's n_surfaces (an Integer parameter, 2) bound to ``value``
    (the XML of a value element)."""
    return _edited(F2, '<ssv:Integer value="2" />', value)


@pytest.mark.parametrize("value, shown", [("4294967298", "4294967298"),      # 2**32 + 2: ran as 2
                                          ("99999999999999999999999", "99999999999999999999999"),  # -159383553
                                          ("-2147483649", "-2147483649")])
def test_an_integer_outside_32_bits_is_refused_naming_the_parameter_and_the_range(tmp_path, fmu_dir, value, shown):
    """2**32 + 2 ran silently as 2 (fmpy's setInteger wraps it into a C int), and
    99999999999999999999999 was refused as -159383553 by the FMU."""
    (tmp_path / "mine.ssd").write_text(_clutch_surfaces(f'<ssv:Integer value="{value}" />'))
    assert_refused(cli("run", "mine.ssd", "--stop", "0.001", "--fmus", fmu_dir, cwd=tmp_path), 2,
                   f"mine.ssd: component 'clutch': parameter 'n_surfaces' = {shown} is outside the range of an "
                   "FMI 2.0 Integer (a 32-bit int: -2147483648 to 2147483647)")


def test_export_fmu_refuses_an_integer_outside_32_bits_before_building(tmp_path):
    """`export-fmu` wrote 4294967298 as the start of clutch.n_surfaces into a
    modelDescription that fmpy refuses to read."""
    (tmp_path / "mine.ssd").write_text(_clutch_surfaces('<ssv:Integer value="4294967298" />'))
    assert_refused(cli("export-fmu", "mine.ssd", "--out", tmp_path / "out", cwd=tmp_path), 2,
                   "parameter 'n_surfaces' = 4294967298 is outside the range of an FMI 2.0 Integer")
    assert not (tmp_path / "out").exists()


def test_the_master_refuses_to_set_an_integer_that_would_wrap(fmu_dir):
    """systems.master.Instance sets values for any FMU (an archive's of another tool too):
    2**32 + 2 into an Integer is refused naming the variable, not wrapped to 2."""
    with pytest.raises(master.SetValueError, match=r"^clutch\.n_surfaces = 4294967298 is outside the range of an FMI 2\.0 "
                                            r"Integer"):
        master.Instance(fmu_dir / "Clutch.fmu", "clutch", {"n_surfaces": 2 ** 32 + 2})


def test_a_real_value_for_an_integer_parameter_names_the_parameter_and_the_file(tmp_path, fmu_dir):
    """It ended with exit status 1 and "setInteger failed ('float' object cannot be
    interpreted as an integer)", naming neither the parameter nor the file."""
    (tmp_path / "mine.ssd").write_text(_clutch_surfaces('<ssv:Real value="2.0" />'))
    assert_refused(cli("run", "mine.ssd", "--stop", "0.001", "--fmus", fmu_dir, cwd=tmp_path), 2,
                   "mine.ssd: clutch: n_surfaces = 2.0 is a Real value; the variable is an Integer: write "
                   '<ssv:Integer value="2"/>')


@pytest.mark.parametrize("argv, message", [
    # 5e-324 passed the "finite, > 0" check and overflowed the step count: OverflowError, exit 1
    (["--step", "5e-324"], "--step 4.94066e-324 makes inf steps of the stop time 10 s of z3; at most 4.5e+15 (2**52"),
    (["--step", "1e-300", "--stop", "1e-280"], "--step 1e-300 makes 1e+20 steps of the stop time 1e-280 s of z3; "
                                               "at most 4.5e+15"),
    # asked numpy for 74.6 PiB: MemoryError, exit 1
    (["--stop", "1e12"], "a run to 1e+12 s with a row every 0.002 s records 5e+14 rows of 23 signals: "),
])
def test_a_step_or_stop_on_the_command_line_that_cannot_run_is_a_usage_error(tmp_path, argv, message):
    assert_refused(cli("run", "z3", *argv, "--fmus", tmp_path / "fmus", cwd=tmp_path), 2, message)
    assert not (tmp_path / "fmus").exists()


@pytest.mark.parametrize("old, new, message", [
    ('stopTime="10.0"', 'stopTime="nan"', "the DefaultExperiment's stopTime 'nan' must be a finite number of "
                                          "seconds > 0"),
    ('stopTime="10.0"', 'stopTime="0"', "the DefaultExperiment's stopTime '0' must be a finite number of seconds > 0"),
    ('stopTime="10.0"', 'stopTime="5e-324"', "the step written in the file, 0.002 does not divide the stop time "
                                             "4.94066e-324 s of mine.ssd"),
    ('size="0.002"', 'size="nan"', "the DefaultExperiment's step size 'nan' must be a finite number of seconds > 0"),
    ('size="0.002"', 'size="0"', "the DefaultExperiment's step size '0' must be a finite number of seconds > 0"),
    ('size="0.002"', 'size="5e-324"', "the step written in the file, 4.94066e-324 makes inf steps of the stop "
                                      "time 10 s of mine.ssd"),
])
def test_a_step_or_stop_in_the_file_that_cannot_run_is_a_usage_error(tmp_path, old, new, message):
    """NaN, 0 and 5e-324 in an .ssd ended in an internal error (ValueError, ZeroDivisionError,
    OverflowError) with exit status 1."""
    (tmp_path / "mine.ssd").write_text(_edited(Z3, old, new))
    assert_refused(cli("run", "mine.ssd", "--fmus", tmp_path / "fmus", cwd=tmp_path), 2, message)


UNITS = """<ssd:Units>
    <ssc:Unit name="rad/s"><ssc:BaseUnit rad="1" s="-1" /></ssc:Unit>
    <ssc:Unit name="kN"><ssc:BaseUnit kg="1" m="1" s="-2" factor="1000" /></ssc:Unit>
    <ssc:Unit name="N.m"><ssc:BaseUnit kg="1" m="2" s="-2" /></ssc:Unit>
  </ssd:Units>
  <ssd:DefaultExperiment"""


def _z3_with_unit(component: str, connector: str, unit: str) -> str:
    """z3.ssd with the ssc:Unit definitions (SSP 1.0: after the System) and ``connector`` of
    ``component`` marked with ``unit``."""
    document = _edited(Z3, "<ssd:DefaultExperiment", UNITS)
    start = document.index(f'<ssd:Component name="{component}"')
    at = document.index(f'<ssd:Connector name="{connector}"', start)
    end = document.index("<ssc:Real />", at)
    return document[:end] + f'<ssc:Real unit="{unit}" />' + document[end + len("<ssc:Real />"):]


@pytest.mark.parametrize("component, connector, unit, declared", [
    ("clutch", "tau_2", "rad/s", "N.m"),           # a torque input marked as a speed
    ("clutch", "f_n_a", "kN", "N"),                # a clamp force in kN: 1000 times off, the master converts none
    ("clamp_a", "y", "kN", "N"),                   # the source's end of the same connection
])
def test_a_connector_unit_that_differs_from_the_fmus_is_refused_naming_both(tmp_path, component, connector, unit,
                                                                           declared):
    """The units written on the .ssd's connectors were ignored: both ran silently."""
    document = _z3_with_unit(component, connector, unit)
    with pytest.raises(ValueError, match=re.escape(f"connector {component}.{connector} is marked {unit!r} in the "
                                                   f"file, but the FMU declares {connector} in {declared!r}")):
        parse_ssd(document.encode())
    (tmp_path / "mine.ssd").write_text(document)
    assert_refused(cli("run", "mine.ssd", "--fmus", tmp_path / "fmus", cwd=tmp_path), 2,
                   f"mine.ssd: system 'z3': connector {component}.{connector} is marked {unit!r}")


def test_a_connector_marked_with_its_fmus_unit_runs(fmu_dir, tmp_path):
    """No false alarm: tau_2 marked N.m (as Clutch declares it) is read, kept, and runs."""
    document = _z3_with_unit("clutch", "tau_2", "N.m")
    assert parse_ssd(document.encode()).connector_units == {("clutch", "tau_2"): "N.m"}
    (tmp_path / "mine.ssd").write_text(document)
    code, _, err = cli("run", "mine.ssd", "--stop", "0.01", "--fmus", fmu_dir, cwd=tmp_path)
    assert code == 0, err


def test_an_unconnected_clamp_force_is_named_in_a_warning(fmu_dir, tmp_path):
    """z3 without the connection of clamp_a to clutch.f_n_a: the odd clutch then runs open
    (f_n_a at its start, 0 N) and nothing said so."""
    link = re.search(r'\s*<ssd:Connection startElement="clamp_a"[^>]*/>', Z3).group(0)
    (tmp_path / "mine.ssd").write_text(Z3.replace(link, ""))
    code, _, err = cli("run", "mine.ssd", "--stop", "0.01", "--fmus", fmu_dir, cwd=tmp_path)
    assert code == 0, err
    warnings = [line for line in err.replace("\r", "\n").splitlines() if "warning" in line]
    assert warnings == ["drivetrain-fmu run: warning: mine.ssd: an input left unconnected, run at the start value: "
                        "clutch.f_n_a = 0 N (connect it, or bind the value in the component's parameter set to make "
                        "it deliberate)"], err


def test_export_fmu_names_an_unconnected_input_it_does_not_make_an_fmu_input(tmp_path):
    """The same z3 without its clamp-force connection exported as one FMU: the system FMU ran
    with that clutch open and export-fmu said nothing.  Made an FMU input (--input), the
    host drives it: no warning."""
    link = re.search(r'\s*<ssd:Connection startElement="clamp_a"[^>]*/>', Z3).group(0)
    (tmp_path / "mine.ssd").write_text(Z3.replace(link, ""))
    code, _, err = cli("export-fmu", "mine.ssd", "--out", tmp_path / "out", cwd=tmp_path)
    assert code == 0, err
    warnings = [line for line in err.replace("\r", "\n").splitlines() if "warning" in line]
    assert warnings == ["drivetrain-fmu export-fmu: warning: mine.ssd: an input left unconnected, run at the start "
                        "value: clutch.f_n_a = 0 N (connect it, or bind the value in the component's parameter set "
                        "to make it deliberate)"], err
    code, _, err = cli("export-fmu", "mine.ssd", "--input", "clutch.f_n_a", "--out", tmp_path / "out", cwd=tmp_path)
    assert code == 0 and "warning" not in err, err


def test_the_documented_systems_leave_no_input_unconnected_by_accident():
    """The rule's other side: no warning for the catalog.  Their unconnected inputs are free
    flanges (a torque input of start 0 N.m: R3's vehicle load side, the MSL examples' free
    ring) or bound in the file as constants (Fan's throttle 1 and clamp force 1000 N, which
    the file now states), and a catalog run prints no warning."""
    for name in catalog():
        system = load_system(name)
        assert ssp.unconnected_inputs(system.components, system.connections) == [], name
    fan = load_system("fan_F2").components
    assert fan["engine"].parameters["throttle"] == 1.0 and fan["clutch"].parameters["f_n"] == 1000.0


def test_a_flange_with_its_speed_connected_and_not_its_angle_is_refused(tmp_path):
    """fan_F2 without the engine's angle into the input shaft (its speed still connected):
    the shaft's torque would come from phi_1 held at 0 and the engine's speed; it ran."""
    document = re.sub(r'\s*<ssd:Connection startElement="engine" startConnector="phi"[^>]*/>', "", F2, count=1)
    assert document != F2
    (tmp_path / "mine.ssd").write_text(document)
    assert_refused(cli("run", "mine.ssd", "--fmus", tmp_path / "fmus", cwd=tmp_path), 2,
                   "input_shaft.w_1 is connected but input_shaft.phi_1 is not: a flange of Shaft needs the angle and "
                   "the speed of the same body")


def test_an_input_both_bound_and_connected_is_refused():
    """z3 with clutch.f_n_a bound to 6000 N in the file and driven by clamp_a: the connection
    overwrote the binding at the first exchange, silently."""
    start = Z3.index('<ssd:Component name="clutch"')
    end = Z3.index("</ssv:Parameters>", start)
    document = Z3[:end] + '<ssv:Parameter name="f_n_a"><ssv:Real value="6000.0" /></ssv:Parameter>' + Z3[end:]
    with pytest.raises(ValueError, match=re.escape("input clutch.f_n_a is both bound to 6000.0 and connected (from "
                                                   "clamp_a.y): remove one")):
        parse_ssd(document.encode())


def test_an_unconnected_ambient_temperature_is_named_only_when_the_thermal_model_is_on():
    """A clutch's T_amb acts on nothing without its thermal model: every catalog system with a
    Clutch was warned about it once the input existed.  With thermal = true it sets how the
    clutch cools, and an unconnected, unbound T_amb is named like any other input; bound in
    the parameter set, it is deliberate."""
    z3 = load_system("z3")
    assert ssp.unconnected_inputs(z3.components, z3.connections) == []
    heated = dict(z3.components)
    heated["clutch"] = ssp.Component(heated["clutch"].element, {**heated["clutch"].parameters, "thermal": True})
    assert ssp.unconnected_inputs(heated, z3.connections) == ["clutch.T_amb = 293.15 K"]
    heated["clutch"] = ssp.Component(heated["clutch"].element, {**heated["clutch"].parameters, "T_amb": 300.0})
    assert ssp.unconnected_inputs(heated, z3.connections) == []
