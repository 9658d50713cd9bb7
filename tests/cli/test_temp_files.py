"""Running a system leaves nothing in the temporary folder: systems.master extracts each
FMU once per process and removes the copy at exit (before, every process left 12 MB per
FMU it ran, and the test runs of a few sessions filled this machine's disk: 79 GB)."""
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.fmu


def test_a_process_that_runs_a_system_leaves_no_extracted_fmu(fmu_dir, tmp_path):
    temp = tmp_path / "temp"
    temp.mkdir()
    script = ("from systems.ssp import load_system, run_system\n"
              "s = load_system('msl_one_way_clutch')\n"
              f"r = run_system({str(fmu_dir)!r}, s.components, s.connections, 0.01, 1e-3, ['clutch.w_1'])\n"
              "assert len(r['clutch.w_1']) == 11\n")
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True,
                   env={**os.environ, "TMPDIR": str(temp), "PYTHONPATH": str(ROOT)})
    assert sorted(p.name for p in temp.iterdir()) == []
