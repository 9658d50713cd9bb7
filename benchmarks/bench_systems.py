"""Wall time of the documented drivetrains, against real time and the monolithic reference.

    python benchmarks/bench_systems.py [--f2-seconds 1.0]

Side by side in one run: 10 s of Z3 by co-simulation at its default step (2 ms, from
systems/catalog/ssd/z3.ssd) and at 1 ms (step-mean shafts) and its monolithic scipy reference on
the same 1 ms grid; F2 (Engine, shafts, Clutch, Vehicle) at its default step (0.1 ms:
the judder's phase needs it, see tests/cosim/test_reference.py) and at 1 ms for --f2-seconds,
and its monolithic form (Fan's LCP formulation) on a 1 ms grid.  The bar of the issue:
the seed's Simulink run of its DCT, 10 s in 0.98 s.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from drivetrain_fmu import build_fmus  # noqa: E402
from drivetrain_fmu.systems.catalog import fan, z3  # noqa: E402
from drivetrain_fmu.systems.catalog.reference import fan_reference, z3_reference  # noqa: E402


def wall(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--f2-seconds", type=float, default=1.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        build_fmus.build_all(Path(tmp), ["DualClutch", "Shaft", "Inertia", "Engine", "Clutch", "Vehicle", "Table"])
        reference = wall(lambda: z3_reference(np.arange(10001) * 1e-3))
        f2_step = fan.system("F2").step
        rows = [(f"Z3 co-simulation, {z3.SYSTEM.step * 1e3:g} ms (default)", wall(lambda: z3.simulate(tmp)), 10.0),
                ("Z3 co-simulation, 1 ms", wall(lambda: z3.simulate(tmp, step=1e-3)), 10.0),
                ("Z3 monolithic reference (scipy DOP853, 1 ms grid)", reference, 10.0),
                (f"F2 co-simulation, {f2_step * 1e3:g} ms (default), {args.f2_seconds:g} s",
                 wall(lambda: fan.simulate(tmp, "F2", stop=args.f2_seconds)), args.f2_seconds),
                (f"F2 co-simulation, 1 ms, {args.f2_seconds:g} s",
                 wall(lambda: fan.simulate(tmp, "F2", step=1e-3, stop=args.f2_seconds)), args.f2_seconds)]
        f2_reference = wall(lambda: fan_reference("F2", np.arange(int(round(args.f2_seconds / 1e-3)) + 1) * 1e-3))
        rows.append((f"F2 monolithic (PoweredVehicle, LCP), {args.f2_seconds:g} s", f2_reference, args.f2_seconds))
    print(f"  {'run':52s} {'wall s':>8s} {'x real time':>12s} {'x own reference':>16s} {'x Simulink 0.98 s/10 s':>22s}")
    own = {"Z3": reference, "F2": f2_reference}
    for label, seconds, simulated in rows:
        mine = own[label[:2]] / (10.0 if label.startswith("Z3") else args.f2_seconds) * simulated
        print(f"  {label:52s} {seconds:8.2f} {seconds / simulated:12.3f} {seconds / mine:16.2f} "
              f"{seconds / simulated / 0.098:22.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
