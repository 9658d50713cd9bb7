"""An FMU under fmpy in a process that imports nothing of this project: as an engineer's
script runs it, and as every non-Python host does, the FMU then runs the compiled modules it
carries (compiled_modules.py).  A process that has imported ``fmus`` or ``solvers`` (the
benchmarks' own, which build the FMUs) shares those source modules with the FMU instead: the
element code's modules are process-global.

    python benchmarks/fmpy_host.py FMU --stop S --step H [--repeat N] [--save FILE.npz]
        prints the best wall time of N runs of fmpy.simulate_fmu (extraction included), every
        output recorded at every step; --save writes the last run's values by name
    python benchmarks/fmpy_host.py --drive NAME --fmu-dir DIR --steps N
        the counting process of bench_clutch.count_instructions: N steps of DIR/NAME.fmu at its
        default experiment's step size

:func:`fmpy_python` gives another CPython (compiled_modules.TargetPython) an fmpy of its own,
to run this script or a test's in it.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

from fmpy import read_model_description, simulate_fmu

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
    args = parser.parse_args(argv)
    if args.drive:
        fmu = args.fmu_dir / f"{args.drive}.fmu"
        step = read_model_description(str(fmu)).defaultExperiment.stepSize
        simulate(fmu, args.steps * float(step), float(step))
        return 0
    best = float("inf")
    for _ in range(args.repeat):
        start = time.perf_counter()
        result = simulate(args.fmu, args.stop, args.step)
        best = min(best, time.perf_counter() - start)
    if args.save:
        import numpy as np

        np.savez(args.save, **{name: result[name].astype(float) for name in result.dtype.names})
    loaded = sorted(name for name in sys.modules if name.split(".")[0] in ("fmus", "solvers") and "." in name)
    compiled = [name for name in loaded if not getattr(sys.modules[name], "__file__", "").endswith(".py")]
    print(f"{best:.6f} s best of {args.repeat}; {len(compiled)} of {len(loaded)} element modules loaded compiled")
    return 0


if __name__ == "__main__":
    sys.exit(main())
