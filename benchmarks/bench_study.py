"""Co-simulations per second: serial loop vs dask LocalCluster with 1 and 2 workers.

    python benchmarks/bench_study.py [--runs 24]

The same sweep (Clutch held at rest under a torque, 0.5 s at 0.1 ms, one co-simulation
per point in fresh FMU instances) three ways, side by side in one run; ratios to the
serial loop.  This machine has the cores os.cpu_count() reports; the cluster start-up is
not timed.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import build_fmus  # noqa: E402
from systems import study  # noqa: E402


def main(argv=None) -> int:
    from distributed import Client, LocalCluster

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=24)
    args = parser.parse_args(argv)
    sweep = study.Study("clutch_hold", "max_slip_amplitude", grid={"tau": list(np.linspace(180, 330, args.runs))},
                        fixed={"stop": 0.5, "step": 1e-4})
    with tempfile.TemporaryDirectory() as tmp:
        build_fmus.build_all(Path(tmp), ["Clutch"])
        start = time.perf_counter()
        serial = [study.evaluate(tmp, sweep.system, {**sweep.fixed, **p}, sweep.metric) for p in sweep.points()]
        rates = {"serial loop": args.runs / (time.perf_counter() - start)}
        for n in (1, 2):
            with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                    Client(cluster) as client:
                client.submit(study.evaluate, tmp, sweep.system, {**sweep.fixed, "tau": 100.0}, sweep.metric,
                              pure=False).result()   # warm the workers (FMU code loaded)
                start = time.perf_counter()
                rows = study.run_grid(sweep, tmp, client, progress=False)
                rates[f"dask, {n} worker{'s' if n > 1 else ''}"] = args.runs / (time.perf_counter() - start)
                assert [r[sweep.metric] for r in rows] == serial
    print(f"{args.runs} co-simulations (Clutch, 5000 steps each), cores: {os.cpu_count()}")
    for label, rate in rates.items():
        print(f"  {label:18s} {rate:6.2f} runs/s   ratio {rate / rates['serial loop']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
