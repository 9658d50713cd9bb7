"""SSP 1.0 system files: the documented systems (systems/catalog/ssd/*.ssd) and .ssp archives.

Every documented system is one SystemStructure.ssd in systems/catalog/ssd/ (``load_system``):
simulation, SSP export, the monolithic references and the tests read their parameters
from it.  A system is its components (instance name -> element FMU and parameters) and its
connections (systems.master.Connection).  ``write_ssp`` packs them into one .ssp archive
that SSP tools run unchanged: every component lists the connectors its connections use,
its parameters are bound inline as the parameter set ``initialValues`` (Ecos applies it
with ``--parameterSet initialValues``; fmpy's ``simulate_ssp`` ignores SSD bindings, so
``parameter_set`` gives the same values as an fmpy ParameterSet).  With a step, the system
also carries OpenModelica's annotation of a fixed-step master at that step, without which
OMSimulator cannot build the system (SSP 1.0 allows vendor annotations).
"""
from __future__ import annotations

import contextlib
import math
import os
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from fmpy import read_model_description
from fmpy.ssp.ssd import Parameter, ParameterSet

from .master import Connection, Instance, Port, connection_problems, integer_problem, run, value_problem
from .rates import checked_rates

SSD = "http://ssp-standard.org/SSP1/SystemStructureDescription"
SSC = "http://ssp-standard.org/SSP1/SystemStructureCommon"
SSV = "http://ssp-standard.org/SSP1/SystemStructureParameterValues"
#: DefaultExperiment annotation carrying the communication step a system is meant to run at
#: (SSP 1.0 has no step size; tools ignore annotations they do not know)
STEP_ANNOTATION = "org.drivetrain-fmu.step"
STEP_NS = "urn:drivetrain-fmu:ssp"
#: OpenModelica's vendor annotation of a system: OMSimulator creates a system from an SSD
#: only when it names the system's master (its Model::getSystemType reads it)
OMS_ANNOTATION = "org.openmodelica"
OMS_NS = "https://raw.githubusercontent.com/OpenModelica/OMSimulator/master/schema/oms.xsd"
PARAMETER_SET = "initialValues"


@dataclass(frozen=True)
class Component:
    element: str                       # FMU name in the build folder, e.g. "Clutch"
    parameters: dict = field(default_factory=dict)

    def with_defaults(self) -> dict:
        """Every parameter and input start value the element declares (fmus.ELEMENTS),
        with the bound parameters in place of the declared starts: what the FMU runs with."""
        element = next((e for e in _elements() if e.__name__ == self.element), None)
        if element is None:
            raise ValueError(f"unknown element {self.element!r}; elements: {[e.__name__ for e in _elements()]}")
        return {**{v.name: v.start for v in element.VARIABLES if v.start is not None}, **self.parameters}


def _elements() -> list:
    """fmus.ELEMENTS, imported when first asked for, not with this module: a process that
    runs the FMUs of another build through :func:`run_system` must let them load their own
    element code first (pythonfmu's module names are process-global, build_fmus.SLAVE_SCRIPT)."""
    from drivetrain_fmu.fmus import ELEMENTS

    return ELEMENTS


def _q(ns, tag):
    return f"{{{ns}}}{tag}"


def system_structure(name: str, components: dict[str, Component], connections: list[Connection],
                     stop: float, description: str = "", step: float | None = None) -> bytes:
    """The SystemStructure.ssd document."""
    ET.register_namespace("ssd", SSD)
    ET.register_namespace("ssc", SSC)
    ET.register_namespace("ssv", SSV)
    root = ET.Element(_q(SSD, "SystemStructureDescription"), version="1.0", name=name,
                      **({"description": description} if description else {}))
    system = ET.SubElement(root, _q(SSD, "System"), name=name)
    elements = ET.SubElement(system, _q(SSD, "Elements"))
    used = {inst: [] for inst in components}
    for c in connections:
        used[c.source].append((c.output, "output"))
        used[c.target].append((c.input, "input"))
    for inst, component in components.items():
        node = ET.SubElement(elements, _q(SSD, "Component"), name=inst,
                             source=f"resources/{component.element}.fmu", type="application/x-fmu-sharedlibrary")
        connectors = ET.SubElement(node, _q(SSD, "Connectors"))
        for variable, kind in dict.fromkeys(used[inst]):
            connector = ET.SubElement(connectors, _q(SSD, "Connector"), name=variable, kind=kind)
            ET.SubElement(connector, _q(SSC, "Real"))
        if component.parameters:
            binding = ET.SubElement(ET.SubElement(node, _q(SSD, "ParameterBindings")), _q(SSD, "ParameterBinding"))
            values = ET.SubElement(binding, _q(SSD, "ParameterValues"))
            parameter_set = ET.SubElement(values, _q(SSV, "ParameterSet"), version="1.0", name=PARAMETER_SET)
            parameters = ET.SubElement(parameter_set, _q(SSV, "Parameters"))
            for pname, value in component.parameters.items():
                parameter = ET.SubElement(parameters, _q(SSV, "Parameter"), name=pname)
                kind = "Boolean" if isinstance(value, bool) else ("Integer" if isinstance(value, int) else "Real")
                ET.SubElement(parameter, _q(SSV, kind), value=str(value).lower() if kind == "Boolean" else repr(value))
    links = ET.SubElement(system, _q(SSD, "Connections"))
    for c in connections:
        ET.SubElement(links, _q(SSD, "Connection"), startElement=c.source, startConnector=c.output,
                      endElement=c.target, endConnector=c.input)
    if step is not None:      # OMSimulator's fixed-step master at the system's step
        ET.register_namespace("oms", OMS_NS)
        annotation = ET.SubElement(ET.SubElement(system, _q(SSD, "Annotations")), _q(SSC, "Annotation"),
                                   type=OMS_ANNOTATION)
        information = ET.SubElement(ET.SubElement(annotation, _q(OMS_NS, "Annotations")),
                                    _q(OMS_NS, "SimulationInformation"))
        ET.SubElement(information, _q(OMS_NS, "FixedStepMaster"), description="oms-ma", stepSize=repr(float(step)),
                      relativeTolerance="0.0001")
    experiment = ET.SubElement(root, _q(SSD, "DefaultExperiment"), startTime="0", stopTime=repr(float(stop)))
    if step is not None:
        ET.register_namespace("dt", STEP_NS)
        annotation = ET.SubElement(ET.SubElement(experiment, _q(SSD, "Annotations")), _q(SSC, "Annotation"),
                                   type=STEP_ANNOTATION)
        ET.SubElement(annotation, _q(STEP_NS, "Step"), size=repr(float(step)))
    ET.indent(root)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="utf-8")


def write_ssp(path, name: str, components: dict[str, Component], connections: list[Connection],
              fmu_dir, stop: float, description: str = "", step: float | None = None) -> Path:
    """Write ``path`` (.ssp): the SSD and every FMU the components use."""
    path, fmu_dir = Path(path), Path(fmu_dir)
    with written_whole(path) as partial, zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("SystemStructure.ssd", system_structure(name, components, connections, stop, description,
                                                                step))
        for element in sorted({c.element for c in components.values()}):
            archive.write(fmu_dir / f"{element}.fmu", f"resources/{element}.fmu")
    return path


@contextlib.contextmanager
def written_whole(path):
    """Write ``path`` whole or not at all: yields a partial file's path beside it
    (``.NAME.partial-PID``, same folder, so the rename cannot cross file systems), renamed
    over ``path`` once the block ends, removed if it raises (a full disk, an interrupt):
    what ``path`` held before is then still there."""
    path = Path(path)
    partial = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        yield partial
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def fmpy_parameter_set(components: dict[str, Component]):
    """The SSD bindings as the ParameterSet that fmpy's simulate_ssp applies."""
    return ParameterSet(name=PARAMETER_SET, parameters=[
        Parameter(name=f"{inst}.{pname}", value=value)
        for inst, component in components.items() for pname, value in component.parameters.items()])


def run_system(fmu_dir, components: dict[str, Component], connections: list[Connection], stop: float,
               step: float, record: list[str], progress: bool = False, iterations: int = 0,
               at_point: Callable[[float], None] | None = None, rates=None, output_interval: float | None = None):
    """Instantiate every component from ``fmu_dir`` (fresh instances), co-simulate with
    systems.master.run and free them: the one way every documented system is run.
    ``at_point(t)`` is called at every communication point before the exchange, while no
    FMU is stepping (e.g. to stop the run there by raising KeyboardInterrupt).  ``rates``
    ({inst: H} or 'inst=H' texts, as the system FMU's ``--rate``): multi-rate, H a whole
    multiple of ``step`` for a component with a state (systems.master.run's ``rates``;
    ValueError naming the bad one).  They are checked once the FMUs are loaded: the check
    reads the element classes, which must then be the FMUs' own code (an element module
    imported first from elsewhere, e.g. an older installed copy, would make FMUs of another
    build refuse to instantiate); the command line checks them before building anything.
    ``output_interval``: the rows recorded (systems.master.run's)."""
    fmu_dir = Path(fmu_dir)
    instances = {}
    try:
        for name, c in components.items():
            instances[name] = Instance(fmu_dir / f"{c.element}.fmu", name, c.parameters)
        if rates:
            from . import composite_slave      # the element classes: those the FMUs just loaded

            rates = checked_rates(rates, components, step, composite_slave.element_classes(), "step", "in this system")
        inputs = None if at_point is None else (lambda t: at_point(t) or {})
        return run(instances, connections, stop, step, record, inputs=inputs, progress=progress,
                   iterations=iterations, rates=rates, output_interval=output_interval)
    finally:
        for inst in instances.values():
            inst.free()


@dataclass(frozen=True)
class System:
    """A system as its SSD describes it."""

    name: str
    description: str
    components: dict[str, Component]
    connections: list[Connection]
    stop: float | None                 # DefaultExperiment stopTime (None: not given)
    step: float | None = None          # the communication step it is meant to run at (annotation)
    path: Path | None = None           # the file it was read from (None: built in code)
    #: {(component, connector): unit} of the connectors whose ssc:Real the file gives a unit
    connector_units: dict = field(default_factory=dict)

    def component_values(self) -> dict[str, dict]:
        """{instance: every parameter and input start value it runs with}
        (:meth:`Component.with_defaults` of each component)."""
        return {name: c.with_defaults() for name, c in self.components.items()}

    @property
    def is_archive(self) -> bool:
        """True when it was read from an .ssp archive, which carries its own FMUs."""
        return self.path is not None and self.path.suffix == ".ssp"

    def at_step(self, step: float, step_mean: bool | None = None) -> dict[str, Component]:
        """The components for a run at communication step ``step``.  A compliance with a
        non-zero ``T_comm`` averages its torque over the coming step, so its T_comm becomes
        ``step``; T_comm = 0 is the torque at the communication point.  ``step_mean``
        True or False overrides the file's choice for every component that binds T_comm."""
        def t_comm(bound: float) -> float:
            return step if (bool(bound) if step_mean is None else step_mean) else 0.0

        return {name: Component(c.element, {**c.parameters, "T_comm": t_comm(c.parameters["T_comm"])})
                if "T_comm" in c.parameters else c for name, c in self.components.items()}


def declared_connection_problems(components: dict[str, Component], connections: list[Connection]) -> list[str]:
    """systems.master.connection_problems from the variables the elements declare
    (fmus.ELEMENTS); a connection to a component of another FMU is checked when it runs
    (systems.master.run reads its modelDescription)."""
    declared = {e.__name__: {v.name: Port(v.causality, v.type, v.unit) for v in e.VARIABLES} for e in _elements()}
    ours = [c for c in connections
            if all(i not in components or components[i].element in declared for i in (c.source, c.target))]

    def port(instance: str, name: str) -> Port | None:
        return declared[components[instance].element].get(name) if instance in components else None
    return connection_problems(ours, port)


def connector_unit_problems(connector_units: dict, port: Callable[[str, str], Port | None]) -> list[str]:
    """Why the units the .ssd writes on its connectors (``connector_units``: {(component,
    connector): unit}, SSP 1.0 ``<ssc:Real unit=...>``) disagree with the FMUs' declared
    units, one message each naming both (``port(instance, variable)``: the FMU's variable,
    None when not known here).  The master converts no unit, so a connector marked kN on
    an input in N would run 1000 times off: refused, as OMSimulator refuses it.  Units
    compare by name, as the FMU declares them ("1" and no unit are both dimensionless)."""
    problems = []
    for (instance, connector), unit in connector_units.items():
        declared = port(instance, connector)
        if declared is None:
            continue
        if (unit or "1") != (declared.unit or "1"):
            problems.append(f"connector {instance}.{connector} is marked {unit!r} in the file, but the FMU declares "
                            f"{connector} in {declared.unit or '1'!r}")
    return problems


def _declared_ports(components: dict[str, Component]) -> Callable[[str, str], Port | None]:
    """``port(instance, variable)`` of the variables this project's elements declare
    (fmus.ELEMENTS); None for another FMU's or an unknown one."""
    declared = {e.__name__: {v.name: Port(v.causality, v.type, v.unit) for v in e.VARIABLES} for e in _elements()}

    def port(instance: str, name: str) -> Port | None:
        component = components.get(instance)
        return None if component is None else declared.get(component.element, {}).get(name)
    return port


def declared_unit_problems(components: dict[str, Component], connector_units: dict) -> list[str]:
    """connector_unit_problems against the units this project's elements declare."""
    return connector_unit_problems(connector_units, _declared_ports(components))


def _flange_pairs(variables) -> list[tuple[str, str]]:
    """(phi_X, w_X) of the inputs ``variables`` (fmus.variables.Var) that are the angle (rad)
    and the speed (rad/s) of one flange of a compliance: they come from the same body."""
    inputs = {v.name: v for v in variables if v.causality == "input"}
    return [(name, "w_" + name[len("phi_"):]) for name, v in inputs.items()
            if name.startswith("phi_") and v.unit == "rad" and getattr(inputs.get("w_" + name[len("phi_"):]),
                                                                       "unit", None) == "rad/s"]


def binding_problems(components: dict[str, Component], connections: list[Connection]) -> list[str]:
    """Inputs of this project's elements that cannot run as the file wires them: an input
    both bound in the parameter set and connected (the connection would overwrite the bound
    value at the first exchange: which one was meant?), and a compliance flange with only its
    angle or only its speed connected (its torque then comes from a body's angle and a
    speed held at its start, or the reverse: no motion of any flange)."""
    classes = {e.__name__: e for e in _elements()}
    driven = {(c.target, c.input): f"{c.source}.{c.output}" for c in connections}
    problems = []
    for name, component in components.items():
        element = classes.get(component.element)
        if element is None:
            continue
        inputs = {v.name for v in element.VARIABLES if v.causality == "input"}
        for variable in inputs & set(component.parameters):
            if (name, variable) in driven:
                problems.append(f"input {name}.{variable} is both bound to {component.parameters[variable]!r} and "
                                f"connected (from {driven[name, variable]}): remove one")
        for angle, speed in _flange_pairs(element.VARIABLES):
            ends = [(name, v) in driven for v in (angle, speed)]
            if ends[0] != ends[1]:
                connected, missing = (angle, speed) if ends[0] else (speed, angle)
                problems.append(f"{name}.{connected} is connected but {name}.{missing} is not: a flange of "
                                f"{component.element} needs the angle and the speed of the same body (connect "
                                f"{missing} to it, or neither for a flange held fixed)")
    return problems


def unconnected_inputs(components: dict[str, Component], connections: list[Connection]) -> list[str]:
    """'inst.var = start unit' of each input of this project's elements that no connection
    drives and that runs at its declared start value without the file saying so.  Left out:
    an input the file binds in its parameter set (a constant set on purpose, as Fan's
    throttle = 1 and clamp force = 1000 N), and a flange torque (N.m) whose start is 0: an
    unconnected flange carries no torque, as in Modelica (a free end, the load side of R3's
    vehicle).  Anything else (a clamp force, a speed, a throttle, a torque of another start)
    is most likely a connection that was forgotten or deleted: a clutch whose clamp force
    is no longer connected runs open at f_n = 0.  Left out too: an input that acts on nothing
    with the component's parameters: one of a family member not in use (the clamp forces of a
    ClutchChain's clutches beyond its n_bodies) or one whose ``active_if`` switch is off (a
    clutch's T_amb without its thermal model)."""
    classes = {e.__name__: e for e in _elements()}
    from drivetrain_fmu.fmus.variables import in_use      # imported with fmus, as _elements() says why

    driven = {(c.target, c.input) for c in connections}
    found = []
    for name, component in components.items():
        element = classes.get(component.element)
        if element is None:
            continue
        values = component.with_defaults()
        for v in element.VARIABLES:
            if v.causality != "input" or (name, v.name) in driven or v.name in component.parameters:
                continue
            if v.unit == "N.m" and v.start == 0.0:
                continue
            if not in_use(values, v) or (v.active_if and not values[v.active_if]):
                continue
            found.append(f"{name}.{v.name} = {v.start:g}" + (f" {v.unit}" if v.unit else ""))
    return found


def parse_ssd(document: bytes) -> System:
    """The System of a flat SSP 1.0 SystemStructure.ssd whose components are FMUs in
    resources/ with inline parameter sets (as written by :func:`system_structure`).  A
    document that is not such a file raises ValueError saying what is missing or wrong."""
    try:
        root = ET.fromstring(document)
    except ET.ParseError as exc:
        raise ValueError(f"not an XML document ({exc})") from None
    if root.tag != _q(SSD, "SystemStructureDescription"):
        raise ValueError(f"not an SSP 1.0 SystemStructureDescription (its root element is {root.tag!r})")
    system = root.find(_q(SSD, "System"))
    elements = None if system is None else system.find(_q(SSD, "Elements"))
    if elements is None:
        raise ValueError("no <ssd:System> with <ssd:Elements> (a flat system of FMU components is expected)")
    components, connector_units = {}, {}
    for node in elements.findall(_q(SSD, "Component")):
        name, source = node.get("name"), node.get("source")
        if not name or not source or not source.endswith(".fmu"):
            raise ValueError(f"component {name!r}: needs a name and a source 'resources/ELEMENT.fmu' "
                             f"(got source {source!r})")
        parameters = {}
        for parameter in node.iter(_q(SSV, "Parameter")):
            value = next(iter(parameter), None)
            kind, text = ("?", None) if value is None else (value.tag.split("}")[-1], value.get("value"))
            try:
                parameters[parameter.get("name")] = {"Boolean": lambda x: {"true": True, "false": False}[x],
                                                     "Integer": int, "Real": float}[kind](text)
            except (KeyError, TypeError, ValueError):
                raise ValueError(f"component {name!r}: parameter {parameter.get('name')!r} has no Real, Integer or "
                                 f"Boolean value (got {kind} {text!r})") from None
            problem = integer_problem(parameters[parameter.get("name")])
            if problem:
                raise ValueError(f"component {name!r}: parameter {parameter.get('name')!r} = {problem}")
        components[name] = Component(Path(source).stem, parameters)
        for connector in node.iter(_q(SSD, "Connector")):
            real = connector.find(_q(SSC, "Real"))
            if real is not None and real.get("unit") is not None:
                connector_units[name, connector.get("name")] = real.get("unit")
    links = system.find(_q(SSD, "Connections"))
    connections = [Connection(c.get("startElement"), c.get("startConnector"), c.get("endElement"),
                              c.get("endConnector"))
                   for c in (() if links is None else links.findall(_q(SSD, "Connection")))]
    problems = (declared_connection_problems(components, connections)
                + declared_unit_problems(components, connector_units) + binding_problems(components, connections))
    if problems:
        raise ValueError(f"system {root.get('name')!r}: " + "; ".join(problems))
    experiment = root.find(_q(SSD, "DefaultExperiment"))
    step = None if experiment is None else experiment.find(
        f"{_q(SSD, 'Annotations')}/{_q(SSC, 'Annotation')}[@type='{STEP_ANNOTATION}']/{_q(STEP_NS, 'Step')}")
    times = {}
    for what, text in (("stopTime", None if experiment is None else experiment.get("stopTime")),
                       ("step size", None if step is None else step.get("size"))):
        try:
            times[what] = None if text is None else float(text)
        except ValueError:
            raise ValueError(f"the DefaultExperiment's {what} {text!r} is not a number") from None
        if times[what] is not None and not (math.isfinite(times[what]) and times[what] > 0.0):
            raise ValueError(f"the DefaultExperiment's {what} {text!r} must be a finite number of seconds > 0")
    return System(root.get("name") or "", root.get("description", ""), components, connections,
                  times["stopTime"], times["step size"], connector_units=connector_units)


def read_ssp(path) -> System:
    """The System of an .ssp archive (its SystemStructure.ssd); ValueError if it is not one."""
    try:
        with zipfile.ZipFile(path) as archive:
            document = archive.read("SystemStructure.ssd")
            names = set(archive.namelist())
    except zipfile.BadZipFile:
        raise ValueError("not an SSP archive (an .ssp is a zip file)") from None
    except KeyError:
        raise ValueError("the archive has no SystemStructure.ssd") from None
    system = parse_ssd(document)
    missing = sorted({f"resources/{c.element}.fmu" for c in system.components.values()} - names)
    if missing:
        raise ValueError(f"the archive lacks {', '.join(missing)} (used by its components)")
    return replace(system, path=Path(path))


CATALOG = Path(__file__).parent / "catalog" / "ssd"


def catalog() -> list[str]:
    """Names of the documented systems: the .ssd files in systems/catalog/ssd/."""
    return sorted(path.stem for path in CATALOG.glob("*.ssd"))


def load_system(name: str) -> System:
    """A documented system from its .ssd file in systems/catalog/ssd/ (the one description of it
    that simulation, export, references and tests read)."""
    path = CATALOG / f"{name}.ssd"
    if not path.is_file():
        raise ValueError(f"unknown system {name!r}; documented systems: {', '.join(catalog())}")
    return replace(parse_ssd(path.read_bytes()), path=path)


def is_path(spec: str) -> bool:
    """True when ``spec`` names a file (an .ssd or .ssp, or anything with a folder) rather
    than a documented system."""
    return bool(Path(spec).suffix) or "/" in spec


def open_system(spec: str) -> System:
    """A documented system by name (``z3``) or the system of a file (``my_z3.ssd``,
    ``results/export/z3/z3.ssp``).  ValueError with one line naming ``spec`` and what is
    allowed when it is neither."""
    if not is_path(spec):
        if spec in catalog():
            return load_system(spec)
        hint = f" (a file? give ./{spec}.ssd)" if Path(f"{spec}.ssd").is_file() else ""
        raise ValueError(f"unknown system {spec!r}{hint}: give a documented system ({', '.join(catalog())}) "
                         f"or the path of an .ssd or .ssp file")
    path = Path(spec)
    if path.suffix not in (".ssd", ".ssp"):
        raise ValueError(f"{spec}: a system file must be an .ssd (SystemStructure) or an .ssp (archive)")
    if not path.is_file():
        raise ValueError(f"{spec}: no such file")
    try:
        if path.suffix == ".ssp":
            return read_ssp(path)
        return replace(parse_ssd(path.read_bytes()), path=path)
    except OSError as exc:
        raise ValueError(f"{spec}: cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise ValueError(f"{spec}: {' '.join(str(exc).split())}") from None


def parameter_problems(components: dict[str, Component]) -> list[str]:
    """Why the bound parameters of this project's elements would be refused at
    initialization (unknown element or parameter, a value outside its declared range, a
    relation between parameters such as mu_k <= mu_s), without loading an FMU: one message
    per problem, naming the component."""
    from drivetrain_fmu.fmus.variables import INPUT, PARAMETER    # not with this module either: _elements

    classes = {element.__name__: element for element in _elements()}
    problems = []
    for name, component in components.items():
        element = classes.get(component.element)
        if element is None:
            problems.append(f"component {name}: unknown element {component.element} (resources/"
                            f"{component.element}.fmu); elements: {', '.join(classes)}")
            continue
        declared = {v.name: v for v in element.VARIABLES}
        found = []
        for parameter, value in component.parameters.items():
            var = declared.get(parameter)
            if var is None or var.causality not in (PARAMETER, INPUT):
                found.append(f"{component.element} has no parameter {parameter!r}")
            else:
                found += [f"{parameter} = {problem}" for problem in [value_problem(var.type, value)] if problem]
        if not found:       # the element's own checks, as at fmi2ExitInitializationMode
            slave = element(instance_name=name, resources=None)
            for parameter, value in component.parameters.items():
                setattr(slave, parameter, value)
            found = slave.parameter_problems()
        problems += [f"{name}: {text}" for text in found]
    return problems


def t_comm_problem(components: dict[str, Component], step: float) -> str | None:
    """A step-mean compliance (T_comm > 0) refuses a doStep of another size: the message
    naming the first one bound to another T_comm than ``step`` (None: all agree)."""
    for name, component in components.items():
        t_comm = component.parameters.get("T_comm", 0.0)
        if t_comm and abs(t_comm - step) > 1e-9 * t_comm:
            return f"{name}.T_comm = {t_comm:g} s is bound"
    return None


def copy_system(system: System, name: str) -> bytes:
    """The .ssd document of ``system`` under the new name ``name`` (what
    `drivetrain-fmu new` writes for editing)."""
    description = f"{name}: copy of {system.name}" + (f" ({system.description})" if system.description else "")
    return system_structure_of(system, name, description)


def system_structure_of(system: System, name: str, description: str) -> bytes:
    """The SystemStructure.ssd of ``system`` with the catalog's layout (step annotation in
    its DefaultExperiment, no vendor annotation)."""
    document = system_structure(name, system.components, system.connections, system.stop, description, system.step)
    root = ET.fromstring(document)
    annotations = root.find(_q(SSD, "System")).find(_q(SSD, "Annotations"))
    if annotations is not None:
        root.find(_q(SSD, "System")).remove(annotations)
    ET.indent(root)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="utf-8")


def declared_units(fmu_dir, components: dict[str, Component], keys: list[str]) -> dict[str, str | None]:
    """{'instance.variable': unit} for ``keys`` from the modelDescription of the FMUs in
    ``fmu_dir`` (None: dimensionless or not declared)."""
    units, described = {}, {}
    for key in keys:
        instance, variable = key.split(".", 1)
        element = components[instance].element if instance in components else None
        if element is None:
            units[key] = None
            continue
        if element not in described:
            model = read_model_description(str(Path(fmu_dir) / f"{element}.fmu"))
            described[element] = {v.name: v.unit or (v.declaredType.unit if v.declaredType is not None else None)
                                  for v in model.modelVariables}
        units[key] = described[element].get(variable)
    return units


def export(name, path, fmu_dir, step: float | None = None, stop: float | None = None) -> Path:
    """Write the system ``name`` (a documented system's name or a System) as an .ssp
    archive for a run at ``step`` (the T_comm of its step-mean compliances; default: the
    system's step): its .ssd, with the FMUs of ``fmu_dir``."""
    system = load_system(name) if isinstance(name, str) else name
    step = system.step if step is None else step
    stop = system.stop if stop is None else stop
    if step is None or stop is None:
        raise ValueError(f"{system.name}: give the step and the stop time (its file has step {system.step!r}, "
                         f"stop {system.stop!r})")
    return write_ssp(path, system.name, system.at_step(step), system.connections, fmu_dir, stop,
                     system.description, step)


def extracted_fmus(path, folder) -> Path:
    """Extract the FMUs of the .ssp archive ``path`` into ``folder``; returns the folder
    that holds them (``folder``/resources)."""
    system = read_ssp(path)
    with zipfile.ZipFile(path) as archive:
        for element in {c.element for c in system.components.values()}:
            archive.extract(f"resources/{element}.fmu", folder)
    return Path(folder) / "resources"


def simulate(path, step: float, record: list[str], stop: float | None = None, progress: bool = False,
             iterations: int = 0, rates=None):
    """Run an SSP file with systems.master: its FMUs (from the archive), parameters and
    connections; ``stop`` defaults to the file's DefaultExperiment; ``iterations`` and
    ``rates`` as :func:`run_system`'s."""
    system = read_ssp(path)
    stop = system.stop if stop is None else stop
    if stop is None:
        raise ValueError(f"{path} has no DefaultExperiment stopTime: give stop")
    with tempfile.TemporaryDirectory(prefix="ssp_") as folder:
        return run_system(extracted_fmus(path, folder), system.components, system.connections, stop, step, record,
                          progress, iterations, rates=rates)
