"""docs/benchmarks.md's targets table is the one ``python benchmarks/bench_targets.py
--instructions --write`` writes: its stamp, header and one row per target of the script,
in the script's order with the script's goals, every target measured and judged (no row
of a target the script no longer has, none missing, no --quick run).  The benchmark is not
run here."""
import importlib.util
import re

from tests.conftest import ROOT


def bench_targets():
    spec = importlib.util.spec_from_file_location("bench_targets", ROOT / "benchmarks" / "bench_targets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def block(module) -> list[str]:
    text = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert text.count(module.BEGIN) == 1 and text.count(module.END) == 1, "the table's markers, once each"
    return text.split(module.BEGIN, 1)[1].split(module.END, 1)[0].strip("\n").splitlines()


def test_the_committed_targets_table_has_the_commands_form():
    module = bench_targets()
    lines = block(module)
    assert re.fullmatch(r"Measured \d{4}-\d\d-\d\d at [0-9a-f]{7,40} \(baseline \S+; \d+ cores; "
                        r"the command took \d+ min\):", lines[0]), lines[0]
    assert lines[1] == ""
    assert tuple(lines[2:4]) == module.HEADER
    rows = [line for line in lines[4:] if line.startswith("|")]
    assert len(rows) == len(module.TARGETS), "one row per target, no stale rows"
    for (target, goal), row in zip(module.TARGETS.values(), rows):
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        assert len(cells) == 5, row
        assert cells[:2] == [target, goal], row
        assert cells[4] in ("yes", "no"), row            # measured and judged
        assert "quick" not in row and "not measured" not in row and "not counted" not in row, row
        assert re.search(r"\d", cells[2]) and re.search(r"\d", cells[3]), row
