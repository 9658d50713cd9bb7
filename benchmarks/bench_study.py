"""Co-simulations per second: serial loop, dask LocalCluster and LocalPool with 1 and 2 workers.

    python benchmarks/bench_study.py [--runs 24]

The same sweep (Clutch held at rest under a torque, 0.5 s at 0.1 ms, one co-simulation
per point in fresh FMU instances) five ways, side by side in one run; ratios to the
serial loop.  This machine has the cores os.cpu_count() reports.  The start-up (the
cluster or pool started and a first task, which unpacks and loads the FMU in every
worker, done) is timed apart from the sweep: a study pays it once.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from drivetrain_fmu import build_fmus  # noqa: E402
from drivetrain_fmu.systems import study  # noqa: E402


@contextmanager
def dask_workers(n: int):
    """A dask client of a LocalCluster of ``n`` single-threaded worker processes (what a
    study ran on before the LocalPool; a ``--scheduler`` cluster is used the same way)."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        yield client


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=24)
    args = parser.parse_args(argv)
    sweep = study.Study("clutch_hold", "max_slip_amplitude", grid={"tau": list(np.linspace(180, 330, args.runs))},
                        fixed={"stop": 0.5, "step": 1e-4})
    with tempfile.TemporaryDirectory() as tmp:
        build_fmus.build_all(Path(tmp), ["Clutch"])
        # the workers first: a LocalPool forked after this process has loaded the FMU would
        # start with it loaded, which a study's (the command's process loads none) does not
        rates, startups, swept = {}, {}, {}
        for kind, start_workers in (("dask LocalCluster", dask_workers), ("LocalPool", study.LocalPool)):
            for n in (1, 2):
                label = f"{kind}, {n} worker{'s' if n > 1 else ''}"
                start = time.perf_counter()
                with start_workers(n) as workers:
                    study._run_tasks(workers, tmp, sweep, [{"tau": 100.0}] * n)   # a first task per worker
                    startups[label] = time.perf_counter() - start
                    start = time.perf_counter()
                    rows = study.run_grid(sweep, tmp, workers, progress=False)
                    rates[label] = args.runs / (time.perf_counter() - start)
                swept[label] = [r[sweep.metric] for r in rows]
        start = time.perf_counter()
        serial = [study.evaluate(tmp, sweep.system, {**sweep.fixed, **p}, sweep.metric) for p in sweep.points()]
        rates = {"serial loop": args.runs / (time.perf_counter() - start), **rates}
        assert all(values == serial for values in swept.values())
    print(f"{args.runs} co-simulations (Clutch, 5000 steps each), cores: {os.cpu_count()}")
    for label, rate in rates.items():
        startup = f"   start-up {startups[label]:5.2f} s" if label in startups else ""
        print(f"  {label:28s} {rate:6.2f} runs/s   ratio {rate / rates['serial loop']:.2f}{startup}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
