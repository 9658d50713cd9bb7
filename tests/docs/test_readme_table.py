"""The README's element table is the one ``drivetrain-fmu list --markdown`` makes from
``fmus.ELEMENTS``, character for character (so it cannot drift from the elements)."""
import re

from drivetrain_fmu import cli
from drivetrain_fmu import fmus
from drivetrain_fmu.docgen import __main__ as docgen_main
from drivetrain_fmu.docgen import element_tables
from tests.conftest import ROOT


def test_the_generated_docs_are_current(tmp_path, capsys):
    """The README's element table and docs/contract.md's variable tables are what
    `python -m drivetrain_fmu.docgen` writes from the element declarations (they had drifted:
    n_surfaces shown as a Real after it became an Integer); the README's table is also what
    `drivetrain-fmu list --markdown` prints."""
    for relative in docgen_main.GENERATED:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text((ROOT / relative).read_text(encoding="utf-8"), encoding="utf-8")
    assert docgen_main.main([str(tmp_path)]) == 0
    stale = [relative for relative in docgen_main.GENERATED
             if (tmp_path / relative).read_text(encoding="utf-8") != (ROOT / relative).read_text(encoding="utf-8")]
    assert not stale, f"{stale} differ from what `python -m drivetrain_fmu.docgen` writes: run it"
    capsys.readouterr()
    assert cli.main(["list", "--markdown"]) == 0
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start, stop = docgen_main.generated_part(text, "elements", "README.md")
    assert text[start:stop] == capsys.readouterr().out


def test_docgen_refuses_a_file_without_its_markers(tmp_path, capsys):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# no table here\n")
    (tmp_path / "docs" / "contract.md").write_text("")
    assert docgen_main.main([str(tmp_path)]) == 2
    assert "README.md: needs the line <!-- begin: elements" in capsys.readouterr().err
    assert (tmp_path / "README.md").read_text() == "# no table here\n"


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
