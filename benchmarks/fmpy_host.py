"""An FMU under fmpy in a process that imports nothing of this project: as an engineer's
script runs it, and as every non-Python host does, the FMU then runs the compiled modules it
carries (compiled_modules.py).  A process that has imported ``fmus`` or ``solvers`` (the
benchmarks' own, which build the FMUs) shares those source modules with the FMU instead: the
element code's modules are process-global.

    python benchmarks/fmpy_host.py FMU --stop S --step H [--repeat N] [--save FILE.npz]
        prints the best wall time of N runs of fmpy.simulate_fmu (extraction included), every
        output recorded at every step; --save writes the last run's values by name
        and the CPU time (this process's) of the best run
    python benchmarks/fmpy_host.py --drive NAME --fmu-dir DIR --steps N [--fixed-extraction FOLDER]
        the counting process of bench_clutch.count_instructions: N steps of DIR/NAME.fmu at its
        default experiment's step size, every output recorded at every step; simulate_fmu
        extracts the FMU into a new random temporary folder, or with --fixed-extraction the
        FMU is extracted into FOLDER (emptied first) and simulate_fmu runs that folder: the
        FMU's paths (and so where CPython's objects land, which moves a count by up to 5 000
        instructions per step) are then the same at every run (bench_one_model.py)
    python benchmarks/fmpy_host.py --instantiate FMU_FOLDER
        the wall time of the first instantiation of an extracted FMU in this fresh process
        (loading its binary, fmi2Instantiate) and the resident memory (VmRSS) it added
    python benchmarks/fmpy_host.py --latency FMU --stop S --step H --steps N
        the wall time of each of N fmi2DoStep calls of H (the run from 0 to S repeated, each
        time in a new instance, until N steps are timed): the median, 99.9th percentile and
        maximum, in microseconds

:func:`fmpy_python` gives another CPython (compiled_modules.TargetPython) an fmpy of its own,
to run this script or a test's in it.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

from fmpy import extract, read_model_description, simulate_fmu

#: what another interpreter gets: this process's fmpy release without its optional dependencies
#: (CMake, Jupyter's nbformat...), and what simulate_fmu imports
FMPY = f"fmpy=={metadata.version('fmpy')}"
FMPY_REQUIREMENTS = ("numpy", "attrs", "lxml")


class NoFmpy(RuntimeError):
    """fmpy could not be installed for an interpreter (the message says the step and why)."""


def fmpy_python(target) -> str:
    """An interpreter of ``target``'s version (compiled_modules.TargetPython) with fmpy: this
    one when it is that version, else a venv in ``$XDG_CACHE_HOME/drivetrain-fmu/fmpy-hosts``
    (default ``~/.cache``), made on first use from PyPI (about a minute each) and kept for
    later runs and clones; a venv whose making was interrupted is made again."""
    if target.short == f"{sys.version_info[0]}.{sys.version_info[1]}":
        return sys.executable
    folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "drivetrain-fmu" / "fmpy-hosts"
    venv = folder / f"{target.version.split()[0]}-{FMPY}"
    python, ready = venv / "bin" / "python", venv / "ready"
    if not ready.is_file():
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        for command in ([target.executable, "-m", "venv", "--clear", str(venv)], [*pip, "--no-deps", FMPY],
                        [*pip, *FMPY_REQUIREMENTS]):
            done = subprocess.run(command, capture_output=True, text=True, timeout=900)
            if done.returncode != 0:
                raise NoFmpy(f"fmpy cannot be installed for CPython {target.short} ({' '.join(command[-3:])}): "
                             f"{done.stderr.strip()[-500:]}")
        ready.write_text("fmpy installed\n")
    return str(python)


def simulate(fmu: Path, stop: float, step: float):
    outputs = [v.name for v in read_model_description(str(fmu)).modelVariables if v.causality == "output"]
    return simulate_fmu(str(fmu), stop_time=stop, step_size=step, output_interval=step, output=outputs)


def extract_fixed(fmu: Path, folder: Path) -> Path:
    """``fmu`` extracted into ``folder``, which is emptied first; ValueError (naming it) for a
    folder that holds anything but an extracted FMU (a modelDescription.xml at its top),
    which is left untouched."""
    folder = Path(folder)
    if folder.exists():
        if not folder.is_dir() or (any(folder.iterdir()) and not (folder / "modelDescription.xml").is_file()):
            raise ValueError(f"--fixed-extraction {folder}: not a folder an FMU was extracted into (no "
                             "modelDescription.xml at its top) and not empty; give a new or empty folder, "
                             "or one this option extracted into before")
        shutil.rmtree(folder)
    return Path(extract(str(fmu), str(folder)))


def drive(fmu: Path, steps: int, fixed_extraction: Path | None = None):
    """``steps`` steps of ``fmu`` at its default experiment's step size, every output recorded
    at every step (simulate_fmu's result); from ``fixed_extraction`` (:func:`extract_fixed`)
    when given."""
    source = fmu if fixed_extraction is None else extract_fixed(fmu, fixed_extraction)
    step = float(read_model_description(str(source)).defaultExperiment.stepSize)
    return simulate(source, steps * step, step)


def rss_kib() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def slave(folder: str, name: str, description=None):
    """An fmpy FMU2Slave of the extracted FMU ``folder``, instantiated (``description``: its
    model description, else read here)."""
    from fmpy.fmi2 import FMU2Slave

    description = description or read_model_description(folder)
    instance = FMU2Slave(guid=description.guid, unzipDirectory=folder,
                         modelIdentifier=description.coSimulation.modelIdentifier, instanceName=name)
    instance.instantiate()
    return instance


def first_instantiation(folder: Path) -> tuple[float, int]:
    """(seconds, KiB of VmRSS added) of loading and instantiating the extracted FMU ``folder``;
    its model description is read first, outside the figures."""
    # absolute: fmpy's instantiate turns the folder into a file URI, which a relative path cannot be
    folder = folder.resolve()
    description = read_model_description(str(folder))
    before = rss_kib()
    start = time.perf_counter()
    slave(str(folder), "first", description)
    return time.perf_counter() - start, rss_kib() - before


def doStep_latency(fmu: Path, stop: float, step: float, steps: int) -> tuple[float, float, float]:
    """(p50, p99.9, max) in microseconds of the wall time of ``steps`` fmi2DoStep calls of
    ``step``: runs from 0 to ``stop``, each in a new instance (instantiation and
    initialization are not timed), until ``steps`` are timed."""
    import numpy as np

    folder = extract(str(fmu))
    times = np.empty(steps)
    per_run, done = int(round(stop / step)), 0
    while done < steps:
        instance = slave(folder, "latency")
        instance.setupExperiment(startTime=0.0)
        instance.enterInitializationMode()
        instance.exitInitializationMode()
        for n in range(min(per_run, steps - done)):
            start = time.perf_counter_ns()
            instance.doStep(currentCommunicationPoint=n * step, communicationStepSize=step)
            times[done] = time.perf_counter_ns() - start
            done += 1
        instance.terminate()
        instance.freeInstance()
    p50, p999 = np.percentile(times, [50.0, 99.9])
    return p50 / 1e3, p999 / 1e3, times.max() / 1e3


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fmu", type=Path, nargs="?")
    parser.add_argument("--stop", type=float)
    parser.add_argument("--step", type=float)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--save", type=Path)
    parser.add_argument("--drive")
    parser.add_argument("--fmu-dir", type=Path)
    parser.add_argument("--steps", type=int)
    parser.add_argument("--fixed-extraction", type=Path, metavar="FOLDER")
    parser.add_argument("--instantiate", type=Path)
    parser.add_argument("--latency", type=Path)
    args = parser.parse_args(argv)
    if args.fixed_extraction and not args.drive:
        parser.error("--fixed-extraction goes with --drive")
    if args.drive:
        drive(args.fmu_dir / f"{args.drive}.fmu", args.steps, args.fixed_extraction)
        return 0
    if args.instantiate:
        seconds, kib = first_instantiation(args.instantiate)
        print(f"{seconds:.6f} s; {kib} KiB resident memory added")
        return 0
    if args.latency:
        p50, p999, worst = doStep_latency(args.latency, args.stop, args.step, args.steps)
        print(f"{p50:.3f} {p999:.3f} {worst:.3f} us: p50, p99.9, max of {args.steps} doSteps")
        return 0
    best = cpu = float("inf")
    for _ in range(args.repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = simulate(args.fmu, args.stop, args.step)
        wall = time.perf_counter() - start
        if wall < best:
            best, cpu = wall, time.process_time() - start_cpu
    if args.save:
        import numpy as np

        np.savez(args.save, **{name: result[name].astype(float) for name in result.dtype.names})
    loaded = sorted(name for name in sys.modules if name.split(".")[0] in ("fmus", "solvers") and "." in name)
    compiled = [name for name in loaded if not getattr(sys.modules[name], "__file__", "").endswith(".py")]
    print(f"{best:.6f} s best of {args.repeat} (CPU {cpu:.6f} s); {len(compiled)} of {len(loaded)} "
          "element modules loaded compiled")
    return 0


if __name__ == "__main__":
    sys.exit(main())
