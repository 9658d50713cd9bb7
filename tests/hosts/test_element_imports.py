"""A system FMU imports the modules of its elements only (fmus.REGISTRY, fmus.model_class),
and each FMU's entry point makes its own copy of the element code one the packages import
from (build_fmus.OWN_PACKAGE_PATHS).  Its first instantiation compiles none of the source
modules it carries (compiled_modules.bytecode), imports none of pythonfmu's Python (the FMU
carries only its binary: fmus/fmi2.py) nor hashlib (fmus.FINGERPRINT_FILE), and makes no
dataclass (the compiled records: fmus/variables.pxd).

Both run in fmpy in a process of its own that imports nothing of this project, as an
engineer's script: the FMU's copy of the element code is the process's.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig

import pytest

from drivetrain_fmu import build_fmus

#: r3_spring_1's NonlinearSpring is none of Z3's elements, nor imported by them
SECOND = "r3_spring_1"

HOST = r'''
import builtins, json, shutil, struct, sys
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave

compiled = []           # the files Python compiles from their source (the import system's calls)
_compile = builtins.compile
def _recording(source, filename, *args, **kwargs):
    compiled.append(str(filename))
    return _compile(source, filename, *args, **kwargs)
builtins.compile = _recording

generated = []          # the methods the standard library's @dataclass writes as text and compiles
def _audit(event, args):
    text = args[0].decode() if event == "compile" and isinstance(args[0], bytes) else args[0]
    if event == "compile" and isinstance(text, str) and text.startswith("def __create_fn__("):
        generated.append(text.split("\n", 2)[1].strip())
sys.addaudithook(_audit)

def run(fmu, folder, steps):
    """(every Real output after each of ``steps`` steps of the default step, as hex; the
    element modules loaded after instantiation; the modules the instantiation imported; the
    files it compiled; the dataclass methods it wrote)."""
    md = read_model_description(fmu)
    reals = [v.valueReference for v in md.modelVariables if v.causality == "output" and v.type == "Real"]
    slave = FMU2Slave(guid=md.guid, unzipDirectory=extract(fmu, folder),
                      modelIdentifier=md.coSimulation.modelIdentifier, instanceName="imports")
    before = set(sys.modules)
    del compiled[:], generated[:]
    slave.instantiate()
    imported, sources, methods = sorted(set(sys.modules) - before), list(compiled), list(generated)
    loaded = sorted(name for name in sys.modules if name.startswith("drivetrain_fmu.fmus."))
    slave.setupExperiment(startTime=0.0)
    slave.enterInitializationMode()
    slave.exitInitializationMode()
    h, rows = float(md.defaultExperiment.stepSize), []
    for n in range(steps):
        slave.doStep(n * h, h)
        values = slave.getReal(reals)
        rows.append(struct.pack(f"{len(values)}d", *values).hex())
    slave.terminate()
    slave.freeInstance()
    return rows, loaded, imported, sources, methods

runs = json.loads(sys.argv[1])
results = []
for fmu, folder, steps, remove in runs:
    results.append(run(fmu, folder, steps))
    if remove:          # as fmpy's simulate_fmu does with its extraction after a run
        shutil.rmtree(folder)
print("RESULT " + json.dumps(results))
'''


@pytest.fixture(scope="module")
def system_fmus(fmu_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("system_fmus")
    return {name: build_fmus.build_system_fmu(name, out) for name in ("z3", SECOND)}


def _host(runs) -> list:
    done = subprocess.run([sys.executable, "-c", HOST, json.dumps(runs)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.split("RESULT ", 1)[1])


def test_a_system_fmu_imports_the_modules_of_its_elements_only(system_fmus, tmp_path):
    [(rows, loaded, *_)] = _host([[str(system_fmus["z3"]), str(tmp_path / "z3"), 1, False]])
    prefix = "drivetrain_fmu.fmus."
    for needed in ("clutch", "shaft", "inertia", "table"):      # Z3's DualClutch, Shafts, Inertia, tables
        assert prefix + needed in loaded, loaded
    for unused in ("vehicle", "axle_vehicle", "torque_converter", "nonlinear_spring", "backlash", "brake"):
        assert prefix + unused not in loaded, loaded


def test_an_element_fmu_imports_its_own_model_s_module_only(fmu_dir, tmp_path):
    """The Clutch FMU's entry point asks for its own class (fmus._element_fmu): its first
    instantiation imports the clutch module and what it uses, no other element's module and
    none of their solvers.  It made every element's FMU class before (fmus.ELEMENTS), which
    imported all 17 element modules: 133 M instructions in fmi2Instantiate, now 54 M."""
    from drivetrain_fmu import fmus

    [(rows, loaded, imported, *_)] = _host([[str(fmu_dir / "Clutch.fmu"), str(tmp_path / "clutch"), 1, False]])
    elements = {name for name in loaded if name.rpartition(".")[2] in fmus._MODULES}
    assert elements == {"drivetrain_fmu.fmus.clutch"}, loaded
    for unused in ("vehicle", "tire", "backlash", "elasto_backlash", "pwa", "lcp", "gear"):
        assert f"drivetrain_fmu.solvers.{unused}" not in imported, imported
    assert rows
    # nor json (FMU states only), which fmpy's process had imported: in a bare interpreter
    resources = tmp_path / "clutch" / "resources"
    done = subprocess.run([sys.executable, "-I", "-c", BARE, str(resources)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["Clutch", "[]"], done.stdout


#: the Clutch FMU's class made as pythonfmu's binary makes it, in an interpreter that imported
#: nothing else: which of the modules pythonfmu's Python imported are loaded then
BARE = """
import sys
sys.path.insert(0, sys.argv[1])
import Clutch_fmu
print(type(Clutch_fmu.Clutch(instance_name="bare", resources=sys.argv[1])).__name__)
print([m for m in ("json", "datetime", "uuid", "xml.etree.ElementTree") if m in sys.modules])
"""


def test_a_second_fmu_imports_its_elements_after_the_first_one_s_copy_is_gone(system_fmus, tmp_path):
    """Z3 runs first, from a folder then deleted; r3_spring_1, run next from its own folder,
    imports its NonlinearSpring from its own copy and gives the outputs it gives alone in a
    fresh process, bit for bit."""
    first, second = tmp_path / "first", tmp_path / "second"
    [_, (after, loaded, *_)] = _host([[str(system_fmus["z3"]), str(first), 5, True],
                                  [str(system_fmus[SECOND]), str(second), 200, False]])
    [(alone, *_)] = _host([[str(system_fmus[SECOND]), str(tmp_path / "alone"), 200, False]])
    assert "drivetrain_fmu.fmus.nonlinear_spring" in loaded
    assert not first.exists()
    assert len(set(alone)) > 100, "the spring's system moves"
    assert after == alone


def test_a_system_fmu_s_first_instantiation_compiles_no_module_and_imports_no_pythonfmu(system_fmus, tmp_path):
    """Z3's first instantiation in a fresh process under PYTHONDONTWRITEBYTECODE (as this
    machine's and CI's environment, and as fmpy's simulate_fmu, which extracts the FMU anew for
    every run): Python compiles no module of the FMU's packages from its source, which it
    did for pythonfmu's seven and the packages' three ``__init__`` (about 4 ms), and for the
    entry point (3.5 % of the instructions; pythonfmu's binary compiles its text all the same,
    without Python's compile()); it imports none of pythonfmu's Python (its builder
    pulled in argparse, logging and xml.dom, about 9 ms; its Fmi2Slave xml.etree, uuid and
    datetime for the modelDescription it writes at build time, about a quarter of the
    instructions left) nor hashlib (OpenSSL: about 3 ms).
    Compiled, it writes no dataclass method: the records (fmus/variables.pxd, the solvers'
    Budget, InterfaceLaw and InterfaceHeat) are extension types whose methods Cython wrote at
    build time; the standard library's @dataclass wrote 30 as text and compiled each, about a
    fifth of the instantiation's instructions."""
    folder = tmp_path / "z3"
    [(_, loaded, imported, sources, methods)] = _host([[str(system_fmus["z3"]), str(folder), 1, False]])
    assert "drivetrain_fmu.fmus.clutch" in loaded and "drivetrain_fmu.fmus.fmi2" in imported, imported
    assert [name for name in imported if name.split(".")[0] == "pythonfmu"] == [], imported
    resources = str(folder / "resources")
    assert [s for s in sources if s.startswith(resources)] == []
    for unwanted in ("argparse", "logging", "xml.etree.ElementTree", "uuid", "datetime", "hashlib"):
        assert unwanted not in imported, imported
    if (folder / "resources" / "drivetrain_fmu" / "fmus" / f"variables{sysconfig.get_config_var('EXT_SUFFIX')}").is_file():
        assert methods == []
