"""docs/benchmarks.md's generated tables are the ones their commands write: ``python
benchmarks/bench_targets.py --instructions --write`` (issue 20's targets) and ``python
benchmarks/bench_kernels.py --write`` (issue 33's targets and the doStep latencies).  Each
has its stamp, header and one row per target of the script, in the script's order with the
script's goals, every target measured and judged (no row of a target the script no longer
has, none missing, no --quick run); the page names the command that wrote each table.  The
benchmarks are not run here."""
import importlib.util
import re
import sys

from tests.conftest import ROOT

PAGE = ROOT / "docs" / "benchmarks.md"
UNMEASURED = ("quick", "not measured", "not counted")


def script(name: str):
    sys.path.insert(0, str(ROOT / "benchmarks"))        # bench_kernels imports bench_targets
    try:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return module


def block(module) -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    assert text.count(module.BEGIN) == 1 and text.count(module.END) == 1, "the table's markers, once each"
    return text.split(module.BEGIN, 1)[1].split(module.END, 1)[0].strip("\n").splitlines()


def check_rows(rows: list[str], targets: dict) -> None:
    """One measured and judged row per target, in order, with the script's target and goal."""
    assert len(rows) == len(targets), "one row per target, no stale rows"
    for (target, goal), row in zip(targets.values(), rows):
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        assert len(cells) == 5, row
        assert cells[:2] == [target, goal], row
        assert cells[4] in ("yes", "no"), row            # measured and judged
        assert not any(word in row for word in UNMEASURED), row
        assert re.search(r"\d", cells[2]) and re.search(r"\d", cells[3]), row


def test_the_committed_issue_20_table_has_the_commands_form():
    module = script("bench_targets")
    lines = block(module)
    assert re.fullmatch(r"Measured \d{4}-\d\d-\d\d at [0-9a-f]{7,40} \(baseline \S+; \d+ cores; "
                        r"the command took \d+ min\):", lines[0]), lines[0]
    assert lines[1] == ""
    assert tuple(lines[2:4]) == module.HEADER
    check_rows([line for line in lines[4:] if line.startswith("|")], module.TARGETS)


def test_the_committed_issue_33_tables_have_the_commands_form():
    module = script("bench_kernels")
    lines = block(module)
    assert lines, f"no table between the markers: run `{module.COMMAND}`"
    load = r"\d+\.\d\d/\d+\.\d\d/\d+\.\d\d"
    assert re.fullmatch(rf"Measured \d{{4}}-\d\d-\d\d at [0-9a-f]{{7,40}} \(today [0-9a-f]{{7,40}}; \d+ cores; "
                        rf"load average over 1/5/15 min {load} at the start, {load} after the timed runs; "
                        r"the command took \d+ min\):", lines[0]), lines[0]
    assert lines[1] == ""
    assert tuple(lines[2:4]) == module.HEADER
    targets = lines[4:4 + len(module.TARGETS)]
    check_rows(targets, module.TARGETS)
    latency = lines[4 + len(module.TARGETS):]
    assert latency[0] == "" and tuple(latency[1:3]) == module.LATENCY_HEADER, latency[:3]
    rows = latency[3:]
    assert len(rows) == len(module.LATENCY_CASES), "one row per system and communication step"
    for (system, _, step), row in zip(module.LATENCY_CASES, rows):
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        assert cells[0] == f"{system} as one FMU, communication step {step * 1e3:g} ms", row
        assert all(re.fullmatch(r"\d+ us", cell) for cell in cells[1:4]), row
        assert re.fullmatch(r"\d+ / \d+ / \d+ us", cells[4]), row      # today's, measured in the same run
        p50, p999, worst = (int(cell.split()[0]) for cell in cells[1:4])
        assert p50 <= p999 <= worst, row                                # percentiles of one sample


def test_the_page_names_the_command_that_wrote_each_table():
    text = PAGE.read_text(encoding="utf-8")
    for name in ("bench_targets", "bench_kernels"):
        module = script(name)
        outside = text.split(module.BEGIN, 1)[0]
        assert f"python benchmarks/{name}.py" in outside, f"{name}'s command, above its table"
