"""Parameter studies of the documented systems on dask.distributed.

A study is declared, not programmed: a system (a key of ``SYSTEMS``), a metric (a key of
``METRICS``), a grid (parameter -> values, swept as a cartesian product) and fixed
parameters.  Two ways to run it:

* ``run_grid``: one co-simulation per grid point, results as rows {parameters..., metric};
* ``threshold_search``: for every grid point, bisection on one more parameter for the
  value where the metric first exceeds a level (e.g. Fan et al.'s judder-onset torque,
  323.47 N.m for T_S = 400, T_C = 320 N.m).  All grid points advance together, one round
  of co-simulations per halving.

Every task is one co-simulation in a fresh set of FMU instances (``evaluate``: nothing
is shared between tasks) submitted with retries, so a task whose worker dies runs again
elsewhere.  Without a scheduler address a LocalCluster sized to the machine is started
(one single-threaded worker process per core: pythonfmu holds the GIL).  Results are
written as CSV rows and plotted (heat map of a 2-D grid, or the threshold curve).
"""
from __future__ import annotations

import csv
import itertools
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .optional import require


# ------------------------------------------------------------------ systems and metrics
def _clutch_hold(fmu_dir, tau=150.0, mu_s=0.4, stop=0.1, step=1e-3):
    """Z2 bodies locked at rest (T_s = mu_s r n f_n = 250 mu_s N.m), constant torque on
    body 1: the clutch breaks away iff tau J_2 / (J_1 + J_2) > T_s (analytic threshold)."""
    from .master import Instance, run

    clutch = Instance(Path(fmu_dir) / "Clutch.fmu", "clutch",
                      {"w_1_start": 0.0, "w_2_start": 0.0, "locked_start": True, "mu_s": mu_s, "mu_k": 0.8 * mu_s})
    try:
        return run({"clutch": clutch}, [], stop, step, ["clutch.locked", "clutch.w_slip"],
                   inputs=lambda t: {"clutch.tau_1": tau})
    finally:
        clutch.free()


def _fan(fmu_dir, T0=323.47, T_S=400.0, T_C=320.0, stop=4.5, step=1e-3, case="F2", **road):
    """Fan et al.'s drivetrain (systems.fan) with the engine torque, the clutch and
    optionally the road friction (mu_s_road, mu_k_road) overridden."""
    from . import fan

    return fan.simulate(fmu_dir, case, step=step, stop=stop, T0=T0, T_S=T_S, T_C=T_C, **road)


SYSTEMS = {"clutch_hold": _clutch_hold, "fan": _fan}


def _steady(result, fraction=2.0 / 3.0):
    return result.time >= fraction * result.time[-1]


def breakaway(result) -> float:
    """1 if the clutch unlocked at any communication point, else 0."""
    return float(not np.all(result["clutch.locked"]))


def stick_slip_cycles_per_second(result) -> float:
    """Clutch lock events per second in the last third of the run (the steady state)."""
    window = _steady(result)
    locked = result["clutch.locked"][window].astype(int)
    span = result.time[window][-1] - result.time[window][0]
    return np.count_nonzero(np.diff(locked) == 1) / span


def driven_tire_rolls(result) -> float:
    """1 if the front tire (the driven wheel of every F case in systems.fan) sticks, i.e.
    rolls without slip, at every communication point of the last third of the run, else 0
    (stick-slip or spinning)."""
    return float(np.all(result["vehicle.stick_f"][_steady(result)]))


def max_slip_amplitude(result) -> float:
    """Largest |clutch slip speed| in the last third of the run [rad/s]."""
    return float(np.max(np.abs(result["clutch.w_slip"][_steady(result)])))


def pitch_acceleration_amplitude(result) -> float:
    """Peak-to-peak body longitudinal acceleration in the last third [m/s2]."""
    return float(np.ptp(result["vehicle.ax"][_steady(result)]))


METRICS = {f.__name__: f for f in (breakaway, stick_slip_cycles_per_second, driven_tire_rolls,
                                     max_slip_amplitude, pitch_acceleration_amplitude)}


def evaluate(fmu_dir, system: str, params: dict, metric: str) -> float:
    """One task: one co-simulation in fresh FMU instances, reduced to the metric."""
    return float(METRICS[metric](SYSTEMS[system](fmu_dir, **params)))


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


def default_client(scheduler: str | None = None):
    """A client of the given scheduler, or of a LocalCluster sized to the machine."""
    distributed = require("distributed", "studies need", "study")
    Client, LocalCluster = distributed.Client, distributed.LocalCluster

    if scheduler:
        return Client(scheduler)
    cluster = LocalCluster(n_workers=os.cpu_count() or 1, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    return Client(cluster)


def _progress_bar(study: Study, total: int, progress: bool):
    """One progress bar for a whole study (``total`` co-simulations) on stderr, or None."""
    if not progress:
        return None
    tqdm = require("tqdm", "progress bars need", "study").tqdm
    return tqdm(total=total, desc=f"{study.system} {study.metric}", unit="run")


def _run_tasks(client, fmu_dir, study: Study, parameter_sets, bar=None, retries=3):
    """Submit one task per parameter set; results in submission order.  ``bar`` (the
    study's one progress bar) advances by one per finished task."""
    from distributed import as_completed

    futures = [client.submit(evaluate, str(fmu_dir), study.system, {**study.fixed, **params}, study.metric,
                             pure=False, retries=retries) for params in parameter_sets]
    index = {f.key: i for i, f in enumerate(futures)}
    results = [None] * len(futures)
    for future in as_completed(futures):
        results[index[future.key]] = future.result()
        if bar is not None:
            bar.update(1)
    return results


def run_grid(study: Study, fmu_dir, client, progress: bool = True) -> list[dict]:
    """One co-simulation per grid point: rows {parameters..., metric}.  One progress bar
    (one step per co-simulation) on stderr unless ``progress`` is False."""
    points = study.points()
    bar = _progress_bar(study, len(points), progress)
    try:
        values = _run_tasks(client, fmu_dir, study, points, bar)
    finally:
        if bar is not None:
            bar.close()
    return [{**p, study.metric: v} for p, v in zip(points, values)]


def threshold_search(study: Study, fmu_dir, client, parameter: str, low: float, high: float,
                     level: float, tolerance: float, progress: bool = True) -> list[dict]:
    """For every grid point the smallest value of ``parameter`` in [low, high] (to
    ``tolerance``) at which the metric exceeds ``level`` (it must not at ``low`` and must
    at ``high``: checked first, with a message naming the point).  Rows {grid parameters...,
    PARAMETER_threshold: the bracket's upper end, where the metric exceeds the level,
    PARAMETER_below: its lower end, where it does not}.  One progress bar for the whole
    search (2 + rounds co-simulations per grid point) on stderr unless ``progress`` is False."""
    if not (low < high and tolerance > 0):
        raise ValueError(f"need low < high and tolerance > 0, got low = {low!r}, high = {high!r}, "
                         f"tolerance = {tolerance!r}")
    points = study.points()
    rounds = max(0, math.ceil(math.log2((high - low) / tolerance)))
    bar = _progress_bar(study, (2 + rounds) * len(points), progress)
    try:
        ends = _run_tasks(client, fmu_dir, study, [{**p, parameter: x} for p in points for x in (low, high)], bar)
        brackets = []
        for k, p in enumerate(points):
            below, above = ends[2 * k], ends[2 * k + 1]
            if not (below <= level < above):
                raise ValueError(f"at {p} the metric is {below!r} at {parameter} = {low!r} and {above!r} at "
                                 f"{parameter} = {high!r}: the level {level!r} is not bracketed")
            brackets.append([low, high])
        for _ in range(rounds):
            mids = [0.5 * (lo + hi) for lo, hi in brackets]
            values = _run_tasks(client, fmu_dir, study, [{**p, parameter: m} for p, m in zip(points, mids)], bar)
            for bracket, mid, value in zip(brackets, mids, values):
                bracket[value > level] = mid          # above: new high; else new low
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
