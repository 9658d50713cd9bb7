"""The documented systems as data: systems/catalog/ssd/*.ssd, one SSP 1.0 file per system.

Every file is read by simulation, export, the monolithic references and the other tests,
so these checks guard the data itself: schema-valid SSP 1.0, every parameter one the
element declares and within its allowed range, every connection an output driving an
input of the same unit, and the published parameter values of REFERENCE_CASES.md.
"""
from __future__ import annotations

import pytest
from lxml import etree

from drivetrain_fmu.fmus import ELEMENTS
from drivetrain_fmu.fmus.variables import INPUT, OUTPUT, PARAMETER
from drivetrain_fmu.systems.catalog import fan, r3, z3
from drivetrain_fmu.systems.ssp import CATALOG, catalog, load_system

VARIABLES = {element.__name__: {v.name: v for v in element.VARIABLES} for element in ELEMENTS}


def test_catalog_lists_every_documented_system():
    """Z3, the six Fan cases, three R3 spring and three R3 clearance cases, three MSL examples, the planetary upshift,
    the automatic launch, the repeated launches heating a clutch, the synchronizer upshift, the
    split-mu launch with an open and a limited-slip differential."""
    assert catalog() == sorted(["z3", "fan_F1", "fan_F2", "fan_F2_100", "fan_F2_100_stribeck", "fan_F3",
                                "fan_F3_harmonics",
                                *(f"r3_spring_{c}" for c in (1, 2, 3)), *(f"r3_clearance_{c}" for c in (1, 2, 3)),
                                "msl_friction", "msl_one_way_clutch", "msl_simple_gear_shift", "planetary_shift",
                                "automatic_launch", "heating_clutch", "synchro_upshift", "split_mu_open",
                                "split_mu_lsd"])


@pytest.mark.parametrize("name", catalog())
def test_system_file_is_valid_ssp_1_0(name):
    """Schema validation with the SSP 1.0 XSD that fmpy ships (fmpy.ssp.ssd.validate_tree
    raises on the first violation)."""
    from fmpy.ssp.ssd import validate_tree

    root = etree.parse(str(CATALOG / f"{name}.ssd")).getroot()
    validate_tree(root, "SystemStructureDescription.xsd")
    assert root.get("version") == "1.0" and root.get("name") == name and root.get("description")


@pytest.mark.parametrize("name", catalog())
def test_parameters_are_declared_and_within_range(name):
    """...and the step-mean compliances average over the system's own step (T_comm = step)."""
    system = load_system(name)
    assert system.stop > 0.0 and 0.0 < system.step <= system.stop
    assert {c.parameters["T_comm"] for c in system.components.values() if c.parameters.get("T_comm")} <= {system.step}
    for instance, component in system.components.items():
        assert component.element in VARIABLES, f"{instance}: unknown element {component.element}"
        declared = VARIABLES[component.element]
        for parameter, value in component.parameters.items():
            var = declared.get(parameter)
            # an input bound in the file is a constant input on purpose (Fan's throttle and
            # clamp force): systems.ssp.unconnected_inputs
            assert var is not None and var.causality in (PARAMETER, INPUT), f"{instance}.{parameter} is not a parameter"
            assert var.violation(value) is None, f"{instance}: {var.violation(value)}"


@pytest.mark.parametrize("name", catalog())
def test_every_component_initializes_with_its_parameters(name):
    """Each element, instantiated in this process with the file's parameters, passes its
    own checks: the single ranges and the relations between parameters (mu_k <= mu_s,
    increasing table times, equal start speeds of a clutch locked at the start, ...)."""
    classes = {element.__name__: element for element in ELEMENTS}
    for instance, component in load_system(name).components.items():
        slave = classes[component.element](instance_name=instance, resources=None)
        for parameter, value in component.parameters.items():
            setattr(slave, parameter, value)
        assert slave.parameter_problems() == [], instance


@pytest.mark.parametrize("name", catalog())
def test_connections_join_an_output_to_an_input_of_the_same_unit(name):
    """Each input is driven once, by an output of the same unit (torque, force and speed
    sources declare theirs: OMSimulator refuses a connection between different units)."""
    system = load_system(name)
    driven = set()
    for c in system.connections:
        source = VARIABLES[system.components[c.source].element][c.output]
        target = VARIABLES[system.components[c.target].element][c.input]
        assert source.causality == OUTPUT and target.causality == INPUT, c
        assert (c.target, c.input) not in driven, f"{c.target}.{c.input} driven twice"
        driven.add((c.target, c.input))
        assert source.unit == target.unit, c


def test_files_hold_the_published_parameter_cases():
    """REFERENCE_CASES.md: Z3 400 N.m, clamp 6000 N, shift at 4 s over 0.5 s; Fan F1-F3
    engine torques, clutch capacities and road friction; R3 Tables 12 and 16."""
    assert (z3.ENGINE_TORQUE, z3.CLAMP_FORCE, z3.SHIFT_START, z3.SHIFT_DURATION) == (400.0, 6000.0, 4.0, 0.5)
    assert z3.clamp_forces(4.25) == (3000.0, 3000.0)
    published = {"F1": (200.0, 5000.0, 5000.0, 0.8, 0.75), "F2": (323.47, 400.0, 320.0, 0.8, 0.75),
                 "F2_100": (100.0, 100.0, 80.0, 0.8, 0.75), "F2_100_stribeck": (100.0, 100.0, 80.0, 0.8, 0.75),
                 "F3": (-168.48, 400.0, 320.0, 0.1, 0.07), "F3_harmonics": (-60.0, 400.0, 320.0, 0.1, 0.07)}
    for case, values in published.items():
        assert tuple(fan.case_values(case)[k] for k in fan.CASE_VALUES) == pytest.approx(values, rel=1e-15), case
    assert fan.driven_wheel("F3") == "f" and fan.system("F3").components["engine"].parameters["w_start"] == -20.0
    harmonics = fan.system("F3_harmonics").components["engine"].parameters
    assert (harmonics["h2"], harmonics["h4"]) == (1.8, 0.7)
    assert r3.SPRING_CASES == {1: (6e-3, 800.0, 20000.0), 2: (7e-3, 800.0, 20000.0), 3: (0.25e-3, 20000.0, 800.0)}
    assert r3.CLEARANCE_CASES == {1: (1e-4, 0.0), 2: (1e-4, 1.0), 3: (2e-3, 0.0)}
    assert (r3.J_Z, r3.J_W, r3.J_V, r3.J_WV) == (3.4093, 1.5, 135.0, 136.5)


def test_step_mean_compliances_follow_the_communication_step():
    """A compliance bound with T_comm > 0 averages over the step it runs at (Z3's shafts,
    the R3 spring); ``step_mean=False`` gives the torque at the point (T_comm = 0)."""
    assert {c.parameters["T_comm"] for c in z3.components(2e-3).values() if "T_comm" in c.parameters} == {2e-3}
    assert r3.spring_components(1, 5e-3)["spring"].parameters["T_comm"] == 5e-3
    assert r3.spring_components(1, 5e-3, step_mean=False)["spring"].parameters["T_comm"] == 0.0
    with pytest.raises(ValueError, match="unknown system 'z4'"):
        load_system("z4")
