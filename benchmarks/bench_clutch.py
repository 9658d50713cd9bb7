"""Clutch doStep cost through fmpy vs a trivial pythonfmu FMU, and Z3 wall time.

    python benchmarks/bench_clutch.py [--steps 15000]
    python benchmarks/bench_clutch.py --instructions

Everything is measured side by side in this one run (the machine is shared and noisy:
only the ratios mean something).  Targets from the clutch issue: Clutch doStep at most
2x the trivial FMU; 10 s of Z3 under 1 s (the seed's Simulink run: 0.98 s).

``--instructions`` counts CPU instructions instead of seconds (valgrind's callgrind, one
process per case: the count of a run with the doSteps minus the count of the same run
without them), which does not depend on the load of the machine: two runs of the same
code agree to about 1 %.  It takes a few minutes.

The FMUs run in this process (and in each counting process) share its element modules
(module names are process-global): as the ``drivetrain-fmu`` command does, it imports them
compiled from the build's cache (compiled_modules.prefer_compiled), so the figures are those
of the compiled code every FMU carries.

``--instructions --old-revision REV`` counts REV's code side by side with the working
tree's, case by case in the same run: REV's tree (``git archive``) builds its own FMUs and
runs the cases with its own element code and master (this script, copied into that tree,
drives them), so the master's share of a Z3 step is compared too.  The working tree's
counting processes import its element code, which must be the code its FMUs were built
from at the start: do not edit fmus/ or solvers/ while it runs.
"""
from __future__ import annotations

import argparse
import os
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

import numpy as np  # noqa: E402

# the element code of this process and of the FMUs it runs, which share its modules, as
# drivetrain-fmu imports it: compiled where the build has cached it; not in a revision from
# before that (old_tree's copy of this script), whose code runs as it ran then (an installed
# compiled_modules, of another revision, is not this tree's)
if (ROOT / "compiled_modules.py").is_file():
    from drivetrain_fmu import compiled_modules  # noqa: E402

    compiled_modules.prefer_compiled()

from drivetrain_fmu import build_fmus  # noqa: E402
from drivetrain_fmu.systems.catalog import z3  # noqa: E402
from drivetrain_fmu.systems.catalog.reference import Reference, error_report, z3_reference  # noqa: E402
from drivetrain_fmu.systems.master import Instance  # noqa: E402

TRIVIAL = '''
import ctypes
ctypes.pythonapi.Py_IncRef(ctypes.py_object(globals()))
from pythonfmu import Fmi2Slave, Fmi2Causality, Real


class Trivial(Fmi2Slave):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.u = 0.0
        self.y = 0.0
        self.register_variable(Real("u", causality=Fmi2Causality.input))
        self.register_variable(Real("y", causality=Fmi2Causality.output))

    def do_step(self, t, h):
        self.y += self.u * h
        return True
'''


SPEEDS = ["clutch.w_1", "clutch.w_2", "clutch.w_3", "vehicle.w"]
TORQUES = ["clutch.tau_fric_a", "clutch.tau_fric_b"]


def build_trivial(folder: Path) -> Path:
    from pythonfmu import FmuBuilder

    script = folder / "trivial_fmu.py"
    script.write_text(TRIVIAL)
    return FmuBuilder.build_FMU(script, dest=folder)


# label -> (FMU, parameters and inputs set in initialization mode, clamp force f_n set
# before stepping: None keeps the default); the inputs are held for the whole run
CASES = {
    "trivial pythonfmu FMU": ("Trivial", {}, None),
    "Clutch locked (stuck phase)": ("Clutch", {"w_1_start": 0.0}, None),
    # a small clamp force: stays slipping for the whole run
    "Clutch slipping, Coulomb (analytic)": ("Clutch", {}, 1.0),
    "Clutch slipping, Stribeck (ODE path)": ("Clutch", {"w_stribeck": 10.0, "alpha_stribeck": 0.6}, 1.0),
    # Z3's clutch law (Stribeck): clutch a clamped and locked, clutch b open (free)
    "DualClutch a locked, b open": ("DualClutch", {"f_n_a": 6000.0, "tau_2": 400.0}, None),
    # clutch a slips at a small clamp force for the whole run (its Stribeck law: ODE path)
    "DualClutch a slipping (Stribeck), b open": ("DualClutch", {"w_2_start": 100.0, "f_n_a": 1.0}, None),
}
Z3_STEP = 2e-3


def build(folder: Path) -> None:
    elements = {"Clutch", "DualClutch"} | {c.element for c in z3.SYSTEM.components.values()}
    build_fmus.build_all(folder, sorted(elements))
    build_trivial(folder)


def instance(folder: Path, label: str) -> Instance:
    fmu, parameters, f_n = CASES[label]
    inst = Instance(folder / f"{fmu}.fmu", fmu.lower(), parameters)
    if f_n is not None:
        inst.set("f_n", f_n)
    return inst


def time_steps(instance: Instance, n: int, h: float) -> float:
    """Seconds per doStep (inputs held), best of three blocks."""
    best = float("inf")
    t = 0.0
    for _ in range(3):
        start = time.perf_counter()
        for k in range(n // 3):
            instance.do_step(t, h)
            t += h
        best = min(best, (time.perf_counter() - start) / (n // 3))
    return best


def drive(folder: Path, case: str, steps: int) -> None:
    """The process whose instructions are counted: ``steps`` doSteps of a case at 1e-4 s,
    or, for case 'z3', Z3 at 2 ms up to steps * 2 ms."""
    if case == "z3":
        z3.simulate(folder, step=Z3_STEP, stop=steps * Z3_STEP)
        return
    inst = instance(folder, case)
    for k in range(steps):
        inst.do_step(k * 1e-4, 1e-4)


def count_instructions(folder: Path, case: str, steps: int, driver: str = __file__, options=()) -> int:
    """Instructions callgrind counts for the whole driver process (``driver --drive``: this
    script, or another that takes the same arguments, and ``options`` of that driver's)."""
    return callgrind([sys.executable, driver, "--drive", case, "--fmu-dir", str(folder), "--steps", str(steps),
                      *options],
                     dict(os.environ, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1"))  # no idle BLAS threads


def callgrind(command: list[str], env: dict, options=()) -> int:
    """Instructions valgrind's callgrind counts for the whole process ``command`` (with
    ``options`` such as --toggle-collect=FUNCTION: within what they select)."""
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *options, *command],
                         capture_output=True, text=True, env=env, check=True)
    found = re.search(r"Collected : (\d+)", out.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{out.stderr[-2000:]}")
    return int(found.group(1))


def per_step(folder: Path, case: str, steps: int, base_steps: int = 0, driver: str = __file__, options=()) -> float:
    return (count_instructions(folder, case, steps, driver, options)
            - count_instructions(folder, case, base_steps, driver, options)) / (steps - base_steps)


def instructions(folder: Path, steps: int) -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (Debian: apt-get install valgrind)")
    print(f"CPU instructions per doStep through fmpy (callgrind, {steps} steps at 1e-4 s, minus a run "
          "without them)")
    base = None
    for label in CASES:
        count = per_step(folder, label, steps)
        base = base or count
        print(f"  {label:40s} {count:9.0f}   ratio {count / base:5.2f}")
    z3_steps = int(round(z3.STOP / Z3_STEP))
    count = per_step(folder, "z3", z3_steps, base_steps=1)
    print(f"  Z3 at {Z3_STEP * 1e3:g} ms: {count:9.0f} per communication step (7 FMUs: 7 doSteps and "
          f"their gets and sets) = {count / base:5.1f} trivial doSteps")


def archive(revision: str, source: Path) -> Path:
    """REV's source tree (git archive of this repository) unpacked into the new folder ``source``."""
    source.mkdir(parents=True)
    archived = subprocess.run(["git", "-C", str(ROOT), "archive", revision], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(source)], input=archived, check=True)
    return source


def old_tree(revision: str, folder: Path) -> tuple[Path, Path]:
    """REV's source tree (:func:`archive`) with this script copied into its benchmarks/ as the
    counting driver (which imports REV's tree as drivetrain_fmu), and REV's FMUs built there
    by that driver (REV's own build_fmus): (driver, FMU folder)."""
    source = archive(revision, folder / "source")
    driver = source / "benchmarks" / "bench_clutch_driver.py"
    shutil.copyfile(__file__, driver)
    # the driver's folder, first on its sys.path, holds REV's tree as drivetrain_fmu: an editable
    # install of this tree would otherwise give REV's driver this tree's code
    (driver.parent / "drivetrain_fmu").symlink_to(source.resolve(), target_is_directory=True)
    fmus = folder / "fmus"
    subprocess.run([sys.executable, str(driver), "--build-only", "--fmu-dir", str(fmus)], check=True,
                   capture_output=True)
    return driver, fmus


def instructions_side_by_side(folder: Path, steps: int, revision: str) -> None:
    """Every case counted for REV's code and the working tree's, both counts of a case
    running at once (the machine's two cores)."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (Debian: apt-get install valgrind)")
    driver, old_fmus = old_tree(revision, folder / "old")
    builds = {"old": (old_fmus, str(driver)), "new": (folder, __file__)}
    print(f"CPU instructions per doStep through fmpy (callgrind, {steps} steps at 1e-4 s, minus a run "
          f"without them); {revision} (old) and the working tree (new), each with its own FMUs, element code "
          "and master")
    print(f"  {'case':44s} {'old':>10s} {'new':>10s} {'new/old':>8s} {'old/trivial':>12s} {'new/trivial':>12s}")
    z3_steps = int(round(z3.STOP / Z3_STEP))
    base = {}
    for label in [*CASES, "z3"]:
        n, first = (z3_steps, 1) if label == "z3" else (steps, 0)
        with ThreadPoolExecutor(2) as pool:
            futures = {b: pool.submit(per_step, fmus, label, n, first, drive) for b, (fmus, drive) in builds.items()}
        counts = {b: f.result() for b, f in futures.items()}
        base = base or counts
        name = f"Z3 at {Z3_STEP * 1e3:g} ms, one communication step (7 FMUs)" if label == "z3" else label
        print(f"  {name:44s} {counts['old']:10.0f} {counts['new']:10.0f} {counts['new'] / counts['old']:8.2f} "
              f"{counts['old'] / base['old']:12.2f} {counts['new'] / base['new']:12.2f}", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=None,
                        help="doSteps per case (default 15000 timed, 2000 with --instructions)")
    parser.add_argument("--instructions", action="store_true", help="count instructions instead of seconds")
    parser.add_argument("--old-revision", metavar="REV",
                        help="with --instructions: count REV's code side by side with the working tree's")
    parser.add_argument("--drive", help=argparse.SUPPRESS)
    parser.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--fmu-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.drive:
        drive(args.fmu_dir, args.drive, args.steps)
        return 0
    if args.build_only:
        build(args.fmu_dir)
        return 0
    if args.old_revision and not args.instructions:
        parser.error("--old-revision needs --instructions")
    h = 1e-4
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        build(tmp)
        if args.instructions and args.old_revision:
            instructions_side_by_side(tmp, args.steps or 2000, args.old_revision)
            return 0
        if args.instructions:
            instructions(tmp, args.steps or 2000)
            return 0
        steps = args.steps or 15000
        print(f"doStep cost through fmpy, h = {h} s, {steps} steps per case (best of 3 blocks)")
        base = None
        for label in CASES:
            cost = time_steps(instance(tmp, label), steps, h)
            base = base or cost
            print(f"  {label:40s} {cost * 1e6:8.1f} us   ratio {cost / base:5.2f}")
        print("10 s of Z3 (DualClutch, 2 Shafts, Inertia, 3 input Tables; explicit co-simulation "
              "via fmpy), largest RMS error / range against the monolithic reference:")
        reference = z3_reference(np.arange(int(round(z3.STOP / 1e-3)) + 1) * 1e-3)
        z3.simulate(tmp, step=Z3_STEP, stop=Z3_STEP)   # extracts Z3's FMUs, which the timed runs reuse
        for step in (1e-3, 2e-3, 5e-3):
            start = time.perf_counter()
            result = z3.simulate(tmp, step=step)
            wall = time.perf_counter() - start
            every = int(round(step / 1e-3))
            errors = error_report(result, Reference(reference.time[::every], {
                key: values[::every] for key, values in reference.signals.items()}), SPEEDS + TORQUES)
            worst = {group: max(errors[key][1] for key in keys)
                     for group, keys in (("speeds", SPEEDS), ("friction torques", TORQUES))}
            print(f"  step {step:g} s: {wall:6.2f} s wall = {wall / 10.0:5.3f} x real time, "
                  f"{wall / 0.98:5.2f} x the seed's Simulink 0.98 s; RMS error speeds "
                  f"{worst['speeds']:.2%}, friction torques {worst['friction torques']:.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
