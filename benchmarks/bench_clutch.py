"""Clutch doStep cost through fmpy vs a trivial pythonfmu FMU, and Z3 wall time.

    python benchmarks/bench_clutch.py [--steps 20000]

Everything is measured side by side in this one run (the machine is shared and noisy:
only the ratios mean something).  Targets from the clutch issue: Clutch doStep at most
2x the trivial FMU; 10 s of Z3 under 1 s (the seed's Simulink run: 0.98 s).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import build_fmus  # noqa: E402
from systems import z3  # noqa: E402
from systems.reference import Reference, error_report, z3_reference  # noqa: E402
from systems.master import Instance  # noqa: E402

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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=15000)
    args = parser.parse_args(argv)
    h = 1e-4
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        build_fmus.build_all(tmp, ["Clutch", "DualClutch", "Shaft", "Inertia", "Table"])
        trivial = Instance(build_trivial(tmp), "trivial")
        cases = {
            "trivial pythonfmu FMU": (trivial, None),
            "Clutch locked (stuck phase)": (Instance(tmp / "Clutch.fmu", "locked", {"w_1_start": 0.0}), None),
            "Clutch slipping, Coulomb (analytic)": (Instance(tmp / "Clutch.fmu", "coulomb"), 1.0),
            "Clutch slipping, Stribeck (ODE path)": (
                Instance(tmp / "Clutch.fmu", "stribeck", {"w_stribeck": 10.0, "alpha_stribeck": 0.6}), 1.0),
        }
        print(f"doStep cost through fmpy, h = {h} s, {args.steps} steps per case (best of 3 blocks)")
        base = None
        for label, (inst, f_n) in cases.items():
            if f_n is not None:
                inst.set("f_n", f_n)  # small clamp force: stays slipping for the whole run
            cost = time_steps(inst, args.steps, h)
            base = base or cost
            print(f"  {label:40s} {cost * 1e6:8.1f} us   ratio {cost / base:5.2f}")
        print("10 s of Z3 (DualClutch, 2 Shafts, Inertia, 3 input Tables; explicit co-simulation "
              "via fmpy), largest RMS error / range against the monolithic reference:")
        reference = z3_reference(np.arange(int(round(z3.STOP / 1e-3)) + 1) * 1e-3)
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
