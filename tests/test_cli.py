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
