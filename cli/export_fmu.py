"""drivetrain-fmu export-fmu SYSTEM: a whole system as one FMU (docs/composite-fmu.md).

What goes into the FMU is systems.composite.describe's; the build is
build_fmus.build_system_fmu's; this is the command around them."""
from __future__ import annotations

import argparse
from pathlib import Path

from drivetrain_fmu import build_fmus
from drivetrain_fmu.systems import composite_slave
from drivetrain_fmu.systems.composite import describe
from drivetrain_fmu.systems.ssp import open_system

from .checks import warn_unconnected
from .errors import UsageError

DEFAULT_OUT = Path("results")


def execute(args) -> None:
    """export-fmu: the system checked (its unconnected inputs said), then built."""
    try:
        args.system = open_system(str(args.system))
        warn_unconnected(args.system, args.command, args.input)
        _build_system_fmu(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``drivetrain-fmu export-fmu``."""
    parser.add_argument("system", metavar="SYSTEM", help="a documented system or the path of an .ssd or .ssp file")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for SYSTEM.fmu (default results/)")
    parser.add_argument("--input", action="append", default=[], metavar="INST.VAR",
                        help="make this element input an FMU input (drops the connection that drove it); repeatable")
    parser.add_argument("--output", action="append", default=[], metavar="INST.VAR",
                        help="an FMU output (default: what `drivetrain-fmu run` records of the system: the "
                             "signals it plots, then the source of every connection); repeatable")
    parser.add_argument("--internal-step", type=float, metavar="H",
                        help="internal step in s, {:g} to {:g} (default: the system's step); every host step must "
                             "be a whole multiple of it".format(*composite_slave.INTERNAL_STEP_RANGE))
    parser.add_argument("--rate", action="append", default=[], metavar="INST=H",
                        help="multi-rate: element INST steps with H s (a whole multiple of the internal step), its "
                             "inputs the mean of the connections' values over its step, its outputs held (angles "
                             "advanced with the held speed) for the others; every host step must then be a whole "
                             "multiple of H; repeatable")
    parser.add_argument("--iterations", type=int, default=0, metavar="N",
                        help="repeat each internal step N times with the connections at the mean of their values at "
                             "t and t + h (systems.master.run's iterations); default 0")
    parser.add_argument("--python-hosts-only", action="store_true",
                        help="no bundled Python: the FMU then runs only in a CPython process of the build's version")


def _build_system_fmu(args) -> Path:
    """Build the system FMU the parsed arguments ask for; ValueError (a usage error) names
    what is wrong before anything is built."""
    description = describe(args.system, args.input, args.output, args.internal_step,
                           getattr(args, "rate", ()), getattr(args, "iterations", 0))
    if args.out.exists() and not args.out.is_dir():
        raise ValueError(f"--out {args.out} is not a folder")
    path = build_fmus.build_system_fmu(description, args.out, python_hosts_only=args.python_hosts_only)
    print(f"wrote {path} ({len(description['components'])} elements, {len(description['inputs'])} inputs, "
          f"{len(description['outputs'])} outputs, internal step {description['internal_step']:g} s"
          + "".join(f", {inst} at {h:g} s" for inst, h in description.get("rates", {}).items())
          + (f", {description['iterations']} iterations" if description.get("iterations") else "") + ")")
    return path
