"""drivetrain-fmu report --all [--write FILE]: every documented system at its step; the
tables are drivetrain_docs.accuracy_tables'."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from drivetrain_fmu.docgen.accuracy_tables import DETAIL_LIMIT, accuracy_tables, msl_row, reference_row, replace_generated
from drivetrain_fmu.systems.catalog import msl
from drivetrain_fmu.systems.ssp import catalog, load_system

from .checks import family_and_case, fmus_for, out_folder
from .errors import UsageError, one_line
from .measure import REPORT_KEYS, built_system_fmu, largest_difference, measure_run, measure_system_fmu, reference_of
from .simulation import cosimulate, interruptible


def _measure_reference(name: str, fmu_dir: Path) -> dict:
    """`run NAME` at its file's step and binding against the monolithic reference, and the
    system as one FMU at that step: {name, step, status ('ok', 'failed', 'diverged'), detail,
    errors {signal: (max, RMS) / range}, one_fmu {status, detail, difference: the largest
    difference from the separate FMUs / range, None unless both ran}}."""
    system = load_system(name)
    keys, step = REPORT_KEYS[family_and_case(name)[0]], system.step
    grid = np.arange(int(round(system.stop / step)) + 1) * step
    ref = reference_of(name, grid)
    separate = measure_run(lambda at_point: cosimulate(system, fmu_dir, step, progress=False, at_point=at_point),
                         ref, keys, grid)
    one = measure_system_fmu(system, built_system_fmu(system, keys, fmu_dir), step, ref, keys, grid)
    return {"name": name, "step": step, "status": separate["status"],
            "detail": one_line(separate["detail"], DETAIL_LIMIT), "errors": separate["errors"],
            "one_fmu": {"status": one["status"], "detail": one_line(one["detail"], DETAIL_LIMIT),
                        "difference": largest_difference(one, separate, ref, keys)}}


def _measure_msl(name: str, fmu_dir: Path) -> dict:
    """`run NAME` at its file's step against MSL 4.0's results (systems.catalog.msl): {name, step,
    events: [(signal, what, ours, MSL's)], speeds: [(signal, what, ours, MSL's)]}."""
    system = load_system(name)
    with interruptible() as (at_point, _state):
        result = cosimulate(system, fmu_dir, system.step, progress=False, at_point=at_point)
    rows = msl.comparison(name, result)
    return {"name": name, "step": system.step, "events": [r for r in rows if "lock" in r[1]],
            "speeds": [r for r in rows if "lock" not in r[1]]}


def _rewritten(text: str, tables: str, target: Path) -> str:
    """``text`` (of ``target``) with its generated tables replaced by ``tables``; a usage
    error when it lacks the comments around them."""
    try:
        return replace_generated(text, tables, str(target))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def execute(args) -> None:
    """Every documented system at its file's step (as `run` runs it) against its monolithic
    reference or MSL's results: the markdown tables on stdout, progress on stderr; --write
    FILE rewrites them in place in FILE."""
    names = catalog()
    target = args.write
    if target is not None:                                # checked before hours of work, not after
        try:
            _rewritten(target.read_text(encoding="utf-8"), "", target)
        except OSError as exc:
            raise UsageError(f"--write {target}: {exc.strerror or exc}") from None
    out = out_folder(args, "report", "all")
    fmu_dir = Path(args.fmus)
    fmus_for([load_system(name) for name in names], fmu_dir)
    reference_rows, msl_rows = [], []
    for name in names:
        start = time.monotonic()
        if name in msl.EVENTS:
            msl_rows.append(_measure_msl(name, fmu_dir))
            shown = msl_row(msl_rows[-1])
        else:
            reference_rows.append(_measure_reference(name, fmu_dir))
            shown = reference_row(reference_rows[-1])
        print(f"{time.monotonic() - start:6.1f} s  {shown}", file=sys.stderr, flush=True)
    tables = accuracy_tables(reference_rows, msl_rows)
    (out / "accuracy.md").write_text(tables, encoding="utf-8")
    print(tables, end="")
    if target is not None:
        target.write_text(_rewritten(target.read_text(encoding="utf-8"), tables, target), encoding="utf-8")
        print(f"wrote {out / 'accuracy.md'} and the tables in {target}", file=sys.stderr)
    else:
        print(f"wrote {out / 'accuracy.md'}", file=sys.stderr)
