"""Per-step cost and accuracy of the PWA discretisation methods (Reiter Table 6-7).

    python benchmarks/bench_pwa.py [--steps 20000]

Table 6 oscillator (x0 = 0.3 m, c = [1, 20] N/m with breakpoint 0.15 m, d = 0.5 N.s/m,
m = 1 kg).  Cost: seconds per step of each method, best of three blocks, as a ratio to
the plain linear discrete system x+ = Phi x + H u, all measured side by side in this
run (the machine is shared: only ratios mean something).  The thesis's Simulink
Table 7 reports linear 1.0 : constant nonlinearity 2.7 : switching (var. step) 2.4 :
coordinate transformation 1.1 : matrix exponential (N = 10) 2.5.  Error: max |x - x_ref|
over 10 s at T_d = 0.1 s against the DOP853 reference (rtol 1e-10).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from drivetrain_fmu.solvers.pwa import Characteristic, PwaOscillator  # noqa: E402
from drivetrain_fmu.systems.catalog.pwa_methods import METHODS, make_linear, reference, simulate  # noqa: E402

OSC = PwaOscillator(1.0, Characteristic((0.0, 0.15), (1.0, 20.0)), Characteristic.linear(0.5))
THESIS_RATIO = {"linear": 1.0, "constant_nonlinearity": 2.7, "switching_exact": 2.4,
                "coordinate_shifting": 1.1, "matrix_exponential": 2.5}


def cost_per_step(stepper, steps: int, h: float) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        simulate(stepper, 0.3, 0.0, h, steps)
        best = min(best, (time.perf_counter() - start) / steps)
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20000, help="steps per timing block")
    args = parser.parse_args(argv)
    h, duration = 0.1, 10.0
    n = int(round(duration / h))
    ref = reference(OSC, 0.3, 0.0, h, n)
    rows = [("linear", make_linear)] + list(METHODS.items())
    base = None
    print(f"Table 6 oscillator, T_d = {h} s; cost per step (best of 3 x {args.steps} steps), "
          f"error over {duration:g} s")
    print(f"  {'method':32s} {'us/step':>8s} {'ratio':>6s} {'thesis':>6s} {'max error [m]':>14s}")
    for name, make in rows:
        cost = cost_per_step(make(OSC, h), args.steps, h)
        base = base or cost
        error = "-" if name == "linear" else f"{np.max(np.abs(simulate(make(OSC, h), 0.3, 0.0, h, n).x - ref.x)):.3e}"
        thesis = f"{THESIS_RATIO[name]:.1f}" if name in THESIS_RATIO else "-"
        print(f"  {name:32s} {cost * 1e6:8.2f} {cost / base:6.2f} {thesis:>6s} {error:>14s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
