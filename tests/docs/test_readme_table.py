"""The README's element table is the one ``drivetrain-fmu list --markdown`` makes from
``fmus.ELEMENTS``, character for character (so it cannot drift from the elements)."""
import re

from drivetrain_fmu import cli
from drivetrain_fmu import fmus
from drivetrain_fmu.docgen import element_tables
from tests.conftest import ROOT


def readme_element_table() -> str:
    """The table under the README's "## Elements" heading: its consecutive lines starting with '|'."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Elements\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"^\|.*(?:\n\|.*)*", section, flags=re.MULTILINE)
    assert match, "README.md has no table under '## Elements'"
    return match.group(0)


def test_the_readme_element_table_is_the_generated_one(capsys):
    assert cli.main(["list", "--markdown"]) == 0
    printed = capsys.readouterr().out
    assert readme_element_table() + "\n" == printed, (
        "README.md's element table differs from `drivetrain-fmu list --markdown`: paste its output "
        "under '## Elements'")


def test_the_generated_table_has_one_row_per_element_with_its_ports():
    rows = element_tables.element_table().splitlines()[2:]
    assert [row.split(" | ")[0].lstrip("| ") for row in rows] == [e.__name__ for e in fmus.ELEMENTS]
    for element, row in zip(fmus.ELEMENTS, rows):
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells[2] == element.description
        inputs = [v.name for v in element.VARIABLES if v.causality == "input"]
        # every input is listed, by name or as the first/last of a numbered range
        assert all(f"`{name}`" in cells[4] for name in inputs if not re.fullmatch(r".+_\d+", name)), row
        assert (cells[1] == "source") == (not inputs or getattr(element, "KIND", None) == "source")
    assert element_tables.ports(["tau_1", "tau_2", "tau_3", "f_n_a", "phi_1", "phi_2"]) == \
        "`tau_1`..`tau_3`, `f_n_a`, `phi_1`, `phi_2`"


def test_the_contract_variable_tables_are_the_generated_ones():
    """docs/contract.md's tables of every element's variables are `list --variables`, made
    from each element's VARIABLES: they cannot drift from the FMUs (they had: n_surfaces
    shown as a Real after it became an Integer)."""
    doc = (ROOT / "docs" / "contract.md").read_text()
    assert doc[doc.index("#### Clutch\n"):] == element_tables.variable_tables()
