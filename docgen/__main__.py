"""python -m drivetrain_fmu.docgen [CHECKOUT]: write the docs made from the element
declarations into the checkout (default: the working directory), between their markers:
the README's element table and docs/contract.md's variable tables.  After adding or changing
an element this is the one command for its docs (tests/docs/test_readme_table.py checks
that they are current)."""
from __future__ import annotations

import sys
from pathlib import Path

from .element_tables import element_table, variable_tables

#: file -> (marker name, what is generated there)
GENERATED = {
    "README.md": ("elements", lambda: element_table() + "\n"),
    "docs/contract.md": ("variables", variable_tables),
}


def markers(name: str) -> tuple[str, str]:
    return f"<!-- begin: {name} (python -m drivetrain_fmu.docgen) -->\n", f"<!-- end: {name} -->\n"


def generated_part(text: str, name: str, where: str) -> tuple[int, int]:
    """The start and end offsets of what lies between the markers ``name`` in ``text``;
    ValueError naming ``where`` when they are not there once each, in order."""
    begin, end = markers(name)
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise ValueError(f"{where}: needs the line {begin.strip()} and, after it, the line {end.strip()}, "
                         "once each")
    return text.index(begin) + len(begin), text.index(end)


def splice(text: str, name: str, content: str, where: str) -> str:
    """``text`` with the part between the markers ``name`` replaced by ``content``."""
    start, stop = generated_part(text, name, where)
    return text[:start] + content + text[stop:]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    checkout = Path(argv[0] if argv else ".")
    for relative, (name, make) in GENERATED.items():
        path = checkout / relative
        try:
            text = path.read_text(encoding="utf-8")
            new = splice(text, name, make(), str(path))
        except (OSError, ValueError) as exc:
            print(f"python -m drivetrain_fmu.docgen: {exc}", file=sys.stderr)
            return 2
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
