"""benchmarks/fmpy_host.py's ``--drive ... --fixed-extraction FOLDER`` (the counting process of
benchmarks/bench_one_model.py) runs the same simulation as fmpy's own extraction: Z3's system
FMU, built with bench_one_model's outputs (ae373e9's Z3 FMU's), for 2 steps from the folder
equals simulate_fmu of the .fmu bit for bit (tolerance 0: the folder the FMU is extracted
into is not an input of the physics, and the same code runs the same floats).  The folder is
emptied before each extraction; a folder holding anything else is refused and left as it is.
No instructions are counted here (that needs valgrind and minutes)."""
from __future__ import annotations

import numpy as np
import pytest

from benchmarks import bench_one_model, fmpy_host
from drivetrain_fmu import build_fmus


@pytest.fixture(scope="module")
def z3_fmu(tmp_path_factory):
    return build_fmus.build_system_fmu("z3", tmp_path_factory.mktemp("z3"), outputs=bench_one_model.OUTPUTS,
                                       platforms=("linux64",))


def test_the_fixed_extraction_runs_the_same_steps_bit_for_bit(z3_fmu, tmp_path):
    folder = tmp_path / "x"
    folder.mkdir()
    (folder / "modelDescription.xml").write_text("a stale extraction")
    (folder / "stale").write_text("left by an earlier run")
    fixed = fmpy_host.drive(z3_fmu, 2, folder)
    assert not (folder / "stale").exists(), "the folder is emptied before the extraction"
    assert (folder / "resources").is_dir() and (folder / "binaries").is_dir()
    random = fmpy_host.drive(z3_fmu, 2)
    assert fixed.dtype.names == ("time", *bench_one_model.OUTPUTS)
    assert len(fixed) == 3                                      # t = 0 and the 2 steps of 2 ms
    np.testing.assert_array_equal(fixed["time"], [0.0, 2e-3, 4e-3])
    for name in fixed.dtype.names:
        assert np.array_equal(fixed[name], random[name]), name


def test_a_folder_that_is_no_extraction_is_refused_untouched(z3_fmu, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=rf"--fixed-extraction {tmp_path}: not a folder an FMU was extracted"):
        fmpy_host.drive(z3_fmu, 2, tmp_path)
    assert [path.name for path in tmp_path.iterdir()] == ["notes.txt"]
