"""Z3 as seven FMUs (systems.master) against Z3 as one system FMU (fmpy), side by side.

    python benchmarks/bench_composite.py [--stop 10]
    python benchmarks/bench_composite.py --instructions
    python benchmarks/bench_composite.py --multirate [--stop 4.5]
    python benchmarks/bench_composite.py --iterations-table

Both runs: 10 s of Z3 at its 2 ms step, recording the same 15 signals (systems.catalog.z3.RECORD).
The seven element FMUs run under ``systems.catalog.z3.simulate`` (the master's prepared ctypes
transfers: 7 doSteps and 14 gets/sets per step); the system FMU
(``build_fmus.build_system_fmu("z3")``) runs under ``fmpy.simulate_fmu`` (one doStep and
one get per type per step).  The results are checked equal (the system FMU runs the same
element code in the master's order) before anything is timed.  The system FMU's timed and
counted runs are an fmpy script of their own (benchmarks/fmpy_host.py), which imports nothing
of this project: there, as in any host, the FMU runs the compiled modules it carries
(compiled_modules.py).  The FMUs this process runs (the master's seven FMUs, the FMU2Slave
loop) share its element modules, imported compiled from the build's cache as the
``drivetrain-fmu`` command imports them (compiled_modules.prefer_compiled).

Wall time: best of ``--repeat`` runs each (the machine is shared: only the ratio means
something).  ``--instructions`` counts CPU instructions with callgrind instead (one
process per case: a run of N steps minus a run of 1 step, divided by N - 1; the method of
benchmarks/bench_clutch.py).  Issue 20's target: the system FMU at most 1/3 of the
seven-FMU run's instructions; goal 0.1 s of wall time.

``--multirate``: Fan F2 (systems/catalog/ssd/fan_F2.ssd, 4.5 s) against its monolithic reference
(systems.catalog.reference.fan_reference) on the 1 ms grid, RMS and max error / range of engine.w,
clutch.w_1 and vehicle.w_wheel_f and the wall and CPU time of each run, one markdown row
each: the system FMU under fmpy.simulate_fmu at a 1 ms host step with (a) a uniform
internal step of 0.05 ms, (b) multi-rate, the vehicle at 1 ms and the rest at 0.05 ms,
(d) a uniform 0.1 ms; the five element FMUs under systems.master (systems.ssp.run_system
with F2's components and connections) recording the same three signals, sampled on the
1 ms grid: (c) uniform 0.1 ms, (e) multi-rate, the vehicle at 1 ms over a 0.1 ms base
step, (f) the same over 0.05 ms.  ``--iterations-table``: Z3 (10 s) as a system FMU at its 2 ms step with
0, 1, 2 iterations (systems.master.run's), its shafts' torques step-mean (the file's
T_comm) and sampled (T_comm = 0), error against systems.catalog.reference.z3_reference.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import numpy as np  # noqa: E402

from drivetrain_fmu import compiled_modules  # noqa: E402

# the element code of this process (the seven FMUs under the master, the FMU2Slave loop) as
# drivetrain-fmu imports it: compiled where the build has cached it
compiled_modules.prefer_compiled()

from drivetrain_fmu import build_fmus  # noqa: E402
from drivetrain_fmu.systems.catalog import z3  # noqa: E402

STEP = z3.SYSTEM.step
CASES = {"master": "7 element FMUs, systems.master",
         "composite": "one system FMU, fmpy.simulate_fmu",
         "composite_loop": "one system FMU, FMU2Slave loop"}
#: an fmpy script that imports nothing of this project: the FMU runs its compiled modules there
FMPY_HOST = ROOT / "benchmarks" / "fmpy_host.py"


def host(*arguments: str) -> str:
    """What benchmarks/fmpy_host.py prints, run with ``arguments`` in a process of its own."""
    command = [sys.executable, str(FMPY_HOST), *arguments]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tempfile.gettempdir())
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def host_run(fmu: Path, stop: float, step: float, repeat: int = 1, save: Path | None = None,
             cpu: bool = False) -> float:
    """Best wall time of ``repeat`` runs of ``fmu`` by fmpy.simulate_fmu (every output at every
    step) in a process of its own (benchmarks/fmpy_host.py), or with ``cpu`` the CPU time of
    that run; ``save``: its values (.npz)."""
    printed = host(str(fmu), "--stop", repr(stop), "--step", repr(step), "--repeat", str(repeat),
                   *(["--save", str(save)] if save else []))
    return float(printed.split("(CPU ")[1].split()[0]) if cpu else float(printed.split()[0])


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
        from drivetrain_fmu.systems.master import Instance

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
    for case, label in CASES.items():       # the system FMU under fmpy: in a process of its own
        counts[case] = (per_step(folder, "z3", steps, base_steps=1, driver=str(FMPY_HOST)) if case == "composite"
                        else per_step(folder, case, steps, base_steps=1, driver=__file__))
        print(f"  {label:40s} {counts[case]:10.0f}")
    for case in ("composite", "composite_loop"):
        print(f"  ratio seven FMUs / {CASES[case]}: {counts['master'] / counts[case]:.2f} (target >= 3)")


FAN_KEYS = ["engine.w", "clutch.w_1", "vehicle.w_wheel_f"]
#: (label, internal step, rates) of the Fan F2 system FMUs (host step 1 ms)
FAN_CASES = [("(a) system FMU, uniform 0.05 ms", 5e-5, {}),
             ("(b) system FMU, vehicle 1 ms, rest 0.05 ms", 5e-5, {"vehicle": 1e-3}),
             ("(d) system FMU, uniform 0.1 ms", 1e-4, {})]
#: (label, base step, rates) of the five element FMUs under systems.master
FIVE_FMU_CASES = [("(c) five FMUs, systems.master, uniform 0.1 ms", 1e-4, {}),
                  ("(e) five FMUs, systems.master, vehicle 1 ms, rest 0.1 ms", 1e-4, {"vehicle": 1e-3}),
                  ("(f) five FMUs, systems.master, vehicle 1 ms, rest 0.05 ms", 5e-5, {"vehicle": 1e-3})]


def _header(first: str, keys) -> None:
    print(f"| {first} | " + " | ".join(keys) + " | wall | CPU |")
    print("|---" * (len(keys) + 3) + "|", flush=True)


def _row(label, errors, times, stop):
    """One markdown row: the errors (RMS / range, max / range in brackets), then wall and
    this process's CPU time (``times`` = (wall, cpu) in s) with their ratio to real time."""
    cells = [f"{errors[key][1] * 100:.3f} % ({errors[key][0] * 100:.3f} %)" for key in errors]
    cells += [f"{seconds:.2f} s ({seconds / stop:.2f} x real time)" for seconds in times]
    print(f"| {label} | " + " | ".join(cells) + " |", flush=True)


class _Clock:
    """Wall and CPU time (this process's) of a ``with`` block: ``.times`` = (wall, cpu)."""

    def __enter__(self):
        self._start = (time.perf_counter(), time.process_time())
        return self

    def __exit__(self, *exc):
        self.times = (time.perf_counter() - self._start[0], time.process_time() - self._start[1])


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def multirate(stop: float) -> None:
    """The Fan F2 table of docs/composite-fmu.md (``--multirate``)."""
    from fmpy import simulate_fmu

    from drivetrain_fmu.systems.catalog import fan
    from drivetrain_fmu.systems.catalog.reference import error_report, fan_reference
    from drivetrain_fmu.systems.ssp import run_system

    host = 1e-3
    grid = np.arange(int(round(stop / host)) + 1) * host
    print(f"Fan F2, {stop:g} s, host step {host * 1e3:g} ms: RMS error / range (max error / range) against "
          f"systems.catalog.reference.fan_reference on the {host * 1e3:g} ms grid, wall and CPU time; {_load()}", flush=True)
    reference = fan_reference("F2", grid)
    with tempfile.TemporaryDirectory(prefix="bench_multirate_") as tmp:
        folder = Path(tmp)
        fmus = [build_fmus.build_system_fmu(ROOT / "systems" / "catalog" / "ssd" / "fan_F2.ssd", folder / str(i),
                                            internal_step=internal, rates=rates)
                for i, (_, internal, rates) in enumerate(FAN_CASES)]
        build_fmus.build_all(folder, sorted({c.element for c in fan.system("F2").components.values()}))
        _header("run", FAN_KEYS)
        for (label, _, _), fmu in zip(FAN_CASES, fmus):
            with _Clock() as clock:
                result = simulate_fmu(str(fmu), stop_time=stop, step_size=host, output_interval=host,
                                      output=FAN_KEYS)
            _row(label, error_report(result, reference, FAN_KEYS), clock.times, stop)
        # one step first: the element FMUs are extracted once per process (Instance's cache), not in row (c)
        run_system(folder, fan.components("F2", host), fan.connections("F2"), host, host, FAN_KEYS)
        for label, base, rates in FIVE_FMU_CASES:     # recording what the system FMUs output
            with _Clock() as clock:
                result = run_system(folder, fan.components("F2", base), fan.connections("F2"), stop, base,
                                    FAN_KEYS, rates=rates)
            every = int(round(host / base))
            _row(label, error_report({k: result[k][::every] for k in FAN_KEYS}, reference, FAN_KEYS), clock.times,
                 stop)
    print(_load(), flush=True)


def iterations_table(stop: float) -> None:
    """Z3 at 2 ms with 0, 1, 2 iterations inside the system FMU (``--iterations-table``)."""
    from fmpy import simulate_fmu

    from drivetrain_fmu.systems.catalog.reference import error_report, z3_reference

    keys = ["clutch.w_1", "clutch.w_2", "clutch.w_3", "vehicle.w", "clutch.tau_fric_a", "clutch.tau_fric_b"]
    grid = np.arange(int(round(stop / STEP)) + 1) * STEP
    reference = z3_reference(grid)
    print(f"Z3, {stop:g} s, host and internal step {STEP * 1e3:g} ms: RMS error / range (max error / range) "
          "against systems.catalog.reference.z3_reference", flush=True)
    from drivetrain_fmu.systems import ssp

    system = ssp.load_system("z3")
    sampled = replace(system, components={name: ssp.Component(c.element, {**c.parameters, "T_comm": 0.0})
                                          if "T_comm" in c.parameters else c
                                          for name, c in system.components.items()})
    with tempfile.TemporaryDirectory(prefix="bench_iterations_") as tmp:
        _header("shaft torques, iterations", keys)
        for torques, spec in (("step-mean", system), ("sampled", sampled)):
            for iterations in (0, 1, 2):
                fmu = build_fmus.build_system_fmu(spec, Path(tmp) / f"{torques}{iterations}", outputs=keys,
                                                  iterations=iterations)
                with _Clock() as clock:
                    result = simulate_fmu(str(fmu), stop_time=stop, step_size=STEP, output_interval=STEP,
                                          output=keys)
                _row(f"{torques} shaft torques, iterations {iterations}", error_report(result, reference, keys),
                     clock.times, stop)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stop", type=float, help="simulated time in s (default 10; --multirate: 4.5)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per case (best is printed)")
    parser.add_argument("--instructions", action="store_true", help="count instructions (callgrind) as well")
    parser.add_argument("--multirate", action="store_true",
                        help="Fan F2: uniform, multi-rate and separate FMUs against the reference (default stop 4.5 s)")
    parser.add_argument("--iterations-table", action="store_true",
                        help="Z3 at 2 ms with 0, 1, 2 iterations inside the system FMU against the reference")
    parser.add_argument("--drive", help=argparse.SUPPRESS)
    parser.add_argument("--fmu-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.drive:
        drive(args.fmu_dir, args.drive, args.steps)
        return 0
    if args.multirate:
        multirate(4.5 if args.stop is None else args.stop)
        return 0
    if args.iterations_table:
        iterations_table(z3.STOP if args.stop is None else args.stop)
        return 0
    args.stop = z3.STOP if args.stop is None else args.stop
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
            if case == "composite":
                best = host_run(folder / "z3.fmu", args.stop, STEP, args.repeat)
            else:
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
