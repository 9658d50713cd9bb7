"""Results do not move: every documented system run with the FMUs of two builds, compared.

    python benchmarks/compare_builds.py --old-revision aebfe7c            (new: the working tree)
    python benchmarks/compare_builds.py --old-fmus DIR --new-fmus DIR [--systems z3 fan_F1]
    python benchmarks/compare_builds.py --old-revision aebfe7c --stop fan_F2=2 --systems fan_F2
    python benchmarks/compare_builds.py --old-revision aebfe7c --instructions --no-systems

``--old-revision REV`` builds REV's FMUs with REV's own build_fmus.py from a ``git archive``
of REV in a temporary folder; ``--new-fmus`` defaults to a build of the working tree
(``build_fmus.py --out`` a temporary folder).

Every system of the catalog (systems/catalog/ssd/*.ssd) is run the way ``drivetrain-fmu run SYSTEM``
runs it: the arguments simulation.cosimulate passes to drivetrain_fmu.systems.ssp.run_system (components
with their parameters at the system's own step, connections, stop time, the recorded
signals) are captured once in this process, then each build's FMUs are run with them by
drivetrain_fmu.systems.ssp.run_system (the project's master) in a process of its own: pythonfmu imports
the element code into the process-global module namespace, so FMUs of two builds cannot
run in one process.  Those processes import no element code of the working tree; each
checks that the element code its FMUs ran is the copy inside the FMUs.

Per system it prints, for every recorded signal, max|new - old| / max|old| over the run
(signals that are zero throughout in the old run: max|new|, marked "abs"), and the largest
of all; the exit status is 1 when one exceeds its tolerance:

* 1e-12 relative (``--tolerance``), the target;
* 1e-10 relative for the Fan systems (``--fan-tolerance``): their Vehicle and clutch
  integrations are adaptive and event-located (to 1e-13 s), so a rounding change (numpy's
  fused multiply-add and LAPACK against our LU and sums) shifts the step sequence, and over
  F2's ~170 judder cycles the differences grow to about 5e-11; the old numpy build moves by
  the same amount against itself when the engine torque T0 changes by one ulp (measured:
  F2 5.4e-11, F3_harmonics 1.9e-11, F1 1.2e-12);
* 1e-11 relative for z3 (``--z3-tolerance``): the damped Inertia (its vehicle, d_ground =
  20 N.m.s/rad) now steps with the exponential-integrator form that stays exact as d -> 0
  (solvers.rigid); its angle, about 1e3 rad, differs from the old terminal-speed form's by
  rounding (ulp 1e-13 rad), and the stiff shafts turn that into torque differences of about
  2e-9 N.m of 600 (measured 3.6e-12 relative);
* a signal that is rounding noise in the old run (max|old| below 1e-9, e.g. vehicle.drift,
  the joint violation of about 1e-13 m) passes when max|new - old| is below 1e-12 absolute
  (``--noise-floor``, SI units): its relative difference means nothing.

``--instructions`` also counts the CPU instructions per doStep of both builds side by side
with benchmarks/bench_clutch.py's callgrind method (bench_clutch.per_step: a run of N
doSteps minus the same run without them), for bench_clutch's cases plus ClutchChain and
Vehicle driven by the constant inputs of tests/hosts/test_self_contained.py.  bench_clutch's
counting process imports build_fmus (hence the working tree's element code) before it loads
an FMU; here that process first imports the build's own copy of the element code (taken
from its FMUs), so each build runs its own code.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ELEMENT_CODE = "element_code"       # in an instruction-count folder: the build's fmus/ and solvers/
#: the element code's packages: drivetrain_fmu.fmus and .solvers, or top-level fmus and
#: solvers in builds before the one import name (issue 32)
ELEMENT_PACKAGES = ("fmus", "solvers")


def element_code_file() -> str:
    """Where the element code this process runs was loaded from (either layout)."""
    module = sys.modules.get("drivetrain_fmu.fmus") or sys.modules["fmus"]
    return module.__file__


# --------------------------------------------------------------------------- builds

def element_code_digest(fmu_dir: Path) -> str:
    """SHA-256 (12 digits) of the fmus/ and solvers/ sources inside the build's Clutch.fmu."""
    digest = hashlib.sha256()
    with zipfile.ZipFile(fmu_dir / "Clutch.fmu") as archive:
        for name in sorted(n for n in archive.namelist()
                           if n.startswith(("resources/fmus/", "resources/solvers/", "resources/drivetrain_fmu/"))
                           and n.endswith(".py")):
            digest.update(name.encode())
            digest.update(archive.read(name))
    return digest.hexdigest()[:12]


def build(source: Path, out: Path, label: str) -> Path:
    """``python build_fmus.py --out out`` in the source tree ``source``.  Another tree than
    this one is imported as ``drivetrain_fmu`` from ``source`` itself (a folder of that name
    linked to it, first on PYTHONPATH): where this tree is installed in editable mode, its
    finder would otherwise give the other tree's build_fmus.py this tree's element code."""
    print(f"building the {label} FMUs: {source}/build_fmus.py --out {out}", flush=True)
    start = time.perf_counter()
    env = dict(os.environ)
    if source.resolve() != ROOT:
        imports = source.parent / "import_root"
        imports.mkdir(exist_ok=True)
        (imports / "drivetrain_fmu").symlink_to(source.resolve(), target_is_directory=True)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(imports), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, str(source / "build_fmus.py"), "--out", str(out)], cwd=source,
                          capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"the {label} build failed:\n{(done.stdout + done.stderr)[-3000:]}")
    print(f"  built {len(list(out.glob('*.fmu')))} FMUs in {time.perf_counter() - start:.0f} s", flush=True)
    return out


def build_revision(revision: str, folder: Path) -> Path:
    """REV's FMUs, built by REV's own build_fmus.py from ``git archive REV``."""
    source = folder / "source"
    source.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
    return build(source, folder / "fmus", f"revision {revision}")


# --------------------------------------------------------------------------- systems

class _Captured(Exception):
    pass


def run_arguments(system: str) -> dict:
    """What ``drivetrain-fmu run SYSTEM`` passes to drivetrain_fmu.systems.ssp.run_system (captured by
    calling simulation.cosimulate with run_system replaced)."""
    sys.path.insert(0, str(ROOT))
    import drivetrain_fmu.systems.ssp
    from drivetrain_fmu.cli import simulation
    from drivetrain_fmu.systems.catalog import fan, r3, z3  # noqa: F401  (their run_system names are replaced too)

    original, captured = drivetrain_fmu.systems.ssp.run_system, {}

    def capture(fmu_dir, components, connections, stop, step, record, progress=False, iterations=0, at_point=None,
                rates=None, output_interval=None):
        captured.update(components=components, connections=connections, stop=stop, step=step,
                        record=list(record), iterations=iterations, rates=rates, output_interval=output_interval)
        raise _Captured

    modules = [m for name, m in list(sys.modules.items())
               if name.startswith(("drivetrain_fmu.systems", "drivetrain_fmu.cli"))
               and getattr(m, "run_system", None) is original]
    for module in modules:
        module.run_system = capture
    try:
        documented = drivetrain_fmu.systems.ssp.load_system(system)
        simulation.cosimulate(documented, Path("unused"), documented.step, progress=False)
        raise RuntimeError(f"{system}: simulation.cosimulate did not call run_system")
    except _Captured:
        return captured
    finally:
        for module in modules:
            module.run_system = original


def child_run(spec_path: Path, out_path: Path) -> None:
    """The process that runs one system with one build's FMUs (see the module docstring)."""
    import numpy as np

    from drivetrain_fmu.systems.master import Instance
    from drivetrain_fmu.systems.ssp import run_system
    loaded = [m for m in sys.modules if m.split(".")[0] in ELEMENT_PACKAGES
              or m.startswith(tuple(f"drivetrain_fmu.{package}" for package in ELEMENT_PACKAGES))]
    if loaded:
        raise RuntimeError(f"element code imported before the FMUs were loaded: {loaded}")
    spec = pickle.loads(spec_path.read_bytes())
    start = time.perf_counter()
    result = run_system(spec["fmu_dir"], spec["components"], spec["connections"], spec["stop"], spec["step"],
                        spec["record"], iterations=spec["iterations"], rates=spec["rates"],
                        output_interval=spec["output_interval"])
    wall = time.perf_counter() - start
    unpacked = [folder for _, folder in Instance._unpacked.values()]
    code = element_code_file()
    np.save(out_path, np.column_stack([result.time] + [np.asarray(result.signals[k], float) for k in spec["record"]]))
    print(json.dumps({"wall": wall, "element_code": code,
                      "from_fmu": any(code.startswith(str(Path(folder)) + os.sep) for folder in unpacked)}))
    for folder in unpacked:
        shutil.rmtree(folder, ignore_errors=True)


def run_both(system: str, arguments: dict, builds: dict[str, Path], work: Path) -> dict:
    """Run ``system`` with every build's FMUs, each in its own process (concurrently):
    label -> (array [time, signals...], wall seconds) or an error text."""
    processes = {}
    for label, fmu_dir in builds.items():
        spec, out = work / f"{system}_{label}.pickle", work / f"{system}_{label}.npy"
        spec.write_bytes(pickle.dumps({**arguments, "fmu_dir": str(fmu_dir)}))
        processes[label] = (subprocess.Popen([sys.executable, __file__, "--child", str(spec), str(out)], cwd=work,
                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), out)
    results = {}
    import numpy as np
    for label, (process, out) in processes.items():
        stdout, stderr = process.communicate()
        if process.returncode != 0:
            results[label] = f"the {label} run failed (exit {process.returncode}): {stderr.strip()[-1500:]}"
            continue
        meta = json.loads(stdout.strip().splitlines()[-1])
        if not meta["from_fmu"]:
            results[label] = f"the {label} run used element code from {meta['element_code']}, not its FMUs"
            continue
        results[label] = (np.load(out), meta["wall"])
        out.unlink()
    return results


def differences(old, new, record: list[str]) -> dict[str, tuple[float, bool, float, float]]:
    """signal -> (max|new - old| / max|old|, relative?, max|new - old|, max|old|); the first is
    max|new - old| (relative? False) when old is zero throughout."""
    import numpy as np

    if old.shape != new.shape or not np.array_equal(old[:, 0], new[:, 0]):
        raise ValueError(f"the runs differ in their time grids: {old.shape} vs {new.shape}")
    table = {}
    for i, key in enumerate(record, start=1):
        a, b = old[:, i], new[:, i]
        both_nan = np.isnan(a) & np.isnan(b)
        gap = np.where(both_nan, 0.0, np.abs(b - a))
        largest = float(np.max(np.where(np.isnan(gap), np.inf, gap)))
        scale = float(np.nanmax(np.abs(a))) if not np.all(np.isnan(a)) else 0.0
        table[key] = (largest / scale if scale > 0 else largest, scale > 0, largest, scale)
    return table


NOISE_LEVEL = 1e-9      # max|old| below which a signal is rounding noise (SI units)


def within(value: float, gap: float, scale: float, tolerance: float, noise_floor: float) -> bool:
    """A signal's difference is acceptable (see the module docstring)."""
    return value <= tolerance or (scale < NOISE_LEVEL and gap <= noise_floor)


def compare_systems(names: list[str], builds: dict[str, Path], stops: dict, tolerance: float,
                    fan_tolerance: float = 1e-10, noise_floor: float = 1e-12, z3_tolerance: float = 1e-11) -> bool:
    """The comparison of every system; True when every difference is within its tolerance."""
    summary, ok = [], True
    with tempfile.TemporaryDirectory(prefix="compare_runs_") as tmp:
        for index, system in enumerate(names, start=1):
            arguments = run_arguments(system)
            step, default_stop = arguments["step"], arguments["stop"]
            wanted = stops.get(system, stops.get(None))
            if wanted is not None:
                arguments["stop"] = round(wanted / step) * step
            n_steps = int(round(arguments["stop"] / step))
            shortened = "" if wanted is None else f" (shortened by --stop from {default_stop:g} s)"
            print(f"[{index}/{len(names)}] {system}: step {step:g} s, stop {arguments['stop']:g} s{shortened}, "
                  f"{n_steps} steps, {len(arguments['record'])} signals ...", flush=True)
            results = run_both(system, arguments, builds, Path(tmp))
            failures = [text for text in results.values() if isinstance(text, str)]
            if failures:
                ok = False
                print("  " + "\n  ".join(failures))
                summary.append((system, step, arguments["stop"], None, None, "run failed", None, ""))
                continue
            (old, old_wall), (new, new_wall) = results["old"], results["new"]
            table = differences(old, new, arguments["record"])
            worst = max(table, key=lambda key: table[key][0])
            print(f"  old {old_wall:.1f} s, new {new_wall:.1f} s; max|new - old| / max|old| per signal:")
            cells = [f"{key:22s} {value:8.2e}{'' if relative else ' abs'}" for key, (value, relative, _, _) in table.items()]
            for row in range(0, len(cells), 3):
                print("    " + "   ".join(cells[row:row + 3]))
            limit = fan_tolerance if system.startswith("fan_") else (z3_tolerance if system == "z3" else tolerance)
            for key, (value, _, gap, scale) in table.items():
                if not within(value, gap, scale, limit, noise_floor):
                    ok = False
                    print(f"  above the tolerance {limit:g}: {key}: max|new - old| {gap:.3e}, max|old| {scale:.3e}")
            print(f"  largest: {table[worst][0]:.3e} ({worst}); tolerance {limit:g}", flush=True)
            summary.append((system, step, arguments["stop"], old_wall, new_wall, worst, table[worst], shortened))
    print(f"\nlargest difference per system (max|new - old| / max|old| over the run; tolerance {tolerance:g}, "
          f"Fan systems {fan_tolerance:g}, z3 {z3_tolerance:g}, rounding-noise signals {noise_floor:g} absolute):")
    print(f"  {'system':22s} {'step [s]':>9s} {'stop [s]':>9s} {'old [s]':>8s} {'new [s]':>8s} {'largest':>10s}  "
          f"{'signal':18s} {'max|new-old|':>12s} {'max|old|':>10s}")
    for system, step, stop, old_wall, new_wall, worst, row, shortened in summary:
        if row is None:
            print(f"  {system:22s} {step:9.2g} {stop:9.4g} {'-':>8s} {'-':>8s} {'-':>10s}  {worst}")
        else:
            print(f"  {system:22s} {step:9.2g} {stop:9.4g} {old_wall:8.1f} {new_wall:8.1f} {row[0]:10.3e}  "
                  f"{worst:18s} {row[2]:12.3e} {row[3]:10.3e}{'  (stop shortened)' if shortened else ''}")
    measured = [row for row in summary if row[6] is not None]
    if measured:
        top = max(measured, key=lambda row: row[6][0])
        print(f"overall largest relative difference: {top[6][0]:.3e} ({top[0]}, {top[5]})")
    if not ok:
        print("FAIL: a difference exceeds its tolerance or a run failed (values above)")
    else:
        print("PASS: every difference is within its tolerance")
    return ok


# --------------------------------------------------------------------------- instructions

def _extra_cases() -> dict:
    """ClutchChain and Vehicle, driven by tests/hosts/test_self_contained.py's constant inputs."""
    sys.path.insert(0, str(ROOT))
    from tests.hosts.test_self_contained import INPUTS

    inputs = {name: ", ".join(f"{k} {v:g}" for k, v in INPUTS[name].items()) for name in ("ClutchChain", "Vehicle")}
    return {f"ClutchChain ({inputs['ClutchChain']})": ("ClutchChain", dict(INPUTS["ClutchChain"]), None),
            f"Vehicle ({inputs['Vehicle']})": ("Vehicle", dict(INPUTS["Vehicle"]), None)}


def _bench_clutch(fmu_dir: Path | None = None):
    """benchmarks/bench_clutch with the extra cases; counting processes run this file's
    --drive.  With ``fmu_dir`` (in a counting process) the build's own element code
    (``fmu_dir/element_code``) is imported first, so bench_clutch's imports reuse it."""
    if fmu_dir is not None:
        sys.path.insert(0, str(fmu_dir / ELEMENT_CODE))
        from drivetrain_fmu import fmus  # noqa: F401  (the build's copy: its fingerprint is the FMUs')
        sys.path.pop(0)
    extra = _extra_cases()
    sys.path.insert(0, str(Path(__file__).parent))
    import bench_clutch

    bench_clutch.CASES.update(extra)
    return bench_clutch


def prepare_counting_folder(fmu_dir: Path, folder: Path, trivial: Path) -> Path:
    """A folder with links to the build's FMUs, bench_clutch's trivial FMU and the build's
    element code unpacked from its Clutch.fmu."""
    folder.mkdir(parents=True)
    for fmu in fmu_dir.glob("*.fmu"):
        (folder / fmu.name).symlink_to(fmu.resolve())
    (folder / "Trivial.fmu").symlink_to(trivial.resolve())
    with zipfile.ZipFile(fmu_dir / "Clutch.fmu") as archive:
        for name in archive.namelist():
            if name.startswith(("resources/fmus/", "resources/solvers/", "resources/drivetrain_fmu/")) \
                    and name.endswith(".py"):
                target = folder / ELEMENT_CODE / name[len("resources/"):]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(name))
    return folder


def instruction_counts(builds: dict[str, Path], steps: int, vehicle_steps: int) -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (Debian: apt-get install valgrind)")
    bench = _bench_clutch()
    print(f"\nCPU instructions per doStep through fmpy (bench_clutch's callgrind method: {steps} doSteps at 1e-4 s, "
          f"Vehicle {vehicle_steps}, minus the same run without them); old and new build:", flush=True)
    with tempfile.TemporaryDirectory(prefix="compare_instructions_") as tmp:
        tmp = Path(tmp)
        (tmp / "trivial").mkdir()
        trivial = Path(bench.build_trivial(tmp / "trivial"))
        folders = {label: prepare_counting_folder(fmu_dir, tmp / label, trivial) for label, fmu_dir in builds.items()}
        print(f"  {'case':48s} {'old':>12s} {'new':>12s} {'new/old':>8s}")
        for label, (element, _, _) in bench.CASES.items():
            n = vehicle_steps if element == "Vehicle" else steps
            counts = {}
            with ThreadPoolExecutor(len(folders)) as pool:        # the builds' counts side by side
                futures = {b: pool.submit(bench.per_step, folder, label, n, driver=__file__) for b, folder in folders.items()}
            for build_label, future in futures.items():
                try:
                    counts[build_label] = future.result()
                except subprocess.CalledProcessError as exc:
                    counts[build_label] = None
                    print(f"  {label}: the {build_label} count failed: {exc.stderr.strip()[-800:]}")
            old, new = counts.get("old"), counts.get("new")
            text = {k: "failed" if v is None else f"{v:12.0f}" for k, v in counts.items()}
            ratio = f"{new / old:8.2f}" if old and new else f"{'-':>8s}"
            print(f"  {label:48s} {text['old']:>12s} {text['new']:>12s} {ratio}", flush=True)


# --------------------------------------------------------------------------- main

def parse_stops(items) -> dict:
    """--stop T (every system) and/or SYSTEM=T -> {None or system: T}."""
    stops = {}
    for item in items or ():
        name, _, value = item.rpartition("=")
        stops[name or None] = float(value)
    return stops


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    old = parser.add_mutually_exclusive_group()
    old.add_argument("--old-revision", help="git revision whose FMUs are built (with its own build_fmus.py)")
    old.add_argument("--old-fmus", type=Path, help="folder of the old build's FMUs")
    parser.add_argument("--new-fmus", type=Path, help="folder of the new build's FMUs (default: build the working tree)")
    parser.add_argument("--systems", nargs="+", help="systems to compare (default: the whole catalog)")
    parser.add_argument("--no-systems", action="store_true", help="no system comparison (with --instructions)")
    parser.add_argument("--stop", nargs="+", metavar="[SYSTEM=]T",
                        help="stop time [s] for every system (T) or one system (SYSTEM=T), rounded to its step")
    parser.add_argument("--tolerance", type=float, default=1e-12, help="largest relative difference allowed")
    parser.add_argument("--fan-tolerance", type=float, default=1e-10,
                        help="largest relative difference allowed in the Fan systems (see the docstring)")
    parser.add_argument("--z3-tolerance", type=float, default=1e-11,
                        help="largest relative difference allowed in z3 (see the docstring)")
    parser.add_argument("--noise-floor", type=float, default=1e-12,
                        help="absolute difference allowed in signals that are rounding noise (max|old| < 1e-9)")
    parser.add_argument("--instructions", action="store_true", help="also count instructions per doStep (callgrind)")
    parser.add_argument("--instruction-steps", type=int, default=2000, help="doSteps per counted case")
    parser.add_argument("--vehicle-steps", type=int, default=200, help="doSteps of the Vehicle case")
    parser.add_argument("--child", nargs=2, type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--drive", help=argparse.SUPPRESS)            # bench_clutch's counting process
    parser.add_argument("--fmu-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child_run(*args.child)
        return 0
    if args.drive:
        _bench_clutch(args.fmu_dir).drive(args.fmu_dir, args.drive, args.steps)
        code = Path(element_code_file())
        if (args.fmu_dir / ELEMENT_CODE) not in code.parents:
            raise RuntimeError(f"the FMUs ran element code from {code}, not the build's")
        from drivetrain_fmu.systems.master import Instance
        for _, folder in Instance._unpacked.values():            # fmpy's extracted copies
            shutil.rmtree(folder, ignore_errors=True)
        return 0
    if not (args.old_revision or args.old_fmus):
        parser.error("give --old-revision REV or --old-fmus DIR")
    sys.path.insert(0, str(ROOT))
    from drivetrain_fmu.systems.ssp import catalog

    names = args.systems or catalog()
    unknown = set(names) - set(catalog())
    stops = parse_stops(args.stop)
    unknown |= {name for name in stops if name is not None and name not in names}
    if unknown:
        parser.error(f"unknown or unselected system(s) {sorted(unknown)}; catalog: {', '.join(catalog())}")
    with tempfile.TemporaryDirectory(prefix="compare_builds_") as tmp:
        tmp = Path(tmp)
        builds = {"old": build_revision(args.old_revision, tmp / "old") if args.old_revision else args.old_fmus,
                  "new": args.new_fmus or build(ROOT, tmp / "new", "working tree")}
        for label, folder in builds.items():
            print(f"{label}: {folder} (element code {element_code_digest(folder)})")
        ok = True
        if not args.no_systems:
            ok = compare_systems(names, builds, stops, args.tolerance, args.fan_tolerance, args.noise_floor,
                                 args.z3_tolerance)
        if args.instructions:
            instruction_counts(builds, args.instruction_steps, args.vehicle_steps)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
