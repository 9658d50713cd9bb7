"""No failed or interrupted run destroys a result the user had (issue 30, section 2).

* A full disk while `run` writes its results: the CSV and the plot are written into
  partial files and renamed together once both are complete; a failure leaves the previous
  complete CSV and PNG as they were, and the message names the file that could not be
  written (exit status 1).  Before, the CSV was truncated in place and the message was
  `OSError: [Errno 28] No space left on device`, naming no file.
* An interrupted run writes the rows it computed into LABEL.interrupted.csv and leaves the
  last complete run's LABEL.csv and LABEL.png, which belong together.  Before, the partial
  rows replaced LABEL.csv beside the previous run's plot.
* SIGTERM (timeout, batch schedulers, CI) is handled as Ctrl-C: the run stops at the next
  communication point, writes what it computed, removes the FMUs extracted into the
  temporary folder and exits with 143 (128 + SIGTERM, as shells report a command that
  SIGTERM ended).  Before, the process died at once and left 70-85 MB of extracted FMUs
  in TMPDIR per run.
"""
from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from drivetrain_fmu import cli
from drivetrain_fmu.cli import run as run_command
from tests.conftest import ROOT

pytestmark = pytest.mark.fmu


def _files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


@contextlib.contextmanager
def _tmpfs(folder: Path, size: str):
    """A tmpfs of ``size`` at ``folder`` (a real file system that runs out of space: ENOSPC
    from the kernel) for the block; the test is skipped where this process may not mount
    one (not root)."""
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode}): the full-disk case "
                    "needs root; test_a_write_error_keeps_the_previous_results injects the error instead")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MiB tmpfs."""
    with _tmpfs(tmp_path / "disk", "4m") as disk:
        yield disk


def _fill(disk: Path, leave: int) -> None:
    """Fill ``disk`` up, then free ``leave`` bytes (whole pages of the tmpfs)."""
    filler = disk / "filler"
    # unbuffered: a buffered file would keep the part of the last block that did not fit and
    # fail again with ENOSPC when closed (whenever the free space is not a multiple of 64 KiB)
    with open(filler, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    os.truncate(filler, filler.stat().st_size - leave)


def test_a_full_disk_keeps_the_previous_csv_and_plot_and_names_the_file(fmu_dir, small_disk, capsys):
    """z3 over 0.1 s writes its CSV (11 kB) and plot; the disk is then filled but for 32 kB,
    and z3 over 1 s needs 120 kB for its CSV: the run is refused with exit status 1 naming
    results/run/z3/z3.csv and saying the previous files are kept, which are byte for byte
    those of the first run; no partial file is left."""
    out = ["--fmus", str(fmu_dir), "--out", str(small_disk / "results")]
    assert cli.main(["run", "z3", "--stop", "0.1", *out]) == 0
    folder = small_disk / "results" / "run" / "z3"
    before = _files(folder)
    assert sorted(before) == ["z3.csv", "z3.png"] and before["z3.csv"].count(b"\n") == 1 + 51
    _fill(small_disk, 32 * 1024)
    with pytest.raises(SystemExit) as info:
        cli.main(["run", "z3", "--stop", "1", *out])
    err = capsys.readouterr().err
    assert info.value.code == 1, err
    assert f"cannot write {folder / 'z3.csv'} (No space left on device)" in err, err
    assert "the previous z3.csv and z3.png kept" in err, err
    assert _files(folder) == before


def test_a_write_error_keeps_the_previous_results(fmu_dir, tmp_path, monkeypatch, capsys):
    """The same without a small disk: the plot's write fails with ENOSPC after the CSV of the
    second run was written completely (into its partial file).  Neither file changes: the
    new CSV without its plot would sit beside the old plot as if they belonged together."""
    out = ["--fmus", str(fmu_dir), "--out", str(tmp_path / "results")]
    assert cli.main(["run", "z3", "--stop", "0.1", *out]) == 0
    folder = tmp_path / "results" / "run" / "z3"
    before = _files(folder)

    def full(path, *args):
        Path(path).write_bytes(b"\x89PNG partial")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(run_command, "plot_run", full)      # as cli.run calls it
    with pytest.raises(SystemExit) as info:
        cli.main(["run", "z3", "--stop", "0.2", *out])
    err = capsys.readouterr().err
    assert info.value.code == 1
    assert f"cannot write {folder / 'z3.png'} (No space left on device); the previous z3.csv and z3.png kept" in err
    assert _files(folder) == before


def _start_run(tmp_path, fmu_dir, *argv, env=None):
    """`run` in a process of its own, returned once its progress bar has started."""
    process = subprocess.Popen([sys.executable, "-m", "drivetrain_fmu.cli", "run", *argv, "--fmus", str(fmu_dir)],
                               cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err = ""
    deadline = time.monotonic() + 120
    while "co-simulation:" not in err and time.monotonic() < deadline and process.poll() is None:
        err += process.stderr.read(1)
    time.sleep(1.0)                                   # well into the run (40 s of F2: 400 001 steps)
    return process, err


@pytest.mark.parametrize("signum, status, said", [(signal.SIGINT, 130, "interrupted at t = "),
                                                  (signal.SIGTERM, 143, "terminated (SIGTERM) at t = ")])
def test_an_interrupted_run_keeps_the_last_complete_results_and_its_temporary_folder_clean(
        fmu_dir, tmp_path, signum, status, said):
    """fan_F2 over 0.1 s completes; then fan_F2 over 40 s is sent SIGINT or SIGTERM a second
    into its run.  It stops at a communication point, says so with the time, exits 130 or
    143, writes its rows into fan_F2.interrupted.csv (time from 0 in steps of 0.1 ms) and
    leaves fan_F2.csv and fan_F2.png of the complete run byte for byte; the temporary folder
    it was given is empty afterwards (the extracted FMUs are removed)."""
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {"TMPDIR": str(temp)}
    folder = tmp_path / "results" / "run" / "fan_F2"
    done = subprocess.run([sys.executable, "-m", "drivetrain_fmu.cli", "run", "fan_F2", "--stop", "0.1", "--fmus",
                           str(fmu_dir)], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    before = _files(folder)
    process, err = _start_run(tmp_path, fmu_dir, "fan_F2", "--stop", "40", env=env)
    try:
        process.send_signal(signum)
        _, rest = process.communicate(timeout=120)
    finally:
        process.kill()
    err += rest
    assert process.returncode == status, err[-2000:]
    last = [line for line in err.replace("\r", "\n").splitlines() if line.strip()][-1]
    assert last.startswith(f"drivetrain-fmu run: {said}"), last
    assert f"wrote {Path('results/run/fan_F2/fan_F2.interrupted.csv')} with the rows computed so far" in last
    assert "Traceback" not in err
    assert {name: data for name, data in _files(folder).items() if name != "fan_F2.interrupted.csv"} == before
    rows = (folder / "fan_F2.interrupted.csv").read_text().splitlines()
    assert rows[0] == before["fan_F2.csv"].decode().splitlines()[0] and 1000 < len(rows) < 400_002
    assert [float(row.split(",")[0]) for row in rows[1:4]] == [0.0, 1e-4, 2e-4]
    assert sorted(p.name for p in temp.iterdir()) == []


def test_a_complete_run_removes_the_rows_of_an_earlier_interrupted_one(fmu_dir, tmp_path):
    """fan_F2.interrupted.csv is the partial result of an earlier run: the next complete
    run of the same system replaces it (it would otherwise sit beside the new results)."""
    folder = tmp_path / "results" / "run" / "z3"
    folder.mkdir(parents=True)
    (folder / "z3.interrupted.csv").write_text("time [s]\n0\n")
    assert cli.main(["run", "z3", "--stop", "0.02", "--fmus", str(fmu_dir), "--out",
                                str(tmp_path / "results")]) == 0
    assert sorted(p.name for p in folder.iterdir()) == ["z3.csv", "z3.png"]


def test_export_on_a_full_disk_keeps_the_previous_archive(fmu_dir, tmp_path, capsys):
    """`export mine.ssd` writes its .ssp whole or not at all.  On a 150 MiB tmpfs (room for the
    first archive, which grows with the element code every FMU carries), mine.ssd as a copy of
    r3_spring_1 is exported (3 FMUs); the disk is filled up, mine.ssd becomes a copy of z3
    (5 FMUs) and is exported again: refused naming the file,
    exit status 1, and the first archive is there byte for byte.  Before, zipfile truncated
    it in place and filled the space it freed with a broken archive."""
    from drivetrain_fmu.systems.ssp import CATALOG

    with _tmpfs(tmp_path / "disk", "150m") as disk:
        source = tmp_path / "mine.ssd"
        out = ["--fmus", str(fmu_dir), "--out", str(disk / "results")]
        source.write_bytes((CATALOG / "r3_spring_1.ssd").read_bytes())
        assert cli.main(["export", str(source), *out]) == 0
        archive = disk / "results" / "export" / "mine" / "mine.ssp"
        before = archive.read_bytes()
        _fill(disk, 0)
        source.write_bytes((CATALOG / "z3.ssd").read_bytes())
        with pytest.raises(SystemExit) as info:
            cli.main(["export", str(source), *out])
        err = capsys.readouterr().err
        assert info.value.code == 1, err
        assert f"cannot write {archive} (No space left on device); the previous mine.ssp kept" in err, err
        assert archive.read_bytes() == before
        assert sorted(p.name for p in archive.parent.iterdir()) == ["mine.ssp"]
