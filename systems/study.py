"""Parameter studies of the documented systems on dask.distributed.

A study is declared, not programmed: a system (a key of ``SYSTEMS``), a metric (a key of
``METRICS``), a grid (parameter -> values, swept as a cartesian product) and fixed
parameters.  Two ways to run it:

* ``run_grid``: one co-simulation per grid point, results as rows {parameters..., metric};
* ``threshold_search``: for every grid point, a k-section search on one more parameter for
  the value where the metric first exceeds a level (e.g. Fan et al.'s judder-onset torque,
  323.47 N.m for T_S = 400, T_C = 320 N.m).  All grid points advance together, one round
  of co-simulations at a time; a round tries as many values inside each bracket as the
  workers run at once (bisection when there are no more workers than grid points).

Every task is one co-simulation in a fresh set of FMU instances (``evaluate``: nothing
is shared between tasks but the FMUs a worker process has unpacked) recording only the
signals its metric reads, and a task whose worker dies runs again.  Without a scheduler
address the tasks run in a ``LocalPool``: one single-threaded process per core (pythonfmu
holds the GIL) forked from this one, no cluster to start; with one, on that dask cluster.
Results are written as CSV rows and plotted (heat map of a 2-D grid, or the threshold curve).
"""
from __future__ import annotations

import csv
import itertools
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .catalog import fan
from .master import Instance, run
from .optional import require


# ------------------------------------------------------------------ systems and metrics
# A system is called as system(fmu_dir, record, **parameters): ``record`` lists the signals
# ('inst.var') the co-simulation records, those its metric reads.

def _clutch_hold(fmu_dir, record, tau=150.0, mu_s=0.4, stop=0.1, step=1e-3):
    """Z2 bodies locked at rest (T_s = mu_s r n f_n = 250 mu_s N.m), constant torque on
    body 1: the clutch breaks away iff tau J_2 / (J_1 + J_2) > T_s (analytic threshold)."""
    clutch = Instance(Path(fmu_dir) / "Clutch.fmu", "clutch",
                      {"w_1_start": 0.0, "w_2_start": 0.0, "locked_start": True, "mu_s": mu_s, "mu_k": 0.8 * mu_s})
    try:
        return run({"clutch": clutch}, [], stop, step, record, inputs=lambda t: {"clutch.tau_1": tau})
    finally:
        clutch.free()


def _fan(fmu_dir, record, T0=323.47, T_S=400.0, T_C=320.0, stop=4.5, step=1e-3, case="F2", **road):
    """Fan et al.'s drivetrain (systems.catalog.fan) with the engine torque, the clutch and
    optionally the road friction (mu_s_road, mu_k_road) overridden."""
    return fan.simulate(fmu_dir, case, step=step, stop=stop, record=record, T0=T0, T_S=T_S, T_C=T_C, **road)


SYSTEMS = {"clutch_hold": _clutch_hold, "fan": _fan}


def _steady(result, fraction=2.0 / 3.0):
    return result.time >= fraction * result.time[-1]


def reads(*signals):
    """Declare the signals ('inst.var') a metric reads: its co-simulations record only
    those: every recorded signal costs FMI gets at every communication point, and
    recording fewer leaves a run's values bit for bit as they were (tests/cli/test_study.py)."""
    def declare(metric):
        metric.signals = list(signals)
        return metric
    return declare


@reads("clutch.locked")
def breakaway(result) -> float:
    """1 if the clutch unlocked at any communication point, else 0."""
    return float(not np.all(result["clutch.locked"]))


@reads("clutch.locked")
def stick_slip_cycles_per_second(result) -> float:
    """Clutch lock events per second in the last third of the run (the steady state)."""
    window = _steady(result)
    locked = result["clutch.locked"][window].astype(int)
    span = result.time[window][-1] - result.time[window][0]
    return np.count_nonzero(np.diff(locked) == 1) / span


@reads("vehicle.stick_f")
def driven_tire_rolls(result) -> float:
    """1 if the front tire (the driven wheel of every F case in systems.catalog.fan) sticks, i.e.
    rolls without slip, at every communication point of the last third of the run, else 0
    (stick-slip or spinning)."""
    return float(np.all(result["vehicle.stick_f"][_steady(result)]))


@reads("clutch.w_slip")
def max_slip_amplitude(result) -> float:
    """Largest |clutch slip speed| in the last third of the run [rad/s]."""
    return float(np.max(np.abs(result["clutch.w_slip"][_steady(result)])))


@reads("vehicle.ax")
def pitch_acceleration_amplitude(result) -> float:
    """Peak-to-peak body longitudinal acceleration in the last third [m/s2]."""
    return float(np.ptp(result["vehicle.ax"][_steady(result)]))


METRICS = {f.__name__: f for f in (breakaway, stick_slip_cycles_per_second, driven_tire_rolls,
                                     max_slip_amplitude, pitch_acceleration_amplitude)}


def evaluate(fmu_dir, system: str, params: dict, metric: str) -> float:
    """One task: one co-simulation in fresh FMU instances recording the signals the metric
    reads, reduced to the metric."""
    measure = METRICS[metric]
    return float(measure(SYSTEMS[system](fmu_dir, measure.signals, **params)))


# ------------------------------------------------------------------ studies
@dataclass(frozen=True)
class Study:
    system: str
    metric: str
    grid: dict = field(default_factory=dict)
    fixed: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.system not in SYSTEMS:
            raise ValueError(f"system {self.system!r} is not one of {sorted(SYSTEMS)}")
        if self.metric not in METRICS:
            raise ValueError(f"metric {self.metric!r} is not one of {sorted(METRICS)}")
        for name, values in self.grid.items():
            if not len(values):
                raise ValueError(f"grid parameter {name!r} has no values")

    def points(self) -> list[dict]:
        names = list(self.grid)
        return [dict(zip(names, combo)) for combo in itertools.product(*(self.grid[n] for n in names))]


class LocalPool:
    """Tasks on this machine without a cluster: ``size`` single-threaded worker processes
    (default: one per core) forked from this one, so they start at once with the modules
    this process has imported (a dask LocalCluster starts a scheduler, then workers that
    import dask and this project again).  Use it as a context manager, or ``close`` it."""

    def __init__(self, size: int | None = None):
        if size is not None and not (isinstance(size, int) and size >= 1):
            raise ValueError(f"size = {size!r} must be an integer >= 1 (or None: one worker per core)")
        self.size = size or os.cpu_count() or 1
        self._executor = self._forked()

    def _forked(self) -> ProcessPoolExecutor:
        executor = ProcessPoolExecutor(self.size, mp_context=multiprocessing.get_context("fork"))
        # a first task forks every worker now, while this process runs no other thread
        # (a progress bar's monitor thread, started later, is not copied into them)
        executor.submit(os.getpid).result()
        return executor

    def run(self, function, argument_sets: list[tuple], done=None, retries: int = 3) -> list:
        """``function(*arguments)`` for every tuple of ``argument_sets`` on the workers; the
        results in their order.  ``done()`` is called once per finished task.  When a
        worker dies (the pool then fails every unfinished task) the pool is forked again
        and the unfinished tasks run again, ``retries`` times at most; an exception a task
        raises is raised here."""
        results, unfinished, restarts = [None] * len(argument_sets), set(range(len(argument_sets))), 0
        while unfinished:
            futures = {self._executor.submit(function, *argument_sets[i]): i for i in sorted(unfinished)}

            def keep(future):
                index = futures[future]
                if index in unfinished:
                    results[index] = future.result()
                    unfinished.discard(index)
                    if done is not None:
                        done()
            try:
                for future in as_completed(futures):
                    keep(future)
            except BrokenProcessPool:
                if restarts == retries:
                    raise
                restarts += 1
                for future in futures:          # those finished before the worker died count
                    if future.done() and future.exception() is None:
                        keep(future)
                self._executor.shutdown(wait=True)
                self._executor = self._forked()
        return results

    def close(self):
        self._executor.shutdown(wait=True, cancel_futures=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def study_workers(scheduler: str | None = None):
    """Where a study's tasks run: a dask client of the scheduler at ``scheduler``
    ('tcp://HOST:PORT'), or, without one, a LocalPool of this machine's cores.  Close it
    after the study (``close()``)."""
    if scheduler:
        return require("distributed", "studies need", "study").Client(scheduler)
    return LocalPool()


def _tasks_at_once(workers) -> int:
    """How many tasks ``workers`` (a LocalPool or a dask client) run at once."""
    if isinstance(workers, LocalPool):
        return workers.size
    return sum(workers.nthreads().values())


def _progress_bar(study: Study, total: int, progress: bool):
    """One progress bar for a whole study (``total`` co-simulations) on stderr, or None."""
    if not progress:
        return None
    tqdm = require("tqdm", "progress bars need", "study").tqdm
    return tqdm(total=total, desc=f"{study.system} {study.metric}", unit="run")


def _run_tasks(workers, fmu_dir, study: Study, parameter_sets, bar=None, retries=3):
    """One task per parameter set on ``workers`` (a LocalPool or a dask client), a task
    whose worker dies run again (``retries`` times at most); results in submission order.
    ``bar`` (the study's one progress bar) advances by one per finished task."""
    argument_sets = [(str(fmu_dir), study.system, {**study.fixed, **params}, study.metric)
                     for params in parameter_sets]
    done = None if bar is None else (lambda: bar.update(1))
    if isinstance(workers, LocalPool):
        return workers.run(evaluate, argument_sets, done, retries)
    from distributed import as_completed as completed_on_dask

    futures = [workers.submit(evaluate, *arguments, pure=False, retries=retries) for arguments in argument_sets]
    index = {f.key: i for i, f in enumerate(futures)}
    results = [None] * len(futures)
    for future in completed_on_dask(futures):
        results[index[future.key]] = future.result()
        if done is not None:
            done()
    return results


def run_grid(study: Study, fmu_dir, workers, progress: bool = True) -> list[dict]:
    """One co-simulation per grid point on ``workers`` (a LocalPool or a dask client): rows
    {parameters..., metric}.  One progress bar (one step per co-simulation) on stderr unless
    ``progress`` is False."""
    points = study.points()
    bar = _progress_bar(study, len(points), progress)
    try:
        values = _run_tasks(workers, fmu_dir, study, points, bar)
    finally:
        if bar is not None:
            bar.close()
    return [{**p, study.metric: v} for p, v in zip(points, values)]


def search_plan(workers: int, points: int, width: float, tolerance: float) -> tuple[int, int]:
    """(sections, rounds) of a k-section search for ``points`` grid points on ``workers``
    workers: each round tries ``sections - 1`` equally spaced values inside every bracket,
    all in one batch, as many as the workers run at once (at least one: bisection), and
    cuts every bracket into ``sections`` equal parts; ``rounds`` is the fewest rounds that
    bring a bracket of ``width`` to ``tolerance``.  One grid point on 2 workers: trisection,
    a bracket 3x narrower per round (log 3 / log 2 = 1.58x fewer rounds than bisection; on
    idle workers a round of two co-simulations takes the time of one)."""
    sections = 1 + max(1, workers // points)
    rounds = 0
    while width / sections ** rounds > tolerance:
        rounds += 1
    return sections, rounds


def _sections(low: float, high: float, sections: int) -> list[float]:
    """The ``sections - 1`` values cutting [low, high] into equal parts, in increasing order
    (bisection's one value is (low + high) / 2)."""
    return [((sections - j) * low + j * high) / sections for j in range(1, sections)]


def threshold_search(study: Study, fmu_dir, workers, parameter: str, low: float, high: float,
                     level: float, tolerance: float, progress: bool = True) -> list[dict]:
    """For every grid point the smallest value of ``parameter`` in [low, high] (to
    ``tolerance``) at which the metric exceeds ``level`` (it must not at ``low`` and must
    at ``high``: checked first, with a message naming the point), by a k-section search on
    ``workers`` (a LocalPool or a dask client; ``search_plan``): a round keeps, of each
    bracket, the part between the last value tried at which the metric does not exceed the
    level and the first at which it does.  Rows {grid
    parameters..., PARAMETER_threshold: the bracket's upper end, where the metric exceeds
    the level, PARAMETER_below: its lower end, where it does not}.  One progress bar for the
    whole search (2 + rounds x (sections - 1) co-simulations per grid point) on stderr
    unless ``progress`` is False."""
    if not (low < high and tolerance > 0):
        raise ValueError(f"need low < high and tolerance > 0, got low = {low!r}, high = {high!r}, "
                         f"tolerance = {tolerance!r}")
    points = study.points()
    sections, rounds = search_plan(_tasks_at_once(workers), len(points), high - low, tolerance)
    bar = _progress_bar(study, (2 + rounds * (sections - 1)) * len(points), progress)
    try:
        ends = _run_tasks(workers, fmu_dir, study, [{**p, parameter: x} for p in points for x in (low, high)], bar)
        brackets = []
        for k, p in enumerate(points):
            below, above = ends[2 * k], ends[2 * k + 1]
            if not (below <= level < above):
                raise ValueError(f"at {p} the metric is {below!r} at {parameter} = {low!r} and {above!r} at "
                                 f"{parameter} = {high!r}: the level {level!r} is not bracketed")
            brackets.append([low, high])
        for _ in range(rounds):
            tried = [_sections(lo, hi, sections) for lo, hi in brackets]
            values = _run_tasks(workers, fmu_dir, study,
                                [{**p, parameter: x} for p, xs in zip(points, tried) for x in xs], bar)
            for k, (bracket, xs) in enumerate(zip(brackets, tried)):
                found = values[k * (sections - 1):(k + 1) * (sections - 1)]
                first_above = next((j for j, value in enumerate(found) if value > level), len(xs))
                cuts = [bracket[0], *xs, bracket[1]]
                bracket[:] = cuts[first_above:first_above + 2]
    finally:
        if bar is not None:
            bar.close()
    return [{**p, f"{parameter}_threshold": hi, f"{parameter}_below": lo}
            for p, (lo, hi) in zip(points, brackets)]


def write_csv(rows: list[dict], path) -> Path:
    path = Path(path)
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def plot(rows: list[dict], x: str, value: str, path, y: str | None = None, title: str = "",
         labels: dict | None = None, below: str | None = None) -> Path:
    """A heat map of ``value`` over (x, y), or a curve of ``value`` against x.  ``labels``:
    the axis label of a key, words and unit (default: the key); ``below``: the key of the
    other end of a threshold's bracket (``PARAMETER_below``), drawn as the band the
    threshold lies in, with ``labels[below]`` and ``labels[value]`` as legends."""
    require("matplotlib", "plots need", "study").use("Agg")
    import matplotlib.pyplot as plt

    labels = labels or {}
    fig, ax = plt.subplots(figsize=(7, 4.5))
    if y is None:
        ordered = sorted(rows, key=lambda r: r[x])
        xs = [r[x] for r in ordered]
        legend = labels.get(value + " legend", labels.get(value, value))
        ax.plot(xs, [r[value] for r in ordered], "o-", lw=2.0, label=legend)
        if below is not None:
            ax.plot(xs, [r[below] for r in ordered], "v--", lw=1.2, label=labels.get(below, below))
            ax.fill_between(xs, [r[below] for r in ordered], [r[value] for r in ordered], alpha=0.25,
                            label="the threshold lies in this band")
            ax.legend(fontsize=8, loc="best")
        ax.set_ylabel(labels.get(value, value))
        ax.grid(alpha=0.3)
    else:
        xs, ys = sorted({r[x] for r in rows}), sorted({r[y] for r in rows})
        grid = np.full((len(ys), len(xs)), np.nan)
        for r in rows:
            grid[ys.index(r[y]), xs.index(r[x])] = r[value]
        image = ax.imshow(grid, origin="lower", aspect="auto")
        ax.set_xticks(range(len(xs)), [f"{v:g}" for v in xs])
        ax.set_yticks(range(len(ys)), [f"{v:g}" for v in ys])
        if grid.size <= 64:                     # a small grid: its values written in
            for (row, col), v in np.ndenumerate(grid):
                if np.isfinite(v):
                    ax.text(col, row, f"{v:.4g}", ha="center", va="center", fontsize=8,
                            bbox=dict(facecolor="w", alpha=0.8, lw=0))
        fig.colorbar(image, ax=ax, label=labels.get(value, value))
        ax.set_ylabel(labels.get(y, y))
    ax.set_xlabel(labels.get(x, x))
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)
