"""The drivetrain-fmu command: systems come from the catalog (systems/ssd)."""
from __future__ import annotations

import csv
import shutil

import numpy as np
import pytest

import drivetrain_cli
from systems import r3
from systems.ssp import catalog, load_system


def test_list_prints_every_documented_system_with_its_description(capsys):
    assert drivetrain_cli.main(["list"]) == 0
    out = capsys.readouterr().out
    for name in catalog():
        assert f"{name:20s} {load_system(name).description}" in out


def test_run_writes_csv_and_plot_of_a_catalog_system(fmu_dir, tmp_path):
    """`run r3_spring_1` (without its build step): the CSV holds the documented run, and
    its speeds conserve the drive's impulse, J_z w_z + J_wv w_wv = T t (to 1e-9: the
    spring's internal torques cancel exactly, as in test_nonlinear_spring_fmu)."""
    drivetrain_cli._run_system("r3_spring_1", fmu_dir, 1e-3, tmp_path)
    assert (tmp_path / "r3_spring_1.png").stat().st_size > 10_000
    with open(tmp_path / "r3_spring_1.csv") as handle:
        rows = list(csv.DictReader(handle))
    t = np.array([float(r["time"]) for r in rows])
    momentum = np.array([r3.J_Z * float(r["z.w"]) + r3.J_WV * float(r["wv.w"]) for r in rows])
    assert t[-1] == load_system("r3_spring_1").stop
    assert np.allclose(momentum, r3.SPRING_TORQUE * t, rtol=1e-9, atol=1e-9)


def test_a_new_system_file_runs_without_a_family_of_its_own(fmu_dir, tmp_path, monkeypatch):
    """A copied .ssd (here r3_spring_1 as 'my_spring') runs through the generic path, which
    records every connected output, and the drive's impulse is conserved as above; `report`
    says it has no monolithic reference instead of failing."""
    from systems import ssp

    catalog_dir = tmp_path / "ssd"
    catalog_dir.mkdir()
    shutil.copy(ssp.CATALOG / "r3_spring_1.ssd", catalog_dir / "my_spring.ssd")
    monkeypatch.setattr(ssp, "CATALOG", catalog_dir)
    drivetrain_cli._run_system("my_spring", fmu_dir, None, tmp_path)
    with open(tmp_path / "my_spring.csv") as handle:
        rows = list(csv.DictReader(handle))
    t = np.array([float(r["time"]) for r in rows])
    momentum = np.array([r3.J_Z * float(r["z.w"]) + r3.J_WV * float(r["wv.w"]) for r in rows])
    assert np.allclose(momentum, r3.SPRING_TORQUE * t, rtol=1e-9, atol=1e-9) and t[-1] == 1.0
    with pytest.raises(SystemExit, match="my_spring: no monolithic reference"):
        drivetrain_cli._report("my_spring", fmu_dir, [1e-3])


@pytest.mark.parametrize("argv", [["ssp", "any.ssp", "--step", "inf"], ["ssp", "any.ssp", "--step=-1e-3"],
                                  ["run", "z3", "--step", "nan"], ["export", "z3", "--stop", "0"]])
def test_a_step_or_stop_that_is_not_a_positive_finite_time_is_a_usage_error(argv, capsys):
    """Checked before anything is built or read (`--step inf` ran and exited 0 with time nan)."""
    with pytest.raises(SystemExit) as exit_info:
        drivetrain_cli.main(argv)
    assert exit_info.value.code == 2
    option, value = argv[2].split("=") if "=" in argv[2] else argv[2:4]
    assert f"argument {option}: must be a finite number of seconds > 0, got {value}" in capsys.readouterr().err


def test_list_survives_a_malformed_system_file(tmp_path, monkeypatch, capsys):
    """One unreadable .ssd in the catalog folder is listed as such; the others still are."""
    from systems import ssp

    for name in ("z3", "fan_F1"):
        shutil.copy(ssp.CATALOG / f"{name}.ssd", tmp_path / f"{name}.ssd")
    (tmp_path / "broken.ssd").write_text("<ssd:SystemStructureDescription")
    monkeypatch.setattr(ssp, "CATALOG", tmp_path)
    assert drivetrain_cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "broken" in out and "cannot be read" in out
    assert load_system("z3").description in out and load_system("fan_F1").description in out
