"""The generated element tables: the README's (`drivetrain-fmu list --markdown`) and the
variable tables of docs/contract.md (`drivetrain-fmu list --variables`), both made from
``fmus.ELEMENTS`` (tests/docs/test_readme_table.py keeps the files equal to them)."""
from __future__ import annotations

from drivetrain_fmu.fmus import ELEMENTS
from drivetrain_fmu.fmus.variables import BOOLEAN, INTEGER, OUTPUT


def ports(names: list[str]) -> str:
    """Port names in backticks; the members of an indexed family (``fmus.variables.Family``,
    as the elements declare them: tau_1 .. tau_6 of ClutchChain) together, three or more
    as a range.  A name is grouped as any element declares it (phi_1, phi_2 of a Gear
    with those of a Clutch, which declares them members of "phi")."""
    stems = _declared_stems()
    families: dict[str, list[str]] = {}
    for name in names:
        families.setdefault(stems.get(name, name), []).append(name)
    return ", ".join(f"`{group[0]}`..`{group[-1]}`" if len(group) >= 3 else ", ".join(f"`{n}`" for n in group)
                     for group in families.values()) or "none"


def _declared_stems() -> dict[str, str]:
    """name -> stem of the family that name is declared a member of, over ``fmus.ELEMENTS``
    (a name is the same member wherever it is declared: tests/elements/test_element_contract.py)."""
    return {v.name: v.family.stem for element in ELEMENTS for v in element.VARIABLES if v.family is not None}


#: count parameters whose families docs/contract.md shows by their first member only
_FIRST_MEMBER_ONLY = ("n_bodies", "n_points")


def _contract_cell(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return "" if value is None else f"{value:g}"


def variable_tables() -> str:
    """docs/contract.md's "Variables of every element": one table per entry of
    ``fmus.ELEMENTS``, from its VARIABLES (of a family counted by a parameter of
    _FIRST_MEMBER_ONLY only the first member is listed)."""
    parts = []
    for element in ELEMENTS:
        rows = [f"#### {element.__name__}", "",
                "| variable | causality | unit | default | allowed | feedthrough from | description |",
                "|---|---|---|---|---|---|---|"]
        for v in element.VARIABLES:
            if v.family is not None and v.family.count in _FIRST_MEMBER_ONLY and v.family.index > 1:
                continue
            unit = {INTEGER: "Integer", BOOLEAN: "Boolean"}.get(v.type, v.unit or "1")
            bounded = v.low is not None or v.high is not None
            allowed = ("" if v.causality == OUTPUT or v.type == BOOLEAN
                       else v.allowed() if bounded else "any finite")
            rows.append(f"| `{v.name}` | {v.causality} | {unit} | {_contract_cell(v.start)} | {allowed} | "
                        f"{', '.join(v.depends)} | {v.description} |")
        parts.append("\n".join(rows))
    return "\n\n".join(parts) + "\n"


def element_table() -> str:
    """The README's element table, one row per entry of ``fmus.ELEMENTS``: the element's
    ``KIND`` if it declares one, else a source has no input, a compliance takes the speeds
    of its sides (rad/s inputs), a body the others."""
    rows = ["| element | kind | what it is | module (equations in its docstring) | inputs | outputs |",
            "|---|---|---|---|---|---|"]
    for element in ELEMENTS:
        inputs = [v for v in element.VARIABLES if v.causality == "input"]
        kind = getattr(element, "KIND", None) or (
            "compliance" if any(v.unit == "rad/s" for v in inputs) else "body" if inputs else "source")
        where = element.__module__.removeprefix("drivetrain_fmu.").replace(".", "/") + ".py"   # in the checkout
        rows.append(f"| {element.__name__} | {kind} | {element.description} | `{where}` | "
                    f"{ports([v.name for v in inputs])} | "
                    f"{ports([v.name for v in element.VARIABLES if v.causality == 'output'])} |")
    return "\n".join(rows)
