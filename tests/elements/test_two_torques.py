"""Two torques per member (docs/contract.md, "Two torques per member"), for every element of
``fmus.MODELS``: each external torque input (unit N.m: every such input is a torque on a
member) has a second input ``<first>_2`` that the element adds to it, so that two
connections on one member (an MSL connection set: a spring and a damper on one flange) need
no arithmetic in the master.

The law checked is the superposition of torques on one rigid member: the member feels the
sum of what acts on it, so splitting T into T_1 + T_2 between the two inputs must give the
run with T on the first input, bit for bit (tolerance 0: T_1 + T_2 is exact in binary,
1 + 2 = 3 and 128 + 256 = 384, so both runs hand the physics the same float, and the same
operations follow).  The split is tried at a small torque (3 N.m, which a default clutch
or brake may hold) and at a large one (384 N.m, beyond every default friction capacity, so
that the member must slip or move), where the run with T_1 alone is checked to differ: the
second input's share acts (the check would otherwise be blind to an ignored input).

The models run in-process (the built FMUs carry the same code; the declarations checked
here are those the build writes into modelDescription.xml, tests/elements/test_model_descriptions.py).
"""
from __future__ import annotations

import pytest

from drivetrain_fmu import fmus
from drivetrain_fmu.fmus.variables import INPUT, OUTPUT, full_counts

STEPS = 20
#: the inputs declared before the naming rule, kept as they were: Inertia's second torque
#: on its one body is tau_2
NAMED_BEFORE = {("Inertia", "tau_1"): "tau_2"}


def torque_inputs(model):
    return [v for v in model.VARIABLES if v.causality == INPUT and v.unit == "N.m"]


def second_name(model, first: str) -> str:
    return NAMED_BEFORE.get((model.__name__, first), f"{first}_2")


def firsts(model):
    """The first torque inputs of ``model``: its torque inputs that are no member's second."""
    names = [v.name for v in torque_inputs(model)]
    seconds = {second_name(model, name) for name in names}
    return [name for name in names if name not in seconds]


MEMBERS = [(model, first) for model in fmus.MODELS for first in firsts(model)]


def run(model, torques: dict) -> list:
    """Every output (the feedthrough ones at the inputs set) after each of STEPS default steps,
    with every counted family in use and the inputs ``torques`` set over the defaults; each
    Real as its repr (bit for bit, the sign of zero too)."""
    instance = model(resources=None)
    instance.assign(full_counts(model.VARIABLES))
    instance.initialize()
    instance.assign(torques)
    outputs = [v.name for v in model.VARIABLES if v.causality == OUTPUT]
    rows = []
    for k in range(STEPS):
        refused = instance.take_step(k * model.DEFAULT_STEP, model.DEFAULT_STEP)
        assert refused is None, (model.__name__, torques, refused)
        instance.update_feedthrough()
        rows.append([repr(getattr(instance, name)) for name in outputs])
    return rows


def test_every_member_torque_has_its_second_input():
    """Each first torque input has ``<first>_2`` (Inertia: tau_2), an N.m input summed with
    it (``adds_to``), default 0, declared after every other variable but the seconds (the
    value references of the older variables stay), and every output that depends on the
    first without delay depends on the second too."""
    missing = []
    for model in fmus.MODELS:
        declared = {v.name: v for v in model.VARIABLES}
        for first in firsts(model):
            second = declared.get(second_name(model, first))
            if second is None or getattr(second, "adds_to", None) != first:
                missing.append(f"{model.__name__}: {second_name(model, first)} (second torque on the member of "
                               f"{first}) is {'not declared' if second is None else 'not summed with it'}")
                continue
            assert (second.causality, second.unit, second.start) == (INPUT, "N.m", 0.0), (model.__name__, second)
            lagging = [v.name for v in model.VARIABLES if first in v.depends and second.name not in v.depends]
            assert not lagging, f"{model.__name__}: {lagging} depend on {first} but not on {second.name}"
    assert not missing, "\n".join(missing)


#: the second inputs declared before the rule, where they stand: Inertia's, VehicleSimple's
DECLARED_BEFORE = {("Inertia", "tau_2"), ("VehicleSimple", "tau_wheel_2")}


def test_the_seconds_are_declared_last():
    """The seconds come after every other variable (the value references of those stay)."""
    for model in fmus.MODELS:
        names = [v.name for v in model.VARIABLES]
        added = [second_name(model, first) for first in firsts(model)
                 if (model.__name__, second_name(model, first)) not in DECLARED_BEFORE]
        assert names[len(names) - len(added):] == added, model.__name__


@pytest.mark.parametrize("model, first", MEMBERS, ids=[f"{m.__name__}-{f}" for m, f in MEMBERS])
@pytest.mark.parametrize("parts", [(1.0, 2.0), (128.0, 256.0)], ids=["3=1+2", "384=128+256"])
def test_a_torque_split_between_the_two_inputs_acts_as_on_one(model, first, parts):
    part_1, part_2 = parts
    total = part_1 + part_2
    assert total - part_1 == part_2           # the split is exact in binary
    second = second_name(model, first)
    on_one = run(model, {first: total, second: 0.0})
    split = run(model, {first: part_1, second: part_2})
    assert split == on_one, f"{model.__name__}: {first} = {part_1} + {second} = {part_2} differs from {first} = {total}"
    if total > 100.0:       # beyond every default friction capacity: the member moves with its torque
        assert run(model, {first: part_1, second: 0.0}) != on_one, f"{model.__name__}: {second} acts on nothing"
