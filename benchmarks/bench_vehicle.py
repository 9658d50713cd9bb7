"""Vehicle step cost at two communication steps, and stick/slip events per second.

    python benchmarks/bench_vehicle.py [--seconds 1.0]

Measured side by side in one run (shared machine: the ratios are what count):
fmi2DoStep of the Vehicle FMU through fmpy while rolling (F1 steady state: 200 N.m on
the front wheel) at h = 1e-3 s and 1e-4 s, as cost per step and per simulated second;
and the event-driven solver on ice with a fluctuating drive (the stick/slip test of
tests/elements/test_vehicle_fmu.py): events located and resolved by the LCP per wall-clock second.

    python benchmarks/bench_vehicle.py --instructions [--old-revision bff277c] [--steps 200]

counts CPU instructions instead (valgrind's callgrind, benchmarks/bench_clutch.py's method:
a process with N steps minus the same process with one step, divided by N - 1), for the
old revision's FMUs (built by its own build_fmus.py, benchmarks/compare_builds.py) and the
working tree's, side by side in one run: per 1 ms fmi2DoStep of the Vehicle FMU alone
(rolling at 5 m/s with 200 N.m on the front wheel: the F1 steady state, all four contacts
in their usual modes, slip stuck and rolling sliding) and per 1 ms communication step of
the whole fan_F2 system (systems.catalog.fan.simulate: Engine, two Shafts, Clutch, Vehicle and the
master's gets and sets, the signals of systems.catalog.fan.RECORD recorded, so the Vehicle's
feedthrough outputs are computed every step).  Each counting process loads the element
code from its FMUs only (checked), so the two builds never mix.
"""
from __future__ import annotations

import argparse
import math
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from drivetrain_fmu.systems.master import Instance  # noqa: E402

ROLLING = {"v_start": 5.0, "w_wheel_f_start": 20.0, "w_wheel_r_start": 20.0}
STEP = 1e-3
CASES = ("Vehicle", "fan_F2")
LABELS = {"Vehicle": "Vehicle fmi2DoStep (5 m/s, 200 N.m front)",
          "fan_F2": "fan_F2 system step (5 FMUs, master, 16 signals recorded)"}


def drive(case: str, fmu_dir: Path, steps: int) -> None:
    """The counted process: ``steps`` communication steps of 1 ms of a case.  No element
    code is imported here: the FMUs load their own (checked at the end)."""
    if case == "Vehicle":
        vehicle = Instance(fmu_dir / "Vehicle.fmu", "vehicle", ROLLING)
        vehicle.set("tau_wheel_f", 200.0)
        for k in range(steps):
            vehicle.do_step(k * STEP, STEP)
        vehicle.free()
    else:       # the arguments systems.catalog.fan.simulate passes, prepared by instructions()
        from drivetrain_fmu.systems.ssp import run_system

        spec = pickle.loads((fmu_dir.parent / "fan_F2.pickle").read_bytes())
        run_system(fmu_dir, spec["components"], spec["connections"], steps * STEP, STEP, spec["record"])
    code = Path(sys.modules["drivetrain_fmu.fmus"].__file__).resolve()
    unpacked = [Path(folder).resolve() for _, folder in Instance._unpacked.values()]
    for folder in unpacked:
        shutil.rmtree(folder, ignore_errors=True)
    if not any(folder in code.parents for folder in unpacked):
        raise RuntimeError(f"the FMUs ran element code from {code}, not their own")


def count(case: str, fmu_dir: Path, steps: int) -> int:
    """Instructions callgrind counts for one driving process."""
    env = dict(os.environ, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1")
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                           __file__, "--drive", case, "--fmu-dir", str(fmu_dir), "--steps", str(steps)],
                          capture_output=True, text=True, env=env, cwd=fmu_dir)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"{case} with {fmu_dir}: no instruction count:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def per_step(case: str, fmu_dir: Path, steps: int) -> float:
    return (count(case, fmu_dir, steps) - count(case, fmu_dir, 1)) / (steps - 1)


def fan_f2_spec() -> bytes:
    """fan_F2 at 1 ms as systems.catalog.fan.simulate runs it (the counted processes import no element
    code of the working tree; systems.catalog.fan does, through the parameter tables)."""
    from drivetrain_fmu.systems.catalog import fan

    return pickle.dumps({"components": fan.components("F2", STEP), "connections": fan.connections("F2"),
                         "record": fan.RECORD})


def count_cases(builds: dict, steps: int) -> dict:
    """{case: {label: instructions per 1 ms step}} for every case of CASES and every build
    ({label: FMU folder}), the builds of a case counted side by side (two at a time)."""
    spec = fan_f2_spec()
    for folder in builds.values():
        (folder.parent / "fan_F2.pickle").write_bytes(spec)
    counts = {}
    for case in CASES:
        with ThreadPoolExecutor(2) as pool:
            futures = {label: pool.submit(per_step, case, folder, steps) for label, folder in builds.items()}
        counts[case] = {label: future.result() for label, future in futures.items()}
    return counts


def instructions(old_revision: str, steps: int) -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (Debian: apt-get install valgrind)")
    sys.path.insert(0, str(Path(__file__).parent))
    import compare_builds

    with tempfile.TemporaryDirectory(prefix="bench_vehicle_") as tmp:
        tmp = Path(tmp)
        builds = {"old": compare_builds.build_revision(old_revision, tmp / "old"),
                  "new": compare_builds.build(ROOT, tmp / "new" / "fmus", "working tree")}
        print(f"CPU instructions per 1 ms communication step (callgrind, {steps} steps minus 1 step, "
              f"divided by {steps - 1}); old = {old_revision}, new = the working tree")
        print(f"  {'case':58s} {'old':>12s} {'new':>12s} {'new/old':>8s}")
        for case, counts in count_cases(builds, steps).items():
            old, new = counts["old"], counts["new"]
            print(f"  {LABELS[case]:58s} {old:12.0f} {new:12.0f} {new / old:8.3f}", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="simulated time per case")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions per 1 ms step, old revision vs working tree (callgrind)")
    parser.add_argument("--old-revision", default="bff277c", help="revision counted as old (with --instructions)")
    parser.add_argument("--steps", type=int, default=200, help="steps per counted case (with --instructions)")
    parser.add_argument("--drive", choices=CASES, help=argparse.SUPPRESS)
    parser.add_argument("--fmu-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.drive:
        sys.path.remove(str(ROOT))       # the FMUs' own element code only
        drive(args.drive, args.fmu_dir, args.steps)
        return 0
    if args.instructions:
        instructions(args.old_revision, args.steps)
        return 0
    from drivetrain_fmu import build_fmus
    from drivetrain_fmu.solvers.vehicle import PlanarVehicle, VehicleParams

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
