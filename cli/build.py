"""drivetrain-fmu build [NAME ...]: the chosen element FMUs, rebuilt."""
from __future__ import annotations

import sys
from pathlib import Path

from drivetrain_fmu import build_fmus
from drivetrain_fmu.fmus import ELEMENTS

from .checks import _fmu_folder
from .errors import UsageError


def execute(args) -> None:
    """build [NAME ...]: the chosen elements' FMUs (default every element), rebuilt."""
    known = [e.__name__ for e in ELEMENTS]
    unknown = [name for name in args.elements if name not in known]
    if unknown:
        raise UsageError(f"build {unknown[0]}: no element {unknown[0]!r}; elements: {', '.join(known)}")
    out = _fmu_folder(Path(args.out), "--out", new_allowed=True)
    chosen = list(dict.fromkeys(args.elements)) or known
    print(f"building {len(chosen)} FMU(s) into {out.resolve()}", file=sys.stderr)
    for path in build_fmus.build_all(out, only=chosen, pure_python=args.pure_python or None):
        print(f"built {path}")
