"""A whole system as one FMU: what goes into it (``describe``), checked.

    drivetrain-fmu export-fmu SYSTEM [--out DIR] [--input inst.var ...] [--output inst.var ...]
                                     [--internal-step H] [--rate INST=H ...] [--iterations N]

writes ``DIR/<SYSTEM>.fmu`` (default ``results/``; the command is cli.export_fmu):
one FMI 2.0 co-simulation FMU running every element of the system in-process
(``systems/composite_slave.py``, see ``docs/composite-fmu.md``), with the same bundled
runtime as the element FMUs (``build_fmus.build_system_fmu``).  SYSTEM is a documented
system (``z3``), an .ssd or an .ssp of this project's elements.

Interface (FMI names are structured, ``inst.var``: pythonfmu 0.7.0 writes
variableNamingConvention="structured"):

* parameters: ``internal_step`` and every element parameter as ``inst.name``, start = the
  value the file binds (or the element's default); a step-mean compliance's ``T_comm``
  is not exposed: it is the internal step;
* outputs: by default what ``drivetrain-fmu run`` records and plots of the system
  (:func:`default_outputs`: its family's signals, then the source of every connection),
  else the ``--output`` list (element outputs, or element inputs as the connections set
  them);
* inputs: ``--input inst.var`` makes an element input an FMU input and drops the
  connection that drove it; a source left without any connection is dropped too.

Options of the run inside: ``--rate inst=H`` (multi-rate: that element steps with H, a
whole multiple of the internal step, its inputs the mean of the values the connections
give at the internal steps of its step) and ``--iterations N`` (each internal step
repeated N times with the connections at the mean of their values at t and t + h, as
``systems.master.run(..., iterations=N)``); docs/composite-fmu.md.
"""
from __future__ import annotations

import re

from drivetrain_fmu.fmus.variables import INPUT, OUTPUT

from . import composite_slave
from .rates import checked_rates
from .signals import default_record
from .ssp import System, open_system, parameter_problems


def model_identifier(label: str) -> str:
    """A C identifier from a system's name (the FMU's modelIdentifier and file name)."""
    identifier = re.sub(r"\W", "_", label, flags=re.ASCII)
    return identifier if identifier and not identifier[0].isdigit() else f"system_{identifier}"


def _key(text: str, option: str, components) -> tuple[str, str]:
    inst, dot, name = text.partition(".")
    if not dot or not inst or not name:
        raise ValueError(f"{option} {text!r}: give inst.var (a component and one of its variables)")
    if inst not in components:
        raise ValueError(f"{option} {text}: no component {inst!r}; components: {', '.join(components)}")
    return inst, name


def describe(spec, inputs=(), outputs=(), internal_step: float | None = None, rates=(), iterations: int = 0) -> dict:
    """The description the FMU carries (resources/composite.json) of the system ``spec``
    (a documented system's name, the path of an .ssd or .ssp, or a systems.ssp.System),
    checked: ValueError with a message naming what is wrong.  ``rates`` ({inst: H} or
    'inst=H' texts) and ``iterations``: docs/composite-fmu.md, "Multi-rate" and
    "Iterations"."""
    system = spec if isinstance(spec, System) else open_system(str(spec))
    label = system.path.stem if system.path is not None else system.name
    classes = composite_slave.element_classes()
    foreign = sorted({c.element for c in system.components.values()} - set(classes))
    if foreign:
        raise ValueError(f"{label}: components of elements that are not this project's ({', '.join(foreign)}) "
                         "cannot run in-process")
    problems = parameter_problems(system.components)
    if problems:
        raise ValueError(f"{label}: " + "; ".join(problems))
    step = system.step if internal_step is None else internal_step
    if step is None:
        raise ValueError(f"{label}: its file gives no step: give the internal step (--internal-step H)")
    low, high = composite_slave.INTERNAL_STEP_RANGE
    if not (isinstance(step, (int, float)) and low <= step <= high):
        raise ValueError(f"internal step {step!r} is outside the allowed range [{low:g}, {high:g}] s")
    step = float(step)
    declared = {inst: {v.name: v for v in classes[c.element].VARIABLES} for inst, c in system.components.items()}

    chosen_inputs = []
    for text in inputs:
        inst, name = _key(text, "--input", system.components)
        var = declared[inst].get(name)
        if var is None or var.causality != INPUT:
            raise ValueError(f"--input {text}: {system.components[inst].element} {inst} has no input {name!r}; "
                             f"its inputs: {', '.join(v for v, d in declared[inst].items() if d.causality == INPUT)}")
        if text in chosen_inputs:
            raise ValueError(f"--input {text} is given twice")
        chosen_inputs.append(text)
    connections = [c for c in system.connections if f"{c.target}.{c.input}" not in chosen_inputs]
    used = {c.source for c in connections} | {c.target for c in connections} | {k.split(".")[0] for k in inputs}

    chosen_outputs = []
    for text in outputs:
        inst, name = _key(text, "--output", system.components)
        var = declared[inst].get(name)
        if var is None or var.causality not in (OUTPUT, INPUT):
            raise ValueError(f"--output {text}: {system.components[inst].element} {inst} has no output or input "
                             f"{name!r}")
        if text in chosen_inputs:
            raise ValueError(f"--output {text} is an FMU input (--input): it cannot also be an output")
        if text not in chosen_outputs:
            chosen_outputs.append(text)
    if not outputs:
        chosen_outputs = default_outputs(system, connections, chosen_inputs)
    used |= {k.split(".")[0] for k in chosen_outputs}
    # a source whose only connections went to FMU inputs is left out (it would step for nothing)
    components = {inst: c for inst, c in system.at_step(step).items()
                  if inst in used or any(v.causality == INPUT for v in declared[inst].values())}
    step_mean = [inst for inst, c in system.components.items()
                 if inst in components and c.parameters.get(composite_slave.T_COMM)]
    chosen_rates = checked_rates(rates or (), components, step, classes)
    if not (isinstance(iterations, int) and not isinstance(iterations, bool) and iterations >= 0):
        raise ValueError(f"--iterations {iterations!r} must be an integer >= 0")
    if iterations and chosen_rates:
        raise ValueError("--iterations with --rate is not supported: iterations repeat every element's internal "
                         "step, a multi-rate step has none in common")
    description = {
        "format": composite_slave.FORMAT,
        "name": system.name, "label": label, "model_identifier": model_identifier(label),
        "description": system.description, "stop": system.stop, "internal_step": step,
        "components": {inst: {"element": c.element, "parameters": dict(c.parameters)} for inst, c in components.items()},
        "connections": [[c.source, c.output, c.target, c.input] for c in connections],
        "inputs": chosen_inputs, "outputs": chosen_outputs, "step_mean": step_mean,
    }
    if chosen_rates:
        description["rates"] = chosen_rates
    if iterations:
        description["iterations"] = iterations
    composite_slave.interface(description)          # refuses an algebraic loop, by name
    return description


def default_outputs(system, connections, inputs) -> list[str]:
    """A system FMU's outputs when none are chosen: what ``drivetrain-fmu run`` records of
    ``system`` (systems.signals.default_record: its family's plotted and recorded signals,
    engine speed, lock flags and friction torques among them, then every connection's
    source), less the FMU ``inputs`` and the sources of connections ``--input`` dropped."""
    kept = {f"{c.source}.{c.output}" for c in connections}
    dropped = {f"{c.source}.{c.output}" for c in system.connections} - kept
    return [key for key in default_record(system) if key not in dropped and key not in inputs]
