"""solvers.dense (plain Python lists) against numpy at the element code's sizes.

    python benchmarks/bench_dense.py [--repeat 2000]

The FMUs ship the standard library only, so their matrix operations are solvers.dense.
This prints, for n = 2..12 (the friction chain's J_R^-1 blocks are at most 5x5, the
vehicle's constrained systems about 12x12), the time of a linear solve and of a
matrix-vector product with each, measured side by side in one run (the machine is
shared: only the ratios mean something).
"""
from __future__ import annotations

import argparse
import random
import sys
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from drivetrain_fmu.solvers import dense  # noqa: E402


def well_conditioned(n: int, rng: random.Random) -> list[list[float]]:
    """A random diagonally dominant matrix (what the mass matrices are)."""
    a = [[rng.uniform(-1.0, 1.0) for _ in range(n)] for _ in range(n)]
    for i in range(n):
        a[i][i] += n
    return a


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2000, help="calls per timing")
    args = parser.parse_args(argv)
    rng = random.Random(1)
    print(f"microseconds per call (best of 5 timings of {args.repeat} calls); ratio = dense / numpy")
    print(f"  {'n':>3s} {'solve dense':>12s} {'numpy':>8s} {'ratio':>6s}   {'A x dense':>10s} {'numpy':>8s} "
          f"{'ratio':>6s}")
    for n in (2, 3, 4, 6, 8, 12):
        a, x = well_conditioned(n, rng), [rng.uniform(-1.0, 1.0) for _ in range(n)]
        a_np, x_np = np.array(a), np.array(x)

        def best(statement):
            return min(timeit.repeat(statement, number=args.repeat, repeat=5)) / args.repeat * 1e6

        solve_dense = best(lambda: dense.solve(a, x))
        solve_numpy = best(lambda: np.linalg.solve(a_np, x_np).tolist())
        mv_dense = best(lambda: dense.matvec(a, x))
        mv_numpy = best(lambda: (a_np @ x_np).tolist())
        print(f"  {n:3d} {solve_dense:12.2f} {solve_numpy:8.2f} {solve_dense / solve_numpy:6.2f}   "
              f"{mv_dense:10.2f} {mv_numpy:8.2f} {mv_dense / mv_numpy:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
