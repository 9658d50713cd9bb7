"""drivetrain-fmu compare r1: Reiter's PWA discretisation methods on the Table 6 oscillator
(no FMU)."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from drivetrain_fmu.solvers.pwa import Characteristic, PwaOscillator
from drivetrain_fmu.systems.catalog.pwa_methods import METHODS, reference, simulate

from .checks import out_folder
from .plots import LINE_STYLES, pyplot

#: `compare r1`: the legend of each method (systems.catalog.pwa_methods.METHODS) and its marker; the
#: line styles and widths are LINE_STYLES'
R1_NAMES = {
    "reference": "exact solution (fine-step reference)",
    "euler": "explicit Euler",
    "constant_nonlinearity": "spring force held over the step",
    "constant_nonlinearity_internal": "spring force held, linear part exact",
    "coordinate_shifting": "online coordinate shifting",
    "matrix_exponential": "matrix-exponential approximation",
    "switching": "switching affine models",
    "switching_exact": "switching, exact switch instants (the FMU's)",
}
R1_MARKERS = ("o", "s", "^", "D", "v", "x", "+")


def compare_r1(step: float, duration: float, out: Path) -> None:
    """Every PWA method of systems.catalog.pwa_methods on the Table 6 oscillator against the reference
    (Reiter Fig. 31-36): error table on stdout, x(t) in r1_methods.csv / .png."""
    osc = PwaOscillator(1.0, Characteristic((0.0, 0.15), (1.0, 20.0)), Characteristic.linear(0.5))
    n = int(round(duration / step))
    runs = {"reference": reference(osc, 0.3, 0.0, step, n)}
    runs.update({name: simulate(make(osc, step), 0.3, 0.0, step, n) for name, make in METHODS.items()})
    out.mkdir(parents=True, exist_ok=True)
    print(f"Table 6 oscillator, T_d = {step:g} s, {duration:g} s: max |x - x_ref|")
    for name, traj in runs.items():
        if name != "reference":
            print(f"  {name:32s} {np.max(np.abs(traj.x - runs['reference'].x)):.3e} m")
    with open(out / "r1_methods.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["time"] + [f"x_{name}" for name in runs])
        for k, t in enumerate(runs["reference"].t):
            writer.writerow([f"{t:.6g}"] + [f"{traj.x[k]:.10g}" for traj in runs.values()])
    plt = pyplot()
    fig, (ax, err) = plt.subplots(2, 1, sharex=True, figsize=(9, 7.5), height_ratios=(3, 2))
    exact = runs["reference"]
    ax.plot(exact.t, exact.x, "-", color="0.6", lw=5, alpha=0.6, label=R1_NAMES["reference"])
    every = max(len(R1_MARKERS), len(exact.t) // 15)         # markers every few points, staggered
    methods = [(n, r) for n, r in runs.items() if n != "reference"]
    for k, (name, traj) in enumerate(methods):
        style, width = LINE_STYLES[k % len(LINE_STYLES)]
        marks = dict(marker=R1_MARKERS[k % len(R1_MARKERS)], ms=5, markevery=(k % every, every), color=f"C{k}")
        label = R1_NAMES.get(name, name)
        same = [other for other, earlier in methods[:k] if np.max(np.abs(earlier.x - traj.x)) <= 1e-9 * np.ptp(exact.x)]
        if same:                              # a curve on top of another: say so in its legend
            label += f" (= {R1_NAMES.get(same[0], same[0])})"
        ax.plot(traj.t, traj.x, style, lw=width, label=label, **marks)
        deviation = np.abs(traj.x - exact.x)
        err.semilogy(traj.t, np.where(deviation > 0, deviation, np.nan), style, lw=width, **marks)
    ax.set_ylim(-0.4, 0.4)
    ax.set_ylabel("spring deflection x [m]")
    ax.set_title(f"Piecewise-affine spring-mass oscillator: discretisation methods at step T_d = {step:g} s",
                 fontsize=10)
    ax.legend(fontsize=7, ncol=2, loc="lower right")
    ax.grid(alpha=0.3)
    err.set_ylabel("deviation from the exact\nsolution |x - x_exact| [m]")
    err.set_xlabel("time [s]")
    err.set_ylim(1e-12, 1.0)
    err.grid(alpha=0.3, which="major")
    fig.tight_layout()
    fig.savefig(out / "r1_methods.png", dpi=120)
    plt.close(fig)
    print(f"wrote {out / 'r1_methods.csv'} and {out / 'r1_methods.png'}")


def execute(args) -> None:
    """compare r1: :func:`compare_r1` into RESULTS/compare/r1/."""
    compare_r1(args.step, args.duration, out_folder(args, "compare", args.case))
