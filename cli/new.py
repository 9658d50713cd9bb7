"""drivetrain-fmu new NAME --from SYSTEM: an editable copy of a system as NAME.ssd."""
from __future__ import annotations

import re
from pathlib import Path

from drivetrain_fmu.systems.ssp import copy_system

from .checks import output_label, system_of, writable_folder
from .errors import PROG, UsageError


def execute(args) -> None:
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", args.name):
        raise UsageError(f"NAME {args.name!r}: use letters, digits, '_' and '-', starting with a letter "
                         f"(it names the file NAME.ssd)")
    source = system_of(args.source)
    target = writable_folder(Path(args.dir), "--dir") / f"{args.name}.ssd"
    if target.exists():
        raise UsageError(f"{target} exists: choose another NAME or remove it")
    target.write_bytes(copy_system(source, args.name))
    print(f"wrote {target}, a copy of {output_label(source)}: edit it (parameters are ssv:Parameter values), then\n"
          f"  {PROG} run {target}")
