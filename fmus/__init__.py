"""Element FMUs: the FMI shell (:mod:`fmus.shell`) around each element model (:mod:`fmus.model`).

``MODELS`` lists the element models; ``ELEMENTS`` their FMU classes, named as the models: the
single list that the build, the validation and the tests loop over.  ``fmus.Clutch`` is the
Clutch FMU, ``fmus.clutch.Clutch`` its model.
"""
from . import backlash, brake, clutch, differential, elasto_backlash, gear, inertia, nonlinear_spring, one_way_clutch
from . import planetary_gear, shaft, sources, table, vehicle, vehicle_simple
from .fingerprint import code_fingerprint, source_fingerprint
from .shell import element_fmu

#: the registry: one line per element model, in the order the build, the docs and the tests list them
MODELS = (
    clutch.Clutch,
    clutch.DualClutch,
    clutch.ClutchChain,
    brake.Brake,
    one_way_clutch.OneWayClutch,
    planetary_gear.PlanetaryGear,
    differential.Differential,
    inertia.Inertia,
    inertia.Engine,
    gear.Gear,
    shaft.Shaft,
    nonlinear_spring.NonlinearSpring,
    backlash.Backlash,
    elasto_backlash.ElastoBacklash,
    vehicle.Vehicle,
    vehicle_simple.VehicleSimple,
    table.Table,
    table.TorqueTable,
    table.ForceTable,
    table.SpeedTable,
    sources.SineTorque,
    sources.SpeedDependentTorque,
)
ELEMENTS = tuple(element_fmu(model) for model in MODELS)
globals().update((element.__name__, element) for element in ELEMENTS)      # fmus.Clutch: the Clutch FMU
__all__ = ["ELEMENTS", "MODELS", "code_fingerprint", "source_fingerprint"] + [e.__name__ for e in ELEMENTS]

