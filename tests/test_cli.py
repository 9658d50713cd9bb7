"""The drivetrain-fmu command: systems come from the catalog (systems/ssd)."""
from __future__ import annotations

import csv

import numpy as np

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
