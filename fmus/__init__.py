"""Element FMUs: the FMI shell (:mod:`fmus.shell`) around each element model (:mod:`fmus.model`).

``MODELS`` lists the element models; ``ELEMENTS`` their FMU classes, named as the models: the
single list that the build, the validation and the tests loop over.  ``fmus.Clutch`` is the
Clutch FMU, ``fmus.clutch.Clutch`` its model.
"""
import hashlib
from pathlib import Path

from drivetrain_fmu import solvers

from . import axle_vehicle, backlash, brake, clutch, differential, elasto_backlash, gear, inertia, lockup_control, nonlinear_spring
from . import one_way_clutch, planetary_gear, shaft, sources, synchronizer, table, torque_converter, vehicle
from . import vehicle_simple
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


#: the registry: one line per element model, in the order the build, the docs and the tests list them
MODELS = (
    clutch.Clutch,
    clutch.DualClutch,
    clutch.ClutchChain,
    brake.Brake,
    one_way_clutch.OneWayClutch,
    planetary_gear.PlanetaryGear,
    differential.Differential,
    torque_converter.TorqueConverter,
    synchronizer.Synchronizer,
    inertia.Inertia,
    inertia.Engine,
    gear.Gear,
    shaft.Shaft,
    nonlinear_spring.NonlinearSpring,
    backlash.Backlash,
    elasto_backlash.ElastoBacklash,
    vehicle.Vehicle,
    vehicle_simple.VehicleSimple,
    axle_vehicle.AxleVehicle,
    table.Table,
    table.TorqueTable,
    table.ForceTable,
    table.SpeedTable,
    sources.SineTorque,
    sources.SpeedDependentTorque,
    lockup_control.LockupControl,
)
ELEMENTS = tuple(element_fmu(model, code_fingerprint) for model in MODELS)
globals().update((element.__name__, element) for element in ELEMENTS)      # fmus.Clutch: the Clutch FMU
__all__ = ["ELEMENTS", "MODELS"] + [e.__name__ for e in ELEMENTS]

