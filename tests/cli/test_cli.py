"""The drivetrain-fmu command: systems come from the catalog (systems/catalog/ssd) or from files;
every command writes into its own folder; a documented system run with its defaults is
as accurate as stated, and docs/systems.md's accuracy tables are those `report --all` writes."""
from __future__ import annotations

import csv
import math
import re
import time

import numpy as np
import pytest

from drivetrain_fmu import cli
from drivetrain_fmu.cli import checks, convergence, export, measure, plots, simulation
from drivetrain_fmu.cli import study as cli_study
from drivetrain_fmu.docgen import accuracy_tables
from drivetrain_fmu.systems.catalog import msl, r3
from drivetrain_fmu.systems.catalog.reference import error_report
from drivetrain_fmu.systems.signals import PLOTS
from drivetrain_fmu.systems.ssp import catalog, load_system
from tests.conftest import ROOT


def _csv(path):
    """{column name without its unit: values}, and the header as written."""
    with open(path) as handle:
        rows = list(csv.reader(handle))
    header = rows[0]
    data = np.array([[float(x) for x in row] for row in rows[1:]])
    return {name.split(" [")[0]: data[:, i] for i, name in enumerate(header)}, header


def test_list_prints_every_documented_system_with_its_description(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    for name in catalog():
        assert re.search(rf"^  {name} +{re.escape(load_system(name).description)}$", out, re.M), name


def test_run_writes_csv_with_units_and_plot_into_its_own_folder(fmu_dir, tmp_path, capsys):
    """`run r3_spring_1`: results/run/r3_spring_1/ holds the CSV, whose headers carry the
    FMUs' declared units, and the plot; its speeds conserve the drive's impulse,
    J_z w_z + J_wv w_wv = T t (to 1e-9: the spring's internal torques cancel exactly)."""
    assert cli.main(["run", "r3_spring_1", "--fmus", str(fmu_dir), "--out", str(tmp_path)]) == 0
    folder = tmp_path / "run" / "r3_spring_1"
    assert f"wrote {folder / 'r3_spring_1.csv'} and {folder / 'r3_spring_1.png'}" in capsys.readouterr().out
    assert (folder / "r3_spring_1.png").stat().st_size > 10_000
    data, header = _csv(folder / "r3_spring_1.csv")
    assert header[:3] == ["time [s]", "spring.phi_rel [rad]", "spring.tau_2 [N.m]"]
    assert "z.w [rad/s]" in header and "spring.e_spring [J]" in header and "spring.region" in header
    assert data["time"][-1] == load_system("r3_spring_1").stop
    momentum = r3.J_Z * data["z.w"] + r3.J_WV * data["wv.w"]
    assert np.allclose(momentum, r3.SPRING_TORQUE * data["time"], rtol=1e-9, atol=1e-9)


def test_commands_do_not_overwrite_each_others_outputs(fmu_dir, tmp_path):
    """`ssp` of an exported z3 wrote results/z3.csv over `run z3`'s, with other columns;
    now each command has its folder: results/run/z3, results/export/z3, results/ssp/z3
    (and `ssp` records what `run` records)."""
    out = ["--out", str(tmp_path)]
    assert cli.main(["run", "z3", "--stop", "0.1", "--fmus", str(fmu_dir), *out]) == 0
    assert cli.main(["export", "z3", "--stop", "0.1", "--fmus", str(fmu_dir), *out]) == 0
    archive = tmp_path / "export" / "z3" / "z3.ssp"
    assert cli.main(["ssp", str(archive), *out]) == 0
    run, run_header = _csv(tmp_path / "run" / "z3" / "z3.csv")
    ssp, ssp_header = _csv(tmp_path / "ssp" / "z3" / "z3.csv")
    assert (tmp_path / "run" / "z3" / "z3.png").is_file() and archive.is_file()
    assert "clutch.tau_fric_a [N.m]" in run_header and run_header == ssp_header
    for key in run:                                  # the same run, read back from the archive
        assert np.array_equal(run[key], ssp[key]), key


def test_run_with_a_rate_steps_that_component_at_its_own_step(fmu_dir, tmp_path):
    """`run fan_F2 --rate vehicle=1e-3` (base step 0.1 ms): the vehicle steps once per 1 ms,
    so its speed changes only at whole milliseconds and is held over the nine base steps in
    between, while the engine moves at every base step; the CSV is the master's multi-rate
    run (systems.catalog.fan.simulate(rates=...)) to its 10 written digits, and not the uniform run."""
    stop = 0.05
    assert cli.main(["run", "fan_F2", "--stop", str(stop), "--rate", "vehicle=1e-3", "--fmus",
                                str(fmu_dir), "--out", str(tmp_path)]) == 0
    data, _ = _csv(tmp_path / "run" / "fan_F2" / "fan_F2.csv")
    inside = np.abs(data["time"] * 1e3 - np.round(data["time"] * 1e3)) > 1e-6      # not a whole ms
    assert inside.sum() == 9 * 50
    v = data["vehicle.v"]
    changed = np.flatnonzero(np.diff(v) != 0.0) + 1
    assert len(changed) > 10 and not inside[changed].any()
    assert np.all(np.diff(data["engine.w"])[inside[1:]] != 0.0)
    from drivetrain_fmu.systems.catalog import fan

    multirate = fan.simulate(fmu_dir, "F2", step=1e-4, stop=stop, rates={"vehicle": 1e-3})
    uniform = fan.simulate(fmu_dir, "F2", step=1e-4, stop=stop)
    for key in ("engine.w", "clutch.w_1", "vehicle.v"):
        scale = np.max(np.abs(multirate[key]))
        assert np.max(np.abs(data[key] - multirate[key])) <= 1e-9 * scale, key
    assert np.max(np.abs(uniform["vehicle.v"] - multirate["vehicle.v"])) > 1e-6 * np.max(np.abs(uniform["vehicle.v"]))


def test_new_writes_an_editable_copy_that_runs_and_reports_by_path(fmu_dir, tmp_path, monkeypatch, capsys):
    """`new my_spring --from r3_spring_1` writes ./my_spring.ssd; `run my_spring.ssd` runs
    that file (an installed package read its own catalog before), plotted as its family;
    `report` of the unchanged copy uses the documented system's reference, an edited copy
    has none and gets the step-convergence check."""
    monkeypatch.chdir(tmp_path)
    fmus = ["--fmus", str(fmu_dir)]
    assert cli.main(["new", "my_spring", "--from", "r3_spring_1"]) == 0
    assert "drivetrain-fmu run my_spring.ssd" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="my_spring.ssd exists: choose another NAME or remove it") as info:
        cli.main(["new", "my_spring", "--from", "z3"])
    assert info.value.code == 2
    copy = tmp_path / "my_spring.ssd"
    assert cli.main(["report", str(copy), "--steps", "1e-3", *fmus]) == 0
    assert "r3_spring_1 co-simulation vs monolithic reference" in capsys.readouterr().out
    copy.write_text(copy.read_text().replace('<ssv:Real value="20.0" />', '<ssv:Real value="40.0" />'))
    assert cli.main(["run", "my_spring.ssd", *fmus]) == 0
    data, _ = _csv(tmp_path / "results" / "run" / "my_spring" / "my_spring.csv")
    assert np.allclose(r3.J_Z * data["z.w"] + r3.J_WV * data["wv.w"], 40.0 * data["time"], rtol=1e-9, atol=1e-9)
    assert (tmp_path / "results" / "run" / "my_spring" / "my_spring.png").is_file()
    assert cli.main(["report", "my_spring.ssd", *fmus]) == 0      # no reference: its convergence
    assert "my_spring.ssd: step convergence over 1 s (an edited system: no monolithic reference" in \
        capsys.readouterr().out
    assert (tmp_path / "results" / "report" / "my_spring" / "my_spring_convergence.csv").is_file()


@pytest.mark.parametrize("argv", [["ssp", "any.ssp", "--step", "inf"], ["ssp", "any.ssp", "--step=-1e-3"],
                                  ["run", "z3", "--step", "nan"], ["export", "z3", "--stop", "0"]])
def test_a_step_or_stop_that_is_not_a_positive_finite_time_is_a_usage_error(argv, capsys):
    """Checked before anything is built or read (`--step inf` ran and exited 0 with time nan)."""
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    option, value = argv[2].split("=") if "=" in argv[2] else argv[2:4]
    assert f"argument {option}: must be a finite number of seconds > 0, got {value}" in capsys.readouterr().err


def test_list_survives_a_malformed_system_file(tmp_path, monkeypatch, capsys):
    """One unreadable .ssd in the catalog folder is listed as such; the others still are."""
    import shutil

    from drivetrain_fmu.systems import ssp

    for name in ("z3", "fan_F1"):
        shutil.copy(ssp.CATALOG / f"{name}.ssd", tmp_path / f"{name}.ssd")
    (tmp_path / "broken.ssd").write_text("<ssd:SystemStructureDescription")
    monkeypatch.setattr(ssp, "CATALOG", tmp_path)
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "broken" in out and "cannot be read" in out
    assert load_system("z3").description in out and load_system("fan_F1").description in out


def test_report_says_when_a_coupling_diverged(fmu_dir, tmp_path, capsys):
    """Z3 with sampled shaft torques at 10 ms diverges (the speeds reach 1e126): `report`
    says DIVERGED, where and how far, instead of printing 'max 2.20e+124' as an error."""
    assert cli.main(["report", "z3", "--steps", "1e-2", "--fmus", str(fmu_dir), "--out",
                                str(tmp_path)]) == 0
    out = capsys.readouterr().out
    table, sampled = out.split("    separate FMUs, sampled torques: ")
    signal_rows = [line.split() for line in table.splitlines() if line.startswith("    clutch.w_")]
    assert signal_rows and all(row[3] == "DIVERGED" and "DIVERGED" not in row[1:3] + row[4:] for row in signal_rows)
    assert sampled.startswith("DIVERGED: clutch.w_1 leaves the reference by more than 10 times its range")
    assert "e+" not in sampled.split("reaches")[0] and "no error to report" in sampled
    assert "separate FMUs,sampled,,diverged" in (tmp_path / "report" / "z3" / "z3_errors.csv").read_text()


def _report_rows(path) -> dict[tuple[str, str], dict[str, tuple[str, float, float]]]:
    """`report`'s CSV: {(configuration, compliance torques): {signal: (status, max, RMS)}}
    of its one step ('' for the signal of a run that failed or diverged)."""
    with open(path) as handle:
        rows = list(csv.DictReader(handle))
    found = {}
    for row in rows:
        figures = [float(row[k]) if row[k] else math.nan for k in ("max error / range", "RMS error / range")]
        found.setdefault((row["configuration"], row["compliance torques"]), {})[row["signal"]] = (row["status"],
                                                                                                  *figures)
    return found


def _convergence_rows(path) -> dict[str, tuple[float, float]]:
    """`report`'s step-convergence CSV of one step H: {signal: (observed order, RMS error
    at H / range)}."""
    with open(path) as handle:
        return {row["signal"]: (float(row["observed order"]), float(row["RMS error at H / range"]))
                for row in csv.DictReader(handle)}


@pytest.mark.parametrize("torques, step, order, within", [("step-mean", 1e-3, 2.0, 0.05),
                                                          ("sampled", 2.5e-4, 1.0, 0.10)])
def test_step_convergence_finds_the_order_of_the_exchange_and_estimates_the_error(fmu_dir, tmp_path, monkeypatch,
                                                                                  capsys, torques, step, order,
                                                                                  within):
    """The step-convergence check (H, H/2, H/4) on R3 spring case 1, whose monolithic
    reference gives the true error.  The master holds each input over a step: with sampled
    compliance torques the torque error is O(h) and the run first order; a step-mean torque
    (the mean along the twist advanced with the held speeds) is off by k a_rel h^2 / 6, so
    the run is second order (no friction or impact event here to bring it down).  Observed
    orders measured: 1.86 to 1.87 at 1 ms step-mean, 1.01 to 1.04 at 0.25 ms sampled (the
    sampled run at 1 ms is 43 % off: not yet asymptotic); allowed: within 0.15 of the order.
    Richardson's estimate of the RMS error at H against the reference's figure: measured
    within 0.6 % (step-mean) and 7.4 % (sampled, a larger p-th order remainder); allowed
    ``within``."""
    monkeypatch.chdir(tmp_path)
    fmus = ["--fmus", str(fmu_dir), "--steps", f"{step:g}"]
    assert cli.main(["new", "spring", "--from", "r3_spring_1"]) == 0
    copy = tmp_path / "spring.ssd"
    if torques == "sampled":          # the spring's T_comm bound 0: sampled torques (an edited system)
        text = copy.read_text()
        at = text.index('<ssv:Parameter name="T_comm">')
        copy.write_text(text[:at] + re.sub(r'value="[^"]*"', 'value="0.0"', text[at:], count=1))
        assert cli.main(["report", "spring.ssd", *fmus]) == 0
        estimated = _convergence_rows(tmp_path / "results" / "report" / "spring" / "spring_convergence.csv")
    else:                             # the unchanged copy has a reference: --convergence asks for the check
        assert cli.main(["report", "spring.ssd", "--convergence", *fmus]) == 0
        estimated = _convergence_rows(tmp_path / "results" / "report" / "spring" / "spring_convergence.csv")
    assert f"{torques} compliance torques" in capsys.readouterr().out
    assert cli.main(["report", "r3_spring_1", *fmus]) == 0
    true = _report_rows(tmp_path / "results" / "report" / "r3_spring_1" / "r3_spring_1_errors.csv")
    true = true[("separate FMUs", torques)]
    assert set(estimated) == set(true) == {"spring.phi_rel", "z.w", "wv.w"}
    for key, (observed, error) in estimated.items():
        assert abs(observed - order) <= 0.15, (key, observed)
        assert abs(error - true[key][2]) <= within * true[key][2], (key, error, true[key])


def test_report_prints_the_system_as_one_fmu_beside_the_separate_fmus(fmu_dir, tmp_path, capsys):
    """Z3 at 1 ms (its file's step is 2 ms): the system as one FMU, whose internal step the
    report sets to 1 ms at instantiation (left at 2 ms the FMU would refuse every 1 ms
    step), runs the same element code in the same order as the separate FMUs with
    step-mean torques, so its errors are theirs and the two runs differ by at most 1e-9
    of a signal's range (docs/composite-fmu.md: equal to 1e-12 of each signal's largest
    value; measured 0).  About 15 s (the system FMU's build 5-8 s of it)."""
    assert cli.main(["report", "z3", "--steps", "1e-3", "--fmus", str(fmu_dir), "--out",
                                str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"\n +separate FMUs +separate FMUs +one FMU\n +step-mean torques +sampled torques +"
                     r"step-mean torques\n", out), out
    difference = re.search(r"one FMU against separate FMUs, step-mean torques: largest difference (\S+) of a "
                           r"signal's range", out)
    assert difference and float(difference.group(1)) <= 1e-9, out
    rows = _report_rows(tmp_path / "report" / "z3" / "z3_errors.csv")
    assert set(rows) == {("separate FMUs", "step-mean"), ("separate FMUs", "sampled"), ("one FMU", "step-mean")}
    keys = measure.REPORT_KEYS["z3"]
    one, separate = rows["one FMU", "step-mean"], rows["separate FMUs", "step-mean"]
    assert list(one) == keys and all(status == "ok" for status, _, _ in one.values())
    for key in keys:
        assert one[key][1:] == pytest.approx(separate[key][1:], rel=1e-9, abs=1e-9), key
    for line in out.splitlines():             # the printed figures: the same, signal by signal
        cells = line.split()
        if cells and cells[0] in keys:
            assert cells[5:7] == cells[1:3] and cells[3:5] != cells[1:3], line


def test_report_says_when_the_system_fmu_refused_a_step(fmu_dir, tmp_path, capsys):
    """Fan F2 at 10 ms: the Vehicle's stick/slip problem has no solution at t = 0.16 s and it
    refuses the step, in its own FMU and inside the system FMU alike: `report` says FAILED
    for both runs, at the same time, with the FMU's reason, in one line each (no traceback),
    and goes on.  About 25 s (the F2 reference 15 s of it)."""
    assert cli.main(["report", "fan_F2", "--steps", "1e-2", "--fmus", str(fmu_dir), "--out",
                                str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    separate = re.search(r"\n    separate FMUs, step-mean torques: FAILED at t = (\S+) s \(vehicle: .*Lemke",
                         captured.out)
    one = re.search(r"\n    one FMU, step-mean torques: FAILED at t = (\S+) s \(system: .*the FMU says: vehicle "
                    r"\(Vehicle\): .*Lemke", captured.out)
    assert separate and one and one.group(1) == separate.group(1), captured.out
    assert all(cells[-1] == "FAILED" for cells in (line.split() for line in captured.out.splitlines())
               if cells and cells[0] in measure.REPORT_KEYS["fan"])
    rows = _report_rows(tmp_path / "report" / "fan_F2" / "fan_F2_errors.csv")
    assert [(list(rows[run]), rows[run][""][0]) for run in rows] == [([""], "failed")] * 3


def test_export_prints_an_ecos_step_at_which_it_was_measured_stable(fmu_dir, tmp_path, capsys):
    """ecos exchanges values Jacobi-style: at Z3's 2 ms it diverges (|w_2| > 1e3 at 1.96 s),
    so `export z3` names the measured step for ecos instead of printing a command that
    diverges; an export at that step prints the ecos command with it."""
    step, _ = export.JACOBI_STEPS["z3"]
    assert step < load_system("z3").step
    assert cli.main(["export", "z3", "--fmus", str(fmu_dir), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "--stepSize 0.002" not in out.split("OMSimulator")[1].split("\n", 1)[1]
    assert f"drivetrain-fmu export z3 --step {step:g}" in out
    assert cli.main(["export", "z3", "--step", f"{step:g}", "--fmus", str(fmu_dir), "--out",
                                str(tmp_path)]) == 0
    assert f"--stepSize {step:g} --stopTime 10 --parameterSet initialValues" in capsys.readouterr().out


# The accuracy stated for each documented system run with its defaults (RMS error / signal
# range against systems.catalog.reference over the default experiment; the figures the README's table
# gave by hand before `report --all` wrote them into docs/systems.md), with 10 % for the
# rounding of the stated figure; the F figures are for the driven wheel and the engine.
STATED = {
    "z3": {"clutch.w_1": 0.17e-2, "clutch.w_2": 0.17e-2, "clutch.w_3": 0.17e-2, "vehicle.w": 0.17e-2},
    "fan_F1": {"vehicle.w_wheel_f": 0.012e-2, "engine.w": 0.67e-2},
    "fan_F2": {"vehicle.w_wheel_f": 0.011e-2, "engine.w": 0.64e-2},
    "fan_F3": {"vehicle.w_wheel_f": 0.19e-2, "engine.w": 0.53e-2},
    "fan_F2_100": {"vehicle.w_wheel_f": 0.12e-2, "engine.w": 0.013e-2},
    "fan_F2_100_stribeck": {"vehicle.w_wheel_f": 0.53e-2, "engine.w": 0.035e-2},
    "fan_F3_harmonics": {"vehicle.w_wheel_f": 0.19e-2, "engine.w": 0.78e-2},
    **{f"r3_spring_{case}": {"spring.phi_rel": 1e-2, "z.w": 1e-2, "wv.w": 1e-2} for case in (1, 2, 3)},
    **{f"r3_clearance_{case}": {"mesh.w_1": 1e-2, "mesh.w_2": 1e-2, "vehicle.w": 1e-2} for case in (1, 3)},
    "r3_clearance_2": {"mesh.w_mean": 0.14e-2, "vehicle.w": 0.02e-2},
    "planetary_shift": {key: 0.058e-2 for key in ("gear.w_sun", "gear.w_carrier", "gear.w_ring", "vehicle.w")},
    "automatic_launch": {key: 0.053e-2 for key in ("converter.w_pump", "converter.w_turbine", "vehicle.w")},
    "heating_clutch": {"clutch.w_1": 0.11e-2, "clutch.w_2": 0.11e-2, "clutch.T_th": 0.043e-2},
    "synchro_upshift": {key: 0.29e-2 for key in ("gearbox.w_1", "gearbox.w_2", "synchro.w_gear", "synchro.w_shaft",
                                                 "vehicle.w")},
    "split_mu_open": {key: 0.028e-2 for key in ("diff.w_carrier", "vehicle.w_left", "vehicle.w_right", "vehicle.v")},
    "split_mu_lsd": {key: 0.027e-2 for key in ("diff.w_carrier", "vehicle.w_left", "vehicle.w_right", "vehicle.v")},
}
#: run at their file's defaults over their whole experiment by tests/cosim/test_reference.py
#: (fan.simulate with the file's step and T_comm: the run `run` makes), 30-90 s each here;
#: not run a second time (a shorter window is no cheaper substitute: the errors are
#: relative to the signal's range over the window, which the stated figures are not)
COMPARED_IN_TEST_REFERENCE = ("fan_F2", "fan_F2_100", "fan_F2_100_stribeck", "fan_F3_harmonics")


def test_every_documented_system_is_stated():
    """Stated as an accuracy against a monolithic reference, or (the MSL examples) as their
    lock/unlock instants against MSL's results, tested in tests/cosim/test_msl_examples.py."""
    assert sorted([*STATED, *msl.EVENTS]) == catalog()


@pytest.mark.parametrize("name", [name for name in catalog() if name not in COMPARED_IN_TEST_REFERENCE
                                  and name not in msl.EVENTS])
def test_a_documented_system_run_with_its_defaults_is_as_accurate_as_stated(fmu_dir, name):
    """`run NAME` with the file's defaults (step, T_comm, stop) through the command's own
    path (simulation.cosimulate): before, R3 spring case 1 was 66 % RMS off its
    reference (its file bound the sampled spring torque) where the README said within 1 %.
    About 2 min of CPU for the nine systems here (F1 and F3 most of it)."""
    system = load_system(name)
    start = time.monotonic()
    result = simulation.cosimulate(system, fmu_dir, system.step, progress=False)
    grid = np.arange(int(round(system.stop / system.step)) + 1) * system.step
    report = error_report(result, measure.reference_of(name, grid), list(STATED[name]))
    print(f"\n{name}: {time.monotonic() - start:.1f} s, RMS / range "
          + ", ".join(f"{key} {rms:.2e}" for key, (_, rms) in report.items()))
    for key, stated in STATED[name].items():
        assert report[key][1] <= 1.1 * stated, (key, report[key][1], stated)


def _generated_tables() -> str:
    """docs/systems.md's part between the comments `report --all --write` rewrites."""
    text = (ROOT / "docs" / "systems.md").read_text(encoding="utf-8")
    assert text.count(accuracy_tables.ACCURACY_BEGIN) == 1 and text.count(accuracy_tables.ACCURACY_END) == 1
    start = text.index(accuracy_tables.ACCURACY_BEGIN)
    return text[start:text.index(accuracy_tables.ACCURACY_END) + len(accuracy_tables.ACCURACY_END)] + "\n"


_PERCENT = r"(\d+(?:\.\d+)?(?:e[-+]\d+)?) %"


def _committed_errors(tables: str) -> dict[str, tuple[float, dict[str, tuple[float, float]], str]]:
    """{system: (step, {signal: (max, RMS) / range}, the one-FMU cell)} of the rows the
    reference table holds with figures (rows of failed or diverged runs have none)."""
    found = {}
    for line in tables.splitlines():
        row = re.fullmatch(r"\| `(\w+)` \| ([\d.e-]+) ms \| (.*) \| (.*) \|", line)
        if row and "lock" not in line:
            errors = {key: (float(peak) / 100, float(rms) / 100) for key, rms, peak in
                      re.findall(rf"`([\w.]+)` {_PERCENT} \({_PERCENT}\)", row.group(3))}
            found[row.group(1)] = (float(row.group(2)) * 1e-3, errors, row.group(4))
    return found


#: the largest difference between the system as one FMU and the separate FMUs at the same
#: step, divided by the signal's range, that the tables may show: the contract is 1e-12 of
#: each signal's largest value (docs/composite-fmu.md; measured 0), and every compared
#: signal's range is more than 1e-2 of its largest value (the references on a 1 ms grid;
#: smallest fan_F2_100's vehicle.v, 0.013), so 1e-12 of the value is below 1e-10 of the range
ONE_FMU_DIFFERENCE = 1e-9


def test_the_accuracy_tables_in_docs_are_those_report_all_writes():
    """docs/systems.md's measured accuracy is written by `drivetrain-fmu report --all
    --write`, not typed: its tables have one row per documented system in the command's
    order and format (a reference row, re-made by the command's own formatting from the
    figures it shows, is the same line), at each system's step; the system as one FMU
    ran for each and is as far from the separate FMUs as the contract allows.  Cheap:
    runs nothing."""
    tables = _generated_tables()
    lines = tables.splitlines()
    assert lines[:2] == [accuracy_tables.ACCURACY_BEGIN, ""] and lines[-2:] == ["", accuracy_tables.ACCURACY_END]
    reference_part, msl_part = "\n".join(lines[2:-2]).split("\n\n")
    reference_lines, msl_lines = reference_part.splitlines(), msl_part.splitlines()
    assert "\n".join(reference_lines[:2]) == accuracy_tables.ACCURACY_HEADER
    assert "\n".join(msl_lines[:2]) == accuracy_tables.MSL_HEADER
    referenced = [name for name in catalog() if name not in msl.EVENTS]
    assert [re.match(r"\| `(\w+)` ", line).group(1) for line in reference_lines[2:]] == referenced
    assert [re.match(r"\| `(\w+)` ", line).group(1) for line in msl_lines[2:]] == sorted(msl.EVENTS)
    committed = _committed_errors(tables)
    for line in reference_lines[2:]:
        name = re.match(r"\| `(\w+)` ", line).group(1)
        if name not in committed or not committed[name][1]:          # a failed or diverged run
            assert re.fullmatch(rf"\| `{name}` \| [\d.]+ ms \| (failed|diverged)(: .*)? \| .* \|", line), line
            continue
        step, errors, one_fmu = committed[name]
        assert step == pytest.approx(load_system(name).step)
        assert list(errors) == measure.REPORT_KEYS[checks.family_and_case(name)[0]], line
        assert re.fullmatch(r"0|\d\.\de-\d\d", one_fmu) and float(one_fmu) <= ONE_FMU_DIFFERENCE, line
        assert accuracy_tables.reference_row({
            "name": name, "step": load_system(name).step, "status": "ok", "detail": "", "errors": errors,
            "one_fmu": {"status": "ok", "detail": "", "difference": float(one_fmu)}}) == line
    for line, name in zip(msl_lines[2:], sorted(msl.EVENTS)):
        assert re.fullmatch(rf"\| `{name}` \| {load_system(name).step * 1e3:g} ms \| \d+ of \d+ found, within "
                            rf"[\d.]+ ms \(largest: `[\w.]+` (un)?locks at [\d.]+ s\) \| within {_PERCENT} of the "
                            rf"value \(largest: `[\w.]+` at [\d.]+ s\)(; held at exactly 0 where MSL's is 0)? \|",
                            line), line


def test_the_committed_accuracy_is_within_what_the_tests_assert():
    """Every figure STATED (which the test above this one and tests/cosim/test_reference.py check
    against fresh runs) holds for the committed table too, so the table and the assertion
    cannot tell different stories."""
    committed = _committed_errors(_generated_tables())
    for name, stated in STATED.items():
        for key, bound in stated.items():
            assert committed[name][1][key][1] <= 1.1 * bound, (name, key, committed[name][1][key][1], bound)


def test_report_all_rewrites_only_its_tables_and_refuses_a_file_without_the_comments(tmp_path, capsys):
    rows = [{"name": "z3", "step": 2e-3, "status": "ok", "detail": "",
             "errors": {"clutch.w_1": (5.5e-3, 1.4e-3), "vehicle.w": (1.7e-4, 7.5e-5)},
             "one_fmu": {"status": "ok", "detail": "", "difference": 0.0}},
            {"name": "r3_spring_1", "step": 1e-3, "status": "diverged", "detail": "DIVERGED: spring.phi_rel ...",
             "one_fmu": {"status": "failed", "detail": "FAILED: not built (...)", "difference": None}}]
    msl_rows = [{"name": "msl_friction", "step": 1e-3,
                 "events": [("clutch.locked", "locks at [s]", 0.0068, 0.00678), ("brake.locked", "locks at [s]",
                                                                                  0.641, 0.64061)],
                 "speeds": [("clutch.w_1", "at 2 s [rad/s]", 4.459, 4.449), ("brake.w", "at 1 s [rad/s]", 0.0, 0.0)]}]
    tables = accuracy_tables.accuracy_tables(rows, msl_rows)
    assert "| `z3` | 2 ms | `clutch.w_1` 0.14 % (0.55 %), `vehicle.w` 0.0075 % (0.017 %) | 0 |" in tables
    assert ("| `r3_spring_1` | 1 ms | diverged: DIVERGED: spring.phi_rel ... | failed: FAILED: not built (...) |"
            in tables)
    assert ("| `msl_friction` | 1 ms | 2 of 2 found, within 0.39 ms (largest: `brake.locked` locks at 0.64061 s) | "
            "within 0.22 % of the value (largest: `clutch.w_1` at 2 s); held at exactly 0 where MSL's is 0 |") in tables
    page = tmp_path / "page.md"
    page.write_text(f"before\n{accuracy_tables.ACCURACY_BEGIN}\nold\n{accuracy_tables.ACCURACY_END}\nafter\n")
    assert accuracy_tables.replace_generated(page.read_text(), tables) == f"before\n{tables}after\n"
    with pytest.raises(ValueError, match="--write needs the line"):
        accuracy_tables.replace_generated("no comments here\n", tables)
    (tmp_path / "plain.md").write_text("no comments\n")
    for argv in (["report", "--all", "--write", str(tmp_path / "plain.md")], ["report", "--all", "--steps", "1e-3"],
                 ["report", "z3", "--all"], ["report"], ["report", "z3", "--write"]):
        with pytest.raises(SystemExit) as refused:
            cli.main([*argv, "--out", str(tmp_path / "results")])
        assert refused.value.code == 2, argv
    assert not (tmp_path / "results").exists()
    capsys.readouterr()


def test_the_fan_plot_zooms_on_the_stick_slip_cycle_with_the_largest_slip(tmp_path):
    """The Fan plots' slip and torque panels are solid bands at the scale of the run: a row
    of zoomed panels shows one period, between two lock events, the one whose slip peaks
    highest (with a 15 % margin); no lock cycle, no zoom.  Checked on a synthetic run, and
    the plot of it is written."""
    from drivetrain_fmu.systems.master import Result

    time = np.arange(0, 1.0 + 1e-9, 1e-3)
    phase = (time * 10) % 1.0                      # ten cycles: locked in the first fifth of each
    locked = (phase < 0.2).astype(float)
    slip = np.where(locked > 0, 0.0, np.sin(np.pi * (phase - 0.2) / 0.8)) * (1 + 5 * (np.abs(time - 0.55) < 0.05))
    start, end = plots._stick_slip_window(time, locked, slip)
    assert start == pytest.approx(0.5 - 0.015, abs=2e-3) and end == pytest.approx(0.6 + 0.015, abs=2e-3)
    assert plots._stick_slip_window(time, np.ones_like(time), slip) is None
    signals = {key: np.zeros_like(time) for _, panel in PLOTS["fan"][1] for key, _ in panel}
    signals.update({"clutch.locked": locked, "clutch.w_slip": slip})
    plots.plot_run(tmp_path / "fan.png", load_system("fan_F2"), Result(time, signals), [], {})
    assert (tmp_path / "fan.png").stat().st_size > 10_000


def test_plot_titles_and_labels_are_in_words_without_internal_references():
    """Titles carried figure numbers of the sources ("their Fig. 3-19"); the breakaway study's
    axis was `tau_below`, without unit.  Every study axis label now has a unit."""
    import re

    titles = [title for title, _ in PLOTS.values()] + [t for t, _ in cli_study.STUDY_PLOTS.values()]
    for title in titles:
        assert not re.search(r"Fig\.|Table \d|seed|issue", title), title
    for _, labels in cli_study.STUDY_PLOTS.values():
        assert all(re.search(r"\[[^]]+\]$", label) for label in labels.values()), labels


@pytest.mark.parametrize("order", [1.0, 2.0, 3.0])
def test_convergence_recovers_the_order_and_error_of_runs_with_a_known_error_law(order):
    """Runs y_h = y + C h^p g(t) on their own grids (h, h/2, h/4): the observed order is p
    and Richardson's estimate of the run at h is its error C h^p g, exactly (to rounding:
    1e-9 relative)."""
    step, stop = 1e-2, 1.0
    runs, growing = [], []
    for k in convergence.HALVINGS:
        t = np.arange(round(stop * k / step) + 1) * step / k
        runs.append(np.sin(3 * t) + 0.7 * (step / k) ** order * np.cos(5 * t))
        growing.append(np.sin(3 * t) + 0.7 * step ** order * k * np.cos(5 * t))
    measured = convergence.convergence(runs)
    t = np.arange(round(stop / step) + 1) * step
    error = 0.7 * step ** order * np.cos(5 * t)
    assert measured["order"] == pytest.approx(order, rel=1e-9)
    assert measured["error"] == pytest.approx(np.sqrt(np.mean(error ** 2)), rel=1e-9)
    assert measured["max error"] == pytest.approx(np.max(np.abs(error)), rel=1e-9)
    # not converging (an error that grows as the step is halved, p = -1): no estimate
    measured = convergence.convergence(growing)
    assert measured["order"] == pytest.approx(-1.0, rel=1e-9) and measured["error"] is None
