"""SSP 1.0 system files (SystemStructure.ssd plus the FMUs) written from a system's data.

A system is its components (instance name -> element FMU and parameters) and its
connections (systems.master.Connection).  ``write_ssp`` packs them into one .ssp archive
that SSP tools run unchanged: every component lists the connectors its connections use,
its parameters are bound inline as the parameter set ``initialValues`` (Ecos applies it
with ``--parameterSet initialValues``; fmpy's ``simulate_ssp`` ignores SSD bindings, so
``parameter_set`` gives the same values as an fmpy ParameterSet).
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from .master import Connection

SSD = "http://ssp-standard.org/SSP1/SystemStructureDescription"
SSC = "http://ssp-standard.org/SSP1/SystemStructureCommon"
SSV = "http://ssp-standard.org/SSP1/SystemStructureParameterValues"
PARAMETER_SET = "initialValues"


@dataclass(frozen=True)
class Component:
    element: str                       # FMU name in the build folder, e.g. "Clutch"
    parameters: dict = field(default_factory=dict)


def _q(ns, tag):
    return f"{{{ns}}}{tag}"


def system_structure(name: str, components: dict[str, Component], connections: list[Connection],
                     stop: float) -> bytes:
    """The SystemStructure.ssd document."""
    ET.register_namespace("ssd", SSD)
    ET.register_namespace("ssc", SSC)
    ET.register_namespace("ssv", SSV)
    root = ET.Element(_q(SSD, "SystemStructureDescription"), version="1.0", name=name)
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
    ET.SubElement(root, _q(SSD, "DefaultExperiment"), startTime="0", stopTime=repr(float(stop)))
    ET.indent(root)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="utf-8")


def write_ssp(path, name: str, components: dict[str, Component], connections: list[Connection],
              fmu_dir, stop: float) -> Path:
    """Write ``path`` (.ssp): the SSD and every FMU the components use."""
    path, fmu_dir = Path(path), Path(fmu_dir)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("SystemStructure.ssd", system_structure(name, components, connections, stop))
        for element in sorted({c.element for c in components.values()}):
            archive.write(fmu_dir / f"{element}.fmu", f"resources/{element}.fmu")
    return path


def fmpy_parameter_set(components: dict[str, Component]):
    """The SSD bindings as the ParameterSet that fmpy's simulate_ssp applies."""
    from fmpy.ssp.ssd import Parameter, ParameterSet

    return ParameterSet(name=PARAMETER_SET, parameters=[
        Parameter(name=f"{inst}.{pname}", value=value)
        for inst, component in components.items() for pname, value in component.parameters.items()])


def run_system(fmu_dir, components: dict[str, Component], connections: list[Connection], stop: float,
               step: float, record: list[str], progress: bool = False, iterations: int = 0):
    """Instantiate every component from ``fmu_dir`` (fresh instances), co-simulate with
    systems.master.run and free them: the one way every documented system is run."""
    from .master import Instance, run

    fmu_dir = Path(fmu_dir)
    instances = {name: Instance(fmu_dir / f"{c.element}.fmu", name, c.parameters) for name, c in components.items()}
    try:
        return run(instances, connections, stop, step, record, progress=progress, iterations=iterations)
    finally:
        for inst in instances.values():
            inst.free()


def read_ssp(path) -> tuple[str, dict[str, Component], list[Connection], dict]:
    """(name, components, connections, default experiment) of an SSP written here (or any
    flat SSP 1.0 whose components are FMUs in resources/ with inline parameter sets)."""
    with zipfile.ZipFile(path) as archive:
        root = ET.fromstring(archive.read("SystemStructure.ssd"))
    system = root.find(_q(SSD, "System"))
    components = {}
    for node in system.find(_q(SSD, "Elements")).findall(_q(SSD, "Component")):
        element = Path(node.get("source")).stem
        parameters = {}
        for parameter in node.iter(_q(SSV, "Parameter")):
            value = next(iter(parameter))
            kind, text = value.tag.split("}")[1], value.get("value")
            parameters[parameter.get("name")] = (text == "true" if kind == "Boolean"
                                                 else int(text) if kind == "Integer" else float(text))
        components[node.get("name")] = Component(element, parameters)
    connections = [Connection(c.get("startElement"), c.get("startConnector"), c.get("endElement"),
                              c.get("endConnector"))
                   for c in system.find(_q(SSD, "Connections")).findall(_q(SSD, "Connection"))]
    experiment = root.find(_q(SSD, "DefaultExperiment"))
    default = {} if experiment is None else {k: float(v) for k, v in experiment.attrib.items()}
    return root.get("name"), components, connections, default


def simulate(path, step: float, record: list[str], stop: float | None = None, progress: bool = False,
             iterations: int = 0):
    """Run an SSP file with systems.master: its FMUs (from the archive), parameters and
    connections; ``stop`` defaults to the file's DefaultExperiment."""
    import tempfile

    _, components, connections, default = read_ssp(path)
    stop = default.get("stopTime") if stop is None else stop
    if stop is None:
        raise ValueError(f"{path} has no DefaultExperiment stopTime: give stop")
    with tempfile.TemporaryDirectory(prefix="ssp_") as folder, zipfile.ZipFile(path) as archive:
        for element in {c.element for c in components.values()}:
            archive.extract(f"resources/{element}.fmu", folder)
        return run_system(Path(folder) / "resources", components, connections, stop, step, record, progress,
                          iterations)
