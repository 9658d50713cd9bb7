"""Every user mistake of issue 19 through the real command (`python -m drivetrain_fmu.cli` in
a subprocess): one or two lines on stderr naming the bad value and what is allowed, exit
status 2 for a usage error, 1 for a failed simulation, 130 when interrupted, and no
Python traceback unless --debug.  Before, each ended in a 12-44 line traceback (and step
errors only after the FMUs were built).  The FMUs come pre-built (--fmus of the session's
``fmu_dir``), so nothing here builds."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from drivetrain_fmu.systems.ssp import CATALOG, catalog

ROOT = Path(__file__).resolve().parents[2]
Z3 = (CATALOG / "z3.ssd").read_text()


def cli(*argv, cwd, timeout=120):
    """(exit status, stdout, stderr) of `python -m drivetrain_fmu.cli argv` run in ``cwd``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "drivetrain_fmu.cli", *map(str, argv)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout, done.stderr


def assert_refused(result, status, *parts, max_lines=2):
    """The error ends in at most ``max_lines`` lines of stderr (after any progress bar and
    the line saying where the FMUs are) holding every one of ``parts``, with exit ``status``
    and no traceback."""
    code, _, err = result
    lines = [line for line in err.replace("\r", "\n").splitlines()
             if line and "co-simulation:" not in line and not line.startswith("FMUs in ")]
    assert code == status, err
    assert "Traceback" not in err, err
    assert 1 <= len(lines) <= max_lines, lines
    for part in parts:
        assert part in err, (part, err)


def _write_ssp(path: Path, document: str, fmu_dir: Path | None = None, elements=()):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("SystemStructure.ssd", document)
        for element in elements:
            archive.write(fmu_dir / f"{element}.fmu", f"resources/{element}.fmu")
    return path


def test_an_unknown_system_names_it_and_lists_the_documented_ones(tmp_path):
    """Every documented system is listed, in the catalog's order."""
    assert_refused(cli("run", "z4", cwd=tmp_path), 2, "unknown system 'z4'",
                   f"give a documented system ({', '.join(catalog())})", "or the path of an .ssd or .ssp file")


@pytest.mark.parametrize("name, content, message", [
    ("broken.ssd", "<ssd:SystemStructureDescription", "broken.ssd: not an XML document"),
    ("other.ssd", "<html/>", "other.ssd: not an SSP 1.0 SystemStructureDescription"),
    ("notes.txt", "z3", "notes.txt: a system file must be an .ssd (SystemStructure) or an .ssp (archive)"),
])
def test_a_malformed_system_file_is_a_usage_error(tmp_path, name, content, message):
    (tmp_path / name).write_text(content)
    for command in ("run", "report", "export"):
        assert_refused(cli(command, name, cwd=tmp_path), 2, message)


def test_a_missing_system_file_is_named(tmp_path):
    assert_refused(cli("run", "mine.ssd", cwd=tmp_path), 2, "mine.ssd: no such file")


def test_an_ssp_that_is_not_an_archive_or_lacks_an_fmu(tmp_path, fmu_dir):
    (tmp_path / "fake.ssp").write_text("not a zip")
    assert_refused(cli("ssp", "fake.ssp", cwd=tmp_path), 2, "fake.ssp: not an SSP archive")
    _write_ssp(tmp_path / "z3.ssp", Z3, fmu_dir, ["Shaft", "Inertia", "TorqueTable", "ForceTable"])
    assert_refused(cli("ssp", "z3.ssp", cwd=tmp_path), 2,
                   "z3.ssp: the archive lacks resources/DualClutch.fmu (used by its components)")


def test_an_ssd_of_an_unknown_element_names_it_and_the_elements(tmp_path, fmu_dir):
    (tmp_path / "mine.ssd").write_text(Z3.replace("resources/DualClutch.fmu", "resources/TripleClutch.fmu"))
    assert_refused(cli("run", "mine.ssd", "--fmus", fmu_dir, cwd=tmp_path), 2,
                   "unknown element TripleClutch", "elements: Clutch, DualClutch")


def test_an_unknown_connector_names_the_connection(tmp_path):
    (tmp_path / "mine.ssd").write_text(Z3.replace('startElement="clamp_a" startConnector="y"',
                                                  'startElement="clamp_a" startConnector="yy"'))
    assert_refused(cli("run", "mine.ssd", cwd=tmp_path), 2,
                   "mine.ssd: system 'z3': connection clamp_a.yy -> clutch.f_n_a: clamp_a.yy does not exist")


def test_a_parameter_out_of_range_is_refused_before_any_fmu_loads(tmp_path):
    (tmp_path / "mine.ssd").write_text(Z3.replace('<ssv:Parameter name="J">\n                    <ssv:Real value="135.0"',
                                                  '<ssv:Parameter name="J">\n                    <ssv:Real value="-1.0"'))
    assert_refused(cli("run", "mine.ssd", "--fmus", tmp_path / "none", cwd=tmp_path), 2,
                   "mine.ssd: vehicle: J = -1.0 is outside the allowed range ")
    assert not (tmp_path / "none").exists()          # nothing was built


@pytest.mark.parametrize("argv, message", [
    (["run", "z3", "--record", "clutch.w_9"], "--record clutch.w_9: clutch (DualClutch) has no variable 'w_9'"),
    (["run", "z3", "--record", "gearbox.w"], "--record gearbox.w: no component 'gearbox'; components: clutch, "),
])
def test_an_unknown_record_name_is_named_with_what_exists(tmp_path, fmu_dir, argv, message):
    assert_refused(cli(*argv, "--fmus", fmu_dir, cwd=tmp_path), 2, message, "its outputs: " if "w_9" in message
                   else "(give instance.variable)")


@pytest.mark.parametrize("argv, message", [
    (["run", "z3", "--step", "0"], "argument --step: must be a finite number of seconds > 0, got 0"),
    (["run", "z3", "--step", "-1e-3"], "argument --step: must be a finite number of seconds > 0, got -1e-3"),
    (["ssp", "z3.ssp", "--step", "-0.001"], "argument --step: must be a finite number of seconds > 0, got -0.001"),
    (["report", "z3", "--steps", "1e-3", "-2e-3"], "argument --steps: must be a finite number of seconds > 0, got -2e-3"),
    (["run", "z3", "--step", "0.003"], "--step 0.003 does not divide the stop time 10 s of z3 into whole steps; "
                                       "allowed: 10 s / n, e.g. 0.0025 or 0.004"),
    (["report", "z3", "--steps", "1e-3", "3e-3"], "--steps 0.003 does not divide the stop time 10 s of z3"),
    (["export", "r3_spring_1", "--step", "0.3"], "--step 0.3 does not divide the stop time 1 s of r3_spring_1"),
    (["run", "fan_F2", "--rate", "input_shaft=1e-3"], "--rate input_shaft=0.001: input_shaft (Shaft) has no state: "
                                                      "it is evaluated at every step; components that take a rate: "
                                                      "engine, clutch, vehicle"),
    (["run", "fan_F2", "--rate", "vehicle=1.5e-4"], "--rate vehicle=0.00015: 0.00015 s is not a whole multiple of "
                                                    "the step 0.0001 s"),
    (["run", "fan_F2", "--stop", "0.5005", "--rate", "vehicle=1e-3"],
     "--rate: the stop 0.5005 s is not a whole number of 0.001 s, the common step of vehicle 0.001 s"),
    (["run", "fan_F2", "--rate", "vehicle"], "--rate 'vehicle': give INST=H"),
    (["run", "fan_F2", "--output-interval", "1.5e-4"], "--output-interval 0.00015 must be a whole multiple of the "
                                                       "step 0.0001 s that divides the stop time 4.5 s"),
])
def test_a_bad_step_is_a_usage_error_found_before_any_build(tmp_path, argv, message):
    """A negative step is named as --step (it reached the FMU as T_comm before), and a step
    that does not divide the stop time is refused within seconds, not after the FMUs are
    built: the --fmus folder stays empty."""
    start = time.monotonic()
    assert_refused(cli(*argv, "--fmus", tmp_path / "fmus", cwd=tmp_path), 2, message)
    assert time.monotonic() - start < 8.0
    assert not (tmp_path / "fmus").exists()


def test_an_ssp_run_at_another_step_than_its_t_comm_names_both(tmp_path, fmu_dir):
    from drivetrain_fmu.systems import ssp

    archive = ssp.export("z3", tmp_path / "z3.ssp", fmu_dir, step=2e-3, stop=0.1)
    assert_refused(cli("ssp", archive.name, "--step", "1e-3", cwd=tmp_path), 2,
                   "--step 0.001 differs from the step the archive was exported for: shaft_odd.T_comm = 0.002 s",
                   "run it at --step 0.002 or export the system again with --step 0.001")


def test_an_unwritable_output_folder_is_named_with_the_option_to_change_it(tmp_path, fmu_dir):
    """A read-only working directory (as root, where permissions do not apply, a results
    path below a file stands for it)."""
    if os.geteuid() == 0:
        (tmp_path / "results").write_text("a file, not a folder")
        expected = "cannot write to results/run/r3_spring_1 ("
    else:
        tmp_path.chmod(0o555)
        expected = "cannot write to results/run/r3_spring_1 (Permission denied)"
    try:
        assert_refused(cli("run", "r3_spring_1", "--fmus", fmu_dir, cwd=tmp_path), 2, expected,
                       "give --out DIR, a folder you can write")
    finally:
        tmp_path.chmod(0o755)


def test_a_failed_simulation_exits_1_with_the_time_and_the_fmu_message(tmp_path, fmu_dir):
    """R3 spring case 1 with the sampled spring torque (T_comm = 0) at 10 ms: the explicit
    coupling feeds energy into the undamped stiff spring until an output overflows (at
    t = 27 s); the run ends with the failing call, the time and the FMU's first message."""
    document = (CATALOG / "r3_spring_1.ssd").read_text()
    sampled = document.replace('<ssv:Parameter name="T_comm">\n                    <ssv:Real value="0.001" />',
                               '<ssv:Parameter name="T_comm">\n                    <ssv:Real value="0.0" />')
    assert sampled != document
    (tmp_path / "sampled.ssd").write_text(sampled)
    result = cli("run", "sampled.ssd", "--step", "0.01", "--stop", "100", "--fmus", fmu_dir, cwd=tmp_path)
    assert_refused(result, 1, "the simulation failed at t = ", "spring: fmi2", "the FMU says: ", "is not finite")


def test_debug_shows_the_traceback(tmp_path):
    code, _, err = cli("--debug", "run", "z4", cwd=tmp_path)
    assert code == 2 and "Traceback" in err and "unknown system 'z4'" in err


def test_ctrl_c_stops_the_run_says_interrupted_and_exits_130(tmp_path, fmu_dir):
    """SIGINT while F2 runs (40 s at 0.1 ms: 400 000 steps, more than ten seconds here; its own
    4.5 s now take about two, so the signal could come after the run): the run stops at the next
    communication point (no FMU is killed in the middle of a step: before, the FMU turned
    the KeyboardInterrupt into fmi2Fatal and a traceback followed), says "interrupted"
    with the time reached, no traceback, exit status 130."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "drivetrain_fmu.cli", "run", "fan_F2", "--stop", "40", "--fmus",
                                str(fmu_dir)],
                               cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        err = ""
        deadline = time.monotonic() + 60
        while "co-simulation:" not in err and time.monotonic() < deadline:
            err += process.stderr.read(1)
        time.sleep(2.0)                      # well into the run
        process.send_signal(signal.SIGINT)
        out, rest = process.communicate(timeout=60)
    finally:
        process.kill()
    err += rest
    assert process.returncode == 130, err[-2000:]
    assert "Traceback" not in err and "fatal" not in err, err[-2000:]
    last = [line for line in err.replace("\r", "\n").splitlines() if line.strip()][-1]
    assert last.startswith("drivetrain-fmu run: interrupted at t = "), last


def test_ctrl_c_writes_the_rows_computed_so_far(tmp_path, fmu_dir):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "drivetrain_fmu.cli", "run", "fan_F2", "--stop", "40", "--fmus",
                                str(fmu_dir)],
                               cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        err = ""
        while "co-simulation:" not in err:
            err += process.stderr.read(1)
        time.sleep(2.0)
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130
    # into a file of its own: fan_F2.csv and .png stay those of the last complete run
    # (tests/cli/test_results_kept.py)
    rows = (tmp_path / "results" / "run" / "fan_F2" / "fan_F2.interrupted.csv").read_text().splitlines()
    assert rows[0].startswith("time [s],") and 10 < len(rows) < 400001


def cli_without(hidden, *argv, cwd, timeout=120):
    """`cli` in a Python where the packages ``hidden`` cannot be imported (as after a plain
    `pip install drivetrain-fmu`, without extras)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = (f"import runpy, sys\nfor name in {list(hidden)!r}:\n    sys.modules[name] = None\n"
            f"sys.argv = ['drivetrain-fmu'] + {list(map(str, argv))!r}\n"
            f"runpy.run_module('drivetrain_fmu.cli', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("hidden, argv, message", [
    (["matplotlib"], ["run", "z3", "--stop", "0.01"], "plots need matplotlib: pip install 'drivetrain-fmu[cli]'"),
    (["tqdm"], ["run", "z3", "--stop", "0.01"], "progress bars need tqdm: pip install 'drivetrain-fmu[cli]'"),
    (["scipy"], ["compare", "r1", "--duration", "0.5"], "need scipy: pip install 'drivetrain-fmu[cli]'"),
    (["scipy"], ["report", "z3", "--steps", "1e-2"], "need scipy: pip install 'drivetrain-fmu[cli]'"),
    (["distributed"], ["study", "breakaway", "--mu_s", "0.3"],
     "studies need dask[distributed]: pip install 'drivetrain-fmu[study]'"),
])
def test_a_missing_optional_package_names_the_extra_in_one_line_before_any_work(fmu_dir, tmp_path, hidden, argv,
                                                                                 message):
    """Plots, progress bars, references and studies need the [cli] or [study] extra.  Without
    it a command ran (simulated, built, started a cluster) and then ended in
    `ImportError: ...` (or `ModuleNotFoundError`) without saying what to install; now it
    stops first, in one line naming the extra, exit status 2, writing nothing."""
    result = cli_without(hidden, *argv, "--fmus", fmu_dir, "--out", tmp_path / "results", cwd=tmp_path) \
        if argv[0] != "compare" else cli_without(hidden, *argv, "--out", tmp_path / "results", cwd=tmp_path)
    assert_refused(result, 2, f"drivetrain-fmu {argv[0]}: error: ", message, max_lines=1)
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("argv", [["list"], ["list", "--markdown"]])
def test_output_to_a_closed_pipe_ends_quietly(tmp_path, argv):
    """`drivetrain-fmu list | head -3`: the reader goes away before the command has written
    everything.  It ended in `drivetrain-fmu list: error: BrokenPipeError: [Errno 32] Broken
    pipe`, exit status 1; now it ends quietly with the status of a command SIGPIPE stopped,
    141.  Here the reader's end is closed before the command writes a byte."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    read_end, write_end = os.pipe()
    process = subprocess.Popen([sys.executable, "-m", "drivetrain_fmu.cli", *argv], cwd=tmp_path, env=env,
                               stdout=write_end, stderr=subprocess.PIPE, text=True)
    os.close(write_end)
    os.close(read_end)
    _, err = process.communicate(timeout=120)
    assert err == "" and process.returncode == 141, (process.returncode, err)


def test_ssp_runs_without_tqdm_with_no_progress_bar(fmu_dir, tmp_path):
    """`ssp` needs tqdm only for its progress bar: on a plain install (no [cli] extra) it
    refused to run (`progress bars need tqdm`, exit status 2); now it runs, without a bar."""
    archive = _write_ssp(tmp_path / "z3.ssp", Z3, fmu_dir, ["DualClutch", "Shaft", "Inertia", "TorqueTable",
                                                             "ForceTable"])
    code, out, err = cli_without(["tqdm"], "ssp", archive, "--stop", "0.02", "--out", tmp_path / "results",
                                 cwd=tmp_path)
    assert code == 0, err
    assert "co-simulation:" not in err and "Traceback" not in err, err
    rows = (tmp_path / "results" / "ssp" / "z3" / "z3.csv").read_text().splitlines()
    assert rows[0].startswith("time [s],") and len(rows) == 1 + 11
