"""Parameter studies on dask.distributed (systems.study)."""
import os
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from drivetrain_fmu.systems import study
from tests.conftest import ROOT


def test_threshold_search_finds_the_analytic_breakaway_torque(fmu_dir):
    """Clutch Z2 bodies held at rest: the clutch breaks away iff tau J2/(J1 + J2) > T_s,
    T_s = 250 mu_s N.m, so tau* = 250 mu_s 0.48 / 0.28 (128.57 and 171.43 N.m).  The
    bisection on a LocalCluster brackets each threshold to its 0.01 N.m tolerance."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        rows = study.threshold_search(study.Study("clutch_hold", "breakaway", grid={"mu_s": [0.3, 0.4]}),
                                      fmu_dir, client, "tau", 50.0, 400.0, level=0.5, tolerance=0.01,
                                      progress=False)
    for row in rows:
        exact = 250 * row["mu_s"] * 0.48 / 0.28
        assert row["tau_below"] <= exact <= row["tau_threshold"]
        assert row["tau_threshold"] - row["tau_below"] <= 0.01


def test_unbracketed_threshold_is_refused_naming_the_point(fmu_dir):
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        with pytest.raises(ValueError, match="mu_s': 0.4.*not bracketed"):
            study.threshold_search(study.Study("clutch_hold", "breakaway", grid={"mu_s": [0.4]}),
                                   fmu_dir, client, "tau", 50.0, 100.0, level=0.5, tolerance=1.0, progress=False)


def test_a_study_shows_one_progress_bar_counting_every_co_simulation(fmu_dir, capsys):
    """`study` drew one tqdm bar per bisection round (and one for the bracket ends): 18 for
    `study breakaway`.  Now one bar on stderr for the whole search, its total the number of
    co-simulations: 2 grid points x (2 ends + 2 halvings of [50, 400] to 100 N.m) = 8."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        capsys.readouterr()
        study.threshold_search(study.Study("clutch_hold", "breakaway", grid={"mu_s": [0.3, 0.4]}),
                               fmu_dir, client, "tau", 50.0, 400.0, level=0.5, tolerance=100.0)
        err = capsys.readouterr().err
    bars = [line for line in err.replace("\r", "\n").splitlines() if "clutch_hold breakaway:" in line]
    assert bars, err
    assert sum("  0%|" in line for line in bars) == 1, err        # one bar started
    assert bars[-1].split("|")[-1].lstrip().startswith("8/8 "), bars[-1]   # and it counted 8 runs


def test_two_workers_search_one_point_in_rounds_of_two_to_the_same_threshold(fmu_dir, monkeypatch):
    """One grid point on two workers: bisection ran one co-simulation per round, one worker
    idle, ceil(log2(350 / 0.01)) = 16 rounds after the two ends.  Now each round tries two
    values inside the bracket at once and keeps the third that holds the threshold
    (trisection): ceil(log3(35000)) = 10 rounds of two.  Both searches bracket the analytic
    breakaway torque tau* = 250 mu_s 0.48 / 0.28 (clutch_hold's physics) to the tolerance:
    one worker still bisects."""
    from distributed import Client, LocalCluster

    batches, run_tasks = [], study._run_tasks

    def counted(client, fmu_dir, spec, parameter_sets, *args, **kwargs):
        batches.append(len(parameter_sets))
        return run_tasks(client, fmu_dir, spec, parameter_sets, *args, **kwargs)

    monkeypatch.setattr(study, "_run_tasks", counted)
    exact = 250 * 0.4 * 0.48 / 0.28
    brackets = {}
    for workers in (1, 2):
        batches.clear()
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) \
                as cluster, Client(cluster) as client:
            row, = study.threshold_search(study.Study("clutch_hold", "breakaway", grid={"mu_s": [0.4]}), fmu_dir,
                                          client, "tau", 50.0, 400.0, level=0.5, tolerance=0.01, progress=False)
        brackets[workers] = (row["tau_below"], row["tau_threshold"])
        assert batches == [2] + [workers] * {1: 16, 2: 10}[workers], (workers, batches)
    for below, threshold in brackets.values():
        assert below <= exact <= threshold and threshold - below <= 0.01


def test_k_section_brackets_the_first_value_above_the_level_of_a_step_metric():
    """search_plan and the sections of a bracket, on paper: 1 worker or as many grid points
    as workers: bisection (the old midpoint (low + high) / 2 exactly); 2 workers, 1 point:
    trisection; the rounds are the fewest that bring the width to the tolerance."""
    assert study.search_plan(1, 1, 350.0, 0.01) == (2, 16)
    assert study.search_plan(2, 2, 350.0, 0.01) == (2, 16)
    assert study.search_plan(2, 3, 350.0, 0.01) == (2, 16)
    assert study.search_plan(2, 1, 350.0, 0.01) == (3, 10)      # 350 / 3**10 = 0.0059 <= 0.01 < 350 / 3**9
    assert study.search_plan(2, 1, 23.47, 0.5) == (3, 4)        # judder-onset: 2 + 8 runs in 5 batches of 2
    assert study.search_plan(2, 1, 1.0, 1.0) == (3, 0)
    assert study._sections(300.0, 323.47, 2) == [0.5 * (300.0 + 323.47)]
    assert study._sections(0.0, 3.0, 3) == [1.0, 2.0]


def _fail_once(marker: str, *arguments):
    """A study task (study.evaluate) whose worker process dies (SIGKILL) the first time any
    worker runs it with this marker file absent."""
    import pathlib
    import signal

    if not pathlib.Path(marker).exists():
        pathlib.Path(marker).touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return study.evaluate(*arguments)


def _clutch_sweep(points: int) -> list[tuple]:
    """study.evaluate's arguments for a sweep of the held clutch's torque (0.5 s at 0.1 ms)."""
    sweep = study.Study("clutch_hold", "max_slip_amplitude", grid={"tau": list(np.linspace(180.0, 330.0, points))},
                        fixed={"stop": 0.5, "step": 1e-4})
    return [(sweep.system, {**sweep.fixed, **p}, sweep.metric) for p in sweep.points()]


def test_local_pool_survives_a_killed_worker(fmu_dir, tmp_path):
    """A study without --scheduler runs on a LocalPool (forked worker processes, no dask
    cluster).  A 6-point sweep in which one task kills its worker (SIGKILL): the pool is
    forked again and every result arrives once, equal bit for bit to the serial run's."""
    arguments = [(str(tmp_path / "killed"), str(fmu_dir), *task) for task in _clutch_sweep(6)]
    finished = []
    with study.LocalPool(2) as pool:
        results = pool.run(_fail_once, arguments, done=lambda: finished.append(1), retries=1)
    assert (tmp_path / "killed").exists()                        # a worker was killed
    assert len(finished) == len(arguments)
    serial = [study.evaluate(str(fmu_dir), *task) for task in _clutch_sweep(6)]
    assert results == serial and len(set(results)) > 1


def test_local_pool_workers_remove_the_fmus_they_unpacked(fmu_dir, tmp_path, monkeypatch):
    """Forked workers end without running atexit handlers, where systems.master removed the
    FMUs it unpacked (12 MB each, in the temporary folder): they left them there.  A
    LocalPool's workers, closed, leave none.  (A worker killed, and those its pool then
    ends, still leave theirs.)  The FMU is a fresh copy: no process has unpacked it yet."""
    import shutil
    import tempfile

    fresh, temporary = tmp_path / "fmus", tmp_path / "temp"
    fresh.mkdir()
    temporary.mkdir()
    shutil.copy(fmu_dir / "Clutch.fmu", fresh)
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))     # where the workers' fmpy unpacks
    with study.LocalPool(2) as pool:
        pool.run(study.evaluate, [(str(fresh), *task) for task in _clutch_sweep(4)])
    assert list(temporary.iterdir()) == []


def test_recording_only_what_the_metric_reads_leaves_the_run_unchanged(fmu_dir):
    """A study's co-simulation records only the signals its metric reads (clutch.locked for
    judder): the same F2 run (judder at 323.47 N.m, 1.5 s at the study's 1 ms step)
    recording the sixteen signals of systems.catalog.fan.RECORD gives that signal bit for bit and
    the same metric.  (Reading an output is an fmi2Get: it changes no state.)"""
    from drivetrain_fmu.systems.catalog import fan

    case = dict(step=1e-3, stop=1.5, T0=323.47, T_S=400.0, T_C=320.0)
    metric = study.METRICS["stick_slip_cycles_per_second"]
    assert metric.signals == ["clutch.locked"]
    alone = fan.simulate(fmu_dir, "F2", record=metric.signals, **case)
    full = fan.simulate(fmu_dir, "F2", **case)
    assert list(alone.signals) == ["clutch.locked"]
    assert np.array_equal(alone.time, full.time)
    assert np.array_equal(alone["clutch.locked"], full["clutch.locked"])
    assert metric(alone) == metric(full) > 0


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sweep_on_a_real_cluster_survives_a_killed_worker(fmu_dir):
    """A dask scheduler and two single-threaded workers as separate processes on
    127.0.0.1; a 16-point sweep (each point one co-simulation in fresh FMU instances);
    one worker is killed (SIGKILL) once 4 results are in.  Every result arrives exactly
    once and equals the serial run bit for bit."""
    from distributed import Client

    port = _free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    scheduler = subprocess.Popen(dask + ["--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", f"tcp://127.0.0.1:{port}",
                                 "--nthreads", "1", "--no-nanny", "--no-dashboard", "--name", f"w{i}"],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for i in range(2)]
    sweep = study.Study("clutch_hold", "max_slip_amplitude", grid={"tau": list(np.linspace(180.0, 330.0, 16))},
                        fixed={"stop": 0.5, "step": 1e-4})
    try:
        with Client(f"tcp://127.0.0.1:{port}", timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
            futures = [client.submit(study.evaluate, str(fmu_dir), sweep.system, {**sweep.fixed, **p}, sweep.metric,
                                     pure=False, retries=3) for p in sweep.points()]
            killed = threading.Event()

            def kill_when_four_are_done():
                while sum(f.done() for f in futures) < 4:
                    time.sleep(0.02)
                workers[0].kill()
                killed.set()

            threading.Thread(target=kill_when_four_are_done, daemon=True).start()
            results = [f.result(timeout=300) for f in futures]
            assert killed.wait(timeout=60)
            assert sum(f.done() for f in futures) == len(futures)
            assert len(client.scheduler_info()["workers"]) == 1
    finally:
        for process in workers + [scheduler]:
            process.kill()
            process.wait()
    serial = [study.evaluate(fmu_dir, sweep.system, {**sweep.fixed, **p}, sweep.metric) for p in sweep.points()]
    assert results == serial
    assert len(set(results)) > 1        # the sweep does vary: slips grow with the torque


def test_driven_tire_rolls_separates_the_two_sides_of_the_f3_critical_torque(fmu_dir):
    """The metric of `study tire-slip-onset` on F3 (ice), 3 s runs: at -162 N.m the
    stick-slip transient ends at 1.15 s and the tire rolls through the last third (1);
    at the published -168.48 N.m the mean drive torque exceeds the kinetic traction
    torque and the tire spins (0)."""
    rolls = {torque: study.evaluate(fmu_dir, "fan", {"case": "F3", "stop": 3.0, "T0": torque}, "driven_tire_rolls")
             for torque in (-162.0, -168.48)}
    assert rolls == {-162.0: 1.0, -168.48: 0.0}
