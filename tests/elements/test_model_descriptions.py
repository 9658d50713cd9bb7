"""Every element of fmus.ELEMENTS builds into an FMU that fmpy validates and that meets the contract."""
import importlib.util
import math
import zipfile
import xml.etree.ElementTree as ET

import pytest
from fmpy.validation import validate_fmu

from drivetrain_fmu.fmus import ELEMENTS
from tests.conftest import ROOT

CHECKER = ROOT.parent / "shared" / "tools" / "check_fmus.py"


@pytest.mark.parametrize("element", ELEMENTS, ids=lambda e: e.__name__)
def test_validates_with_units_and_dependencies(fmu_dir, element):
    fmu = fmu_dir / f"{element.__name__}.fmu"
    assert validate_fmu(str(fmu)) == []
    root = ET.fromstring(zipfile.ZipFile(fmu).read("modelDescription.xml"))
    scalars = root.find("ModelVariables").findall("ScalarVariable")
    declared = {u.get("name") for u in root.iter("Unit")}
    table = {v.name: v for v in element.VARIABLES}
    assert [sv.get("name") for sv in scalars] == list(table)
    for sv in scalars:
        var = table[sv.get("name")]
        assert sv.get("description") == var.description
        real = sv.find("Real")
        if var.unit:
            assert real.get("unit") == var.unit and var.unit in declared
        # the declared range, inclusive as FMI reads min/max (J > 0: the next float above 0)
        typed = sv.find(var.type)
        lo, hi = var.bounds()
        assert typed.get("min") == (None if lo == -math.inf else str(int(math.ceil(lo))) if var.type == "Integer"
                                    else repr(lo)), var.name
        assert typed.get("max") == (None if hi == math.inf else str(int(hi)) if var.type == "Integer"
                                    else repr(hi)), var.name
        if var.start is not None and var.type != "Boolean":
            assert lo <= var.start <= hi, var.name
    outputs = root.find("ModelStructure/Outputs").findall("Unknown")
    index = {sv.get("name"): str(i) for i, sv in enumerate(scalars, start=1)}
    for unknown in outputs:
        var = table[scalars[int(unknown.get("index")) - 1].get("name")]
        assert unknown.get("dependencies").split() == [index[d] for d in var.depends]
    initial = root.find("ModelStructure/InitialUnknowns").findall("Unknown")
    assert [u.get("index") for u in initial] == [u.get("index") for u in outputs]
    # declared exactly (OMSimulator reads a missing attribute as "depends on every input" and
    # reported algebraic loops): the parameters and the output's own feedthrough inputs
    parameters = {index[v.name] for v in element.VARIABLES if v.causality == "parameter"}
    for unknown in initial:
        var = table[scalars[int(unknown.get("index")) - 1].get("name")]
        assert unknown.get("dependencies") is not None, var.name
        assert set(unknown.get("dependencies").split()) == parameters | {index[d] for d in var.depends}, var.name


@pytest.mark.skipif(not CHECKER.exists(), reason="shared contract checker not present")
def test_contract_checker_is_clean(fmu_dir, capsys):
    spec = importlib.util.spec_from_file_location("check_fmus", CHECKER)
    checker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checker)
    findings = {f.name: checker.check(f) for f in sorted(fmu_dir.glob("*.fmu"))}
    assert findings and all(not f for f in findings.values()), findings
