"""Element FMUs: the FMI shell (:mod:`fmus.shell`) around each element model (:mod:`fmus.model`).

``MODELS`` lists the element models; ``ELEMENTS`` their FMU classes, named as the models: the
single list that the build, the validation and the tests loop over.  ``fmus.Clutch`` is the
Clutch FMU, ``fmus.clutch.Clutch`` its model.  The element modules are imported when first
asked for (``MODEL_CLASSES['Clutch']``, ``fmus.Clutch``, ``fmus.clutch``; ``MODELS`` and
``ELEMENTS`` import them all): an FMU loads the code of its own elements only.
"""
import hashlib
import importlib
from collections.abc import Mapping
from pathlib import Path

from drivetrain_fmu import solvers

from .shell import element_fmu


def source_fingerprint(folders=None) -> str:
    """SHA-256 of the ``fmus`` and ``solvers`` source files and C declarations (.pxd) as they
    are on disk now, in ``folders`` (their two folders; default those of the loaded packages: this module is
    shipped as source only, build_fmus.SOURCE_ONLY, so its ``__file__`` is the folder of the
    sources also when the modules beside it run compiled)."""
    digest = hashlib.sha256()
    for package in folders or (Path(__file__).parent, Path(solvers.__file__).parent):
        for path in sorted([*package.glob("*.py"), *package.glob("*.pxd")]):
            digest.update(f"{package.name}/{path.name}".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


# Read when the code is loaded: the files may go away while the code stays in use (fmpy's
# simulate_fmu deletes the extracted FMU, whose resources were the first copy imported).
_LOADED_FINGERPRINT = source_fingerprint()


def code_fingerprint() -> str:
    """SHA-256 of the element code loaded in this process (``fmus`` and ``solvers`` sources,
    read when ``fmus`` was imported).

    Every FMU of a process shares one copy of these packages (the first FMU's resources
    or an installed copy win the import), so each FMU checks at load time that the loaded
    code is the code it was built with (see build_fmus.SLAVE_SCRIPT), and its FMU states
    carry it (fmus.shell)."""
    return _LOADED_FINGERPRINT


#: the registry: one line per element model (its module, its name), in the order the build,
#: the docs and the tests list them
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
_MODULE_OF = dict((name, module) for module, name in REGISTRY)
_ELEMENT_MODULES = frozenset(_MODULE_OF.values())
_FMUS = {}      # name -> its element FMU class, made once


class _ModelClasses(Mapping):
    """Element model name -> its model class, its module imported when first asked for."""

    def __getitem__(self, name):
        module = _MODULE_OF[name]           # KeyError: not an element's name
        return getattr(importlib.import_module(f"{__name__}.{module}"), name)

    def __iter__(self):
        return iter(_MODULE_OF)

    def __len__(self):
        return len(_MODULE_OF)


#: every element model by name, each imported on first use
MODEL_CLASSES = _ModelClasses()


def _element(name: str):
    """The element FMU class of the model ``name`` (one per process)."""
    if name not in _FMUS:
        _FMUS[name] = element_fmu(MODEL_CLASSES[name], code_fingerprint)
    return _FMUS[name]


def __getattr__(name: str):
    """``MODELS``, ``ELEMENTS``, an element FMU (``fmus.Clutch``) or an element module
    (``fmus.clutch``), imported on first use and kept."""
    if name == "MODELS":
        value = tuple(MODEL_CLASSES[model] for _, model in REGISTRY)
    elif name == "ELEMENTS":
        value = tuple(_element(model) for _, model in REGISTRY)
    elif name in _MODULE_OF:
        value = _element(name)
    elif name in _ELEMENT_MODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = ["ELEMENTS", "MODELS", "MODEL_CLASSES", "REGISTRY"] + [name for _, name in REGISTRY]
