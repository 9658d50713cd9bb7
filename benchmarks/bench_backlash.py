"""Backlash step cost with and without impacts (the thesis: +43.7 % for its algorithm).

    python benchmarks/bench_backlash.py [--steps 3000]

Three regimes of the same pair (J = 1 and 2 kg.m2 on ground springs of 100 N.m/rad,
h = 2 ms), each timed over the same number of steps, best of three blocks, side by side
in this one run: free play without contact, persistent contact, and rattling with
about one elastic impact per step.  Printed for the bare solver step and for fmi2DoStep
through fmpy, with the ratio to the no-contact case.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from drivetrain_fmu import build_fmus  # noqa: E402
from drivetrain_fmu.solvers.backlash import BacklashPair, Body, PairState  # noqa: E402
from drivetrain_fmu.systems.master import Instance  # noqa: E402

H = 2e-3
REGIMES = {
    # name: (clearance b, e_rest, phi_1, w_1, phi_2, w_2, tau_1)
    "free play, no contact": (10.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    "persistent contact": (0.01, 0.0, 0.01, 0.0, 0.0, 0.0, 50.0),
    "rattling, ~1 impact per step": (0.01, 1.0, 0.0, 10.0, 0.0, 0.0, 0.0),
}


def pair_for(b, e):
    return BacklashPair(Body(1.0, 100.0), Body(2.0, 100.0), b, e)


def best_of_three(block):
    return min(block() for _ in range(3))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    args = parser.parse_args(argv)
    n = args.steps
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        build_fmus.build_all(Path(tmp), ["Backlash"])
        for name, (b, e, p1, w1, p2, w2, tau) in REGIMES.items():
            pair = pair_for(b, e)

            def solver_block():
                state, impacts0 = PairState(p1, w1, p2, w2), 0
                start = time.perf_counter()
                for _ in range(n):
                    state = pair.step(state, tau, 0.0, H).state
                solver_block.impacts = state.n_impacts - impacts0
                return (time.perf_counter() - start) / n

            solver = best_of_three(solver_block)
            params = dict(J_1=1.0, J_2=2.0, k_ground_1=100.0, k_ground_2=100.0, b=b, e_rest=e,
                          phi_1_start=p1, w_1_start=w1, phi_2_start=p2, w_2_start=w2)

            def fmu_block():
                inst = Instance(Path(tmp) / "Backlash.fmu", "bench", params)
                inst.set("tau_1", tau)
                start = time.perf_counter()
                for k in range(n):
                    inst.do_step(k * H, H)
                cost = (time.perf_counter() - start) / n
                inst.free()
                return cost

            rows.append((name, solver, fmu_block and best_of_three(fmu_block), solver_block.impacts / n))
    base_solver, base_fmu = rows[0][1], rows[0][2]
    print(f"Backlash step cost, h = {H} s, {n} steps per block (best of 3)")
    print(f"  {'regime':32s} {'impacts/step':>12s} {'solver us':>10s} {'ratio':>6s} {'doStep us':>10s} {'ratio':>6s}")
    for name, solver, fmu, impacts in rows:
        print(f"  {name:32s} {impacts:12.2f} {solver * 1e6:10.1f} {solver / base_solver:6.2f} "
              f"{fmu * 1e6:10.1f} {fmu / base_fmu:6.2f}")
    print("  thesis (Simulink, case 7): with the collision algorithm 1.437 x without")
    return 0


if __name__ == "__main__":
    sys.exit(main())
