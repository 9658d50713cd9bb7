"""drivetrain-fmu list: the elements and the documented systems (or the generated tables)."""
from __future__ import annotations

from drivetrain_fmu.docgen.element_tables import element_table, variable_tables
from drivetrain_fmu.fmus import ELEMENTS
from drivetrain_fmu.systems.ssp import catalog, load_system


def execute(args) -> None:
    """list: the elements and the documented systems, one per line, each column as wide as
    its longest name; --markdown the README's element table, --variables the variable
    tables of docs/contract.md (docgen.element_tables)."""
    if args.variables:
        print(variable_tables(), end="")
        return
    if args.markdown:
        print(element_table())
        return
    width = max(len(element.__name__) for element in ELEMENTS)
    for element in ELEMENTS:
        print(f"{element.__name__:{width}s}  {element.description}")
    print("documented systems (systems/catalog/ssd/NAME.ssd; drivetrain-fmu run|report|export NAME, "
          "or a file: drivetrain-fmu new MINE --from NAME, then run MINE.ssd):")
    names = catalog()
    width = max(map(len, names), default=0)
    for name in names:
        try:
            description = load_system(name).description
        except (ValueError, SyntaxError, KeyError) as exc:      # one bad file hides no other
            description = f"(cannot be read: {exc})"
        print(f"  {name:{width}s}  {description}")
