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
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from fmpy import read_model_description, simulate_fmu


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
