"""Vehicle step cost at two communication steps, and stick/slip events per second.

    python benchmarks/bench_vehicle.py [--seconds 1.0]

Measured side by side in one run (shared machine: the ratios are what count):
fmi2DoStep of the Vehicle FMU through fmpy while rolling (F1 steady state: 200 N.m on
the front wheel) at h = 1e-3 s and 1e-4 s, as cost per step and per simulated second;
and the event-driven solver on ice with a fluctuating drive (the stick/slip test of
tests/test_vehicle_fmu.py): events located and resolved by the LCP per wall-clock second.
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import build_fmus  # noqa: E402
from solvers.vehicle import PlanarVehicle, VehicleParams  # noqa: E402
from systems.master import Instance  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="simulated time per case")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        build_fmus.build_all(Path(tmp), ["Vehicle"])
        for h in (1e-3, 1e-4):
            vehicle = Instance(Path(tmp) / "Vehicle.fmu", f"bench{h}",
                               {"v_start": 5.0, "w_wheel_f_start": 20.0, "w_wheel_r_start": 20.0})
            vehicle.set("tau_wheel_f", 200.0)
            n = int(round(min(args.seconds, 2000 * h) / h))
            start = time.perf_counter()
            for k in range(n):
                vehicle.do_step(k * h, h)
            cost = (time.perf_counter() - start) / n
            vehicle.free()
            rows.append((h, cost))
    print("Vehicle fmi2DoStep through fmpy, rolling at 5 m/s with 200 N.m")
    for h, cost in rows:
        print(f"  h = {h:g} s: {cost * 1e6:8.1f} us per step, {cost / h:6.2f} s wall per simulated second "
              f"(ratio to h = 1e-3: {cost / rows[0][1]:.2f} per step)")
    model = PlanarVehicle(VehicleParams(mu_s_road=0.1, mu_k_road=0.07))
    state, h, events = model.initial_state(0.0, 5.0, 20.0, 20.0), 5e-3, 0
    n = int(round(3.0 / h))
    start = time.perf_counter()
    for k in range(n):
        result = model.step(state, 150.0 + 100.0 * math.sin(4 * math.pi * k * h), 0.0, h)
        state, events = result.state, events + result.n_events
    wall = time.perf_counter() - start
    print(f"Ice with fluctuating drive, 3 s at h = {h} s: {events} events in {wall:.2f} s wall = "
          f"{events / wall:.1f} events per second ({wall / n * 1e3:.2f} ms per step)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
