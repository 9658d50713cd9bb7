"""Element FMUs: the FMI shell (:mod:`fmus.shell`) around each element model (:mod:`fmus.model`).

``MODELS`` lists the element models; ``ELEMENTS`` their FMU classes, named as the models: the
single list that the build, the validation and the tests loop over.  ``fmus.Clutch`` is the
Clutch FMU, ``fmus.clutch.Clutch`` its model.

``REGISTRY`` names each model and its module.  ``MODELS``, ``ELEMENTS`` and the FMU classes
are made from it when first asked for, and :func:`model_class` imports one model's module
alone: an element FMU imports its model's module, a system FMU those of its elements, not all
of them, so the first instantiation in a host's Python is shorter.  The modules imported
later come from the package's ``__path__``, which each FMU's entry point extends by its own
copy (build_fmus.SCRIPT_PREAMBLE: the copy first loaded may be gone).
"""
import importlib
from pathlib import Path

from drivetrain_fmu import solvers


def source_fingerprint(folders=None) -> str:
    """SHA-256 of the ``fmus`` and ``solvers`` source files and C declarations (.pxd) as they
    are on disk now, in ``folders`` (their two folders; default those of the loaded packages: this module is
    shipped as source only, build_fmus.SOURCE_ONLY, so its ``__file__`` is the folder of the
    sources also when the modules beside it run compiled)."""
    import hashlib              # here: an FMU's first instantiation does without it (FINGERPRINT_FILE)

    digest = hashlib.sha256()
    for package in folders or (Path(__file__).parent, Path(solvers.__file__).parent):
        for path in sorted([*package.glob("*.py"), *package.glob("*.pxd")]):
            digest.update(f"{package.name}/{path.name}".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


#: the file beside this one in which a build stores :func:`source_fingerprint` of the sources it
#: ships (build_fmus.shipped_package): an FMU's copy reads it instead of hashing its sources
FINGERPRINT_FILE = "fingerprint.txt"


def stored_or_hashed(folder, hashed) -> str:
    """The fingerprint a build stored in ``folder`` (FINGERPRINT_FILE), else ``hashed()``: the
    source tree and an installed package have no stored one."""
    stored = Path(folder, FINGERPRINT_FILE)
    return stored.read_text().strip() if stored.is_file() else hashed()


# Read when the code is loaded: the files may go away while the code stays in use (fmpy's
# simulate_fmu deletes the extracted FMU, whose resources were the first copy imported).
_LOADED_FINGERPRINT = stored_or_hashed(Path(__file__).parent, source_fingerprint)


def code_fingerprint() -> str:
    """SHA-256 of the element code loaded in this process (``fmus`` and ``solvers`` sources,
    read when ``fmus`` was imported).

    Every FMU of a process shares one copy of these packages (the first FMU's resources
    or an installed copy win the import), so each FMU checks at load time that the loaded
    code is the code it was built with (see build_fmus.SLAVE_SCRIPT), and its FMU states
    carry it (fmus.shell)."""
    return _LOADED_FINGERPRINT


#: the registry: one line per element model, in the order the build, the docs and the tests list them
#: (module, model class) of every element model, in the order of ``MODELS``
REGISTRY = (
    ("clutch", "Clutch"),
    ("clutch", "DualClutch"),
    ("clutch", "ClutchChain"),
    ("brake", "Brake"),
    ("one_way_clutch", "OneWayClutch"),
    ("planetary_gear", "PlanetaryGear"),
    ("differential", "Differential"),
    ("torque_converter", "TorqueConverter"),
    ("synchronizer", "Synchronizer"),
    ("inertia", "Inertia"),
    ("inertia", "Engine"),
    ("gear", "Gear"),
    ("shaft", "Shaft"),
    ("nonlinear_spring", "NonlinearSpring"),
    ("backlash", "Backlash"),
    ("elasto_backlash", "ElastoBacklash"),
    ("vehicle", "Vehicle"),
    ("vehicle_simple", "VehicleSimple"),
    ("axle_vehicle", "AxleVehicle"),
    ("table", "Table"),
    ("table", "TorqueTable"),
    ("table", "ForceTable"),
    ("table", "SpeedTable"),
    ("sources", "SineTorque"),
    ("sources", "SpeedDependentTorque"),
    ("lockup_control", "LockupControl"),
)
_MODULE_OF = {name: module for module, name in REGISTRY}
_MODULES = frozenset(_MODULE_OF.values())
__all__ = ["ELEMENTS", "MODELS", *_MODULE_OF]


def model_class(name: str):
    """The element model ``name`` (of ``REGISTRY``), importing its module alone."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise KeyError(f"no element model {name!r}: the elements are {', '.join(_MODULE_OF)}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __getattr__(name: str):
    """``MODELS``, ``ELEMENTS`` and the FMU classes (``fmus.Clutch``), made at the first ask;
    an element's module (``fmus.clutch``), imported at the first ask."""
    if name in ("MODELS", "ELEMENTS"):
        models = tuple(model_class(model) for _, model in REGISTRY)
        globals().update(MODELS=models, ELEMENTS=tuple(_element_fmu(model.__name__) for model in models))
        return globals()[name]
    if name in _MODULE_OF:
        return _element_fmu(name)
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _element_fmu(name: str):
    """The FMU class of the element model ``name`` (``fmus.Clutch``), made once, importing its
    model's module alone: an element FMU's entry point asks for its own class only, so its first
    instantiation imports no other element's module (and no solver only they use)."""
    element = globals().get(name)
    if element is None:
        from .shell import element_fmu

        element = globals()[name] = element_fmu(model_class(name), code_fingerprint)
    return element
