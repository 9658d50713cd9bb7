"""Z3 as seven FMUs (systems.master) against Z3 as one system FMU (fmpy), side by side.

    python benchmarks/bench_composite.py [--stop 10]
    python benchmarks/bench_composite.py --instructions

Both runs: 10 s of Z3 at its 2 ms step, recording the same 15 signals (systems.z3.RECORD).
The seven element FMUs run under ``systems.z3.simulate`` (the master's prepared ctypes
transfers: 7 doSteps and 14 gets/sets per step); the system FMU
(``build_fmus.build_system_fmu("z3")``) runs under ``fmpy.simulate_fmu`` (one doStep and
one get per type per step).  The results are checked equal (the system FMU runs the same
element code in the master's order) before anything is timed.

Wall time: best of ``--repeat`` runs each (the machine is shared: only the ratio means
something).  ``--instructions`` counts CPU instructions with callgrind instead (one
process per case: a run of N steps minus a run of 1 step, divided by N - 1; the method of
benchmarks/bench_clutch.py).  Issue 20's target: the system FMU at most 1/3 of the
seven-FMU run's instructions; goal 0.1 s of wall time.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import numpy as np  # noqa: E402

import build_fmus  # noqa: E402
from systems import z3  # noqa: E402

STEP = z3.SYSTEM.step
CASES = {"master": "7 element FMUs, systems.master",
         "composite": "one system FMU, fmpy.simulate_fmu",
         "composite_loop": "one system FMU, FMU2Slave loop"}


def build(folder: Path) -> Path:
    """The Z3 elements and the Z3 system FMU (recording z3.RECORD) into ``folder``."""
    build_fmus.build_all(folder, sorted({c.element for c in z3.SYSTEM.components.values()}))
    return build_fmus.build_system_fmu("z3", folder, outputs=z3.RECORD)


def run(folder: Path, case: str, stop: float):
    """One run: {signal: array} of z3.RECORD."""
    if case == "master":
        result = z3.simulate(folder, step=STEP, stop=stop)
        return {key: result[key] for key in z3.RECORD}
    if case == "composite_loop":        # fmpy's FMU2Slave, recorded with the master's transfers
        from systems.master import Instance

        inst = Instance(folder / "z3.fmu", "z3")
        kinds = {key: inst.variables[key].type for key in z3.RECORD}
        getters = [(inst.transfer(kind, [inst.vr(k) for k in z3.RECORD if kinds[k] == kind], False),
                    [i for i, k in enumerate(z3.RECORD) if kinds[k] == kind]) for kind in sorted(set(kinds.values()))]
        steps = int(round(stop / STEP))
        values = np.empty((steps + 1, len(z3.RECORD)))
        for n in range(steps + 1):
            if n:
                inst.do_step((n - 1) * STEP, STEP)
            for get, columns in getters:
                values[n, columns] = get()
        inst.free()
        return {key: values[:, i] for i, key in enumerate(z3.RECORD)}
    from fmpy import simulate_fmu

    result = simulate_fmu(str(folder / "z3.fmu"), stop_time=stop, step_size=STEP, output_interval=STEP,
                          output=z3.RECORD)
    return {key: result[key].astype(float) for key in z3.RECORD}


def drive(folder: Path, case: str, steps: int) -> None:
    """The process whose instructions callgrind counts (bench_clutch.count_instructions)."""
    run(folder, case, steps * STEP)


def instructions(folder: Path, stop: float) -> None:
    from bench_clutch import per_step

    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (Debian: apt-get install valgrind)")
    steps = int(round(stop / STEP))
    print(f"CPU instructions per {STEP * 1e3:g} ms Z3 communication step (callgrind, {steps} steps minus 1 step, "
          "one process per run)")
    counts = {}
    for case, label in CASES.items():
        counts[case] = per_step(folder, case, steps, base_steps=1, driver=__file__)
        print(f"  {label:40s} {counts[case]:10.0f}")
    for case in ("composite", "composite_loop"):
        print(f"  ratio seven FMUs / {CASES[case]}: {counts['master'] / counts[case]:.2f} (target >= 3)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stop", type=float, default=z3.STOP, help="simulated time in s (default 10)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per case (best is printed)")
    parser.add_argument("--instructions", action="store_true", help="count instructions (callgrind) as well")
    parser.add_argument("--drive", help=argparse.SUPPRESS)
    parser.add_argument("--fmu-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.drive:
        drive(args.fmu_dir, args.drive, args.steps)
        return 0
    with tempfile.TemporaryDirectory(prefix="bench_composite_") as tmp:
        folder = Path(tmp)
        build(folder)
        reference = run(folder, "master", args.stop)
        worst = max(float(np.max(np.abs(mine[k] - reference[k]))) / (float(np.max(np.abs(reference[k]))) or 1.0)
                    for mine in (run(folder, "composite", args.stop), run(folder, "composite_loop", args.stop))
                    for k in z3.RECORD)
        print(f"Z3, {args.stop:g} s at {STEP * 1e3:g} ms, recording {len(z3.RECORD)} signals; largest difference "
              f"system FMU vs seven FMUs: {worst:.1e} relative")
        walls = {}
        for case, label in CASES.items():
            best = float("inf")
            for _ in range(args.repeat):
                start = time.perf_counter()
                run(folder, case, args.stop)
                best = min(best, time.perf_counter() - start)
            walls[case] = best
            print(f"  {label:40s} {best:6.3f} s wall (best of {args.repeat}) = {best / args.stop:.3f} x real time")
        for case in ("composite", "composite_loop"):
            print(f"  ratio seven FMUs / {CASES[case]}: {walls['master'] / walls[case]:.2f} (wall time; goal for the "
                  f"system FMU: 0.1 s)")
        if args.instructions:
            instructions(folder, args.stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
