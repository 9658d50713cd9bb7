"""Command line: list the elements, build the FMUs, co-simulate a documented drivetrain.

    drivetrain-fmu list
    drivetrain-fmu build [--out build/fmus]     (always rebuilds every FMU)
    drivetrain-fmu run SYSTEM [--step 1e-3] [--out results]     (builds the FMUs that are not up to date)
    drivetrain-fmu compare r1 [--step 0.1] [--out results]  (PWA discretisations, no FMU)
    drivetrain-fmu report SYSTEM [--steps ...]   (co-simulation vs monolithic reference)
    drivetrain-fmu export SYSTEM [--step 1e-3] [--stop T]   (SSP file of a systems/ssd/SYSTEM.ssd)
    drivetrain-fmu ssp FILE.ssp --step H [--stop T] [--record inst.var ...]   (run an SSP file)
    drivetrain-fmu study judder-onset [--T_S 400] [--T_C 320 300 ...] [--scheduler tcp://HOST:PORT]
    drivetrain-fmu study tire-slip-onset [--mu_k_road 0.07 ...] [--scheduler tcp://HOST:PORT]
    drivetrain-fmu study breakaway [--mu_s 0.3 0.4 ...] [--scheduler tcp://HOST:PORT]
"""
from __future__ import annotations

import argparse
import csv
import math
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import build_fmus
from fmus import ELEMENTS
from systems.ssp import catalog, load_system

# per family of systems (the name's prefix): title and plot panels [(y label, [(signal, legend), ...]), ...]
PLOTS = {
    "z3": ("Z3 double clutch (Biagiotti & Zanasi Fig. 10-11)", [
        ("speed [rad/s]", [("clutch.w_1", "w_1 odd-gear shaft"), ("clutch.w_2", "w_2 engine side"),
                           ("clutch.w_3", "w_3 even-gear shaft")]),
        ("friction torque [N.m]", [("clutch.tau_fric_a", "tau_fric_a (1 -> 2)"),
                                   ("clutch.tau_fric_b", "tau_fric_b (2 -> 3)")])]),
    "r3_spring": ("R3 nonlinear spring (Reiter Fig. 51-53)", [
        ("twist [rad]", [("spring.phi_rel", "phi_rel")]),
        ("spring torque [N.m]", [("spring.tau_2", "tau on J_w + J_v")]),
        ("speed [rad/s]", [("z.w", "J_z"), ("wv.w", "J_w + J_v")])]),
    "r3_clearance": ("R3 gear clearance (Reiter Fig. 77-79)", [
        ("relative angle [rad]", [("mesh.phi_rel", "phi_z - phi_w")]),
        ("impacts", [("mesh.n_impacts", "n_impacts")]),
        ("speed [rad/s]", [("mesh.w_1", "J_z"), ("mesh.w_2", "J_w"), ("vehicle.w", "J_v")])]),
    "fan": ("Fan, Walker & Wang drivetrain (seed Fig. 3-19)", [
        ("pitch [rad]", [("vehicle.pitch", "theta_1")]),
        ("normal force [N]", [("vehicle.F_n_f", "F_N1 front"), ("vehicle.F_n_r", "F_N2 rear")]),
        ("clutch slip [rad/s]", [("clutch.w_slip", "theta_r' (flywheel - disc)")]),
        ("clutch torque [N.m]", [("clutch.tau_fric", "T_f")]),
        ("stick flags", [("vehicle.stick_f", "front tire"), ("vehicle.stick_r", "rear tire"),
                         ("clutch.locked", "clutch")])]),
}


def _family(system: str) -> tuple[str | None, str]:
    """(family, case) of a system's name: z3 -> ("z3", ""), fan_F2 -> ("fan", "F2"),
    r3_spring_1 -> ("r3_spring", "1"); a system of no documented family (a new .ssd) ->
    (None, name)."""
    family = next((f for f in PLOTS if system == f or system.startswith(f + "_")), None)
    return (family, system[len(family) + 1:]) if family else (None, system)


def _simulate(system: str, fmu_dir: Path, step: float | None, step_mean: bool | None = None,
              progress: bool = True):
    """Co-simulate a documented system at ``step`` (None: its own) over its DefaultExperiment."""
    from systems import fan, r3, z3

    from systems.ssp import run_system

    family, case = _family(system)
    description = load_system(system)
    step = description.step if step is None else step
    if step is None or description.stop is None:
        raise SystemExit(f"{system}: its file gives no step or no stop time; give --step (and add a "
                         f"DefaultExperiment stopTime)")
    if family == "z3":
        return z3.simulate(fmu_dir, step=step, progress=progress, step_mean=step_mean)
    if family == "fan":
        return fan.simulate(fmu_dir, case, step=step, progress=progress, step_mean=step_mean)
    if family == "r3_spring":
        return r3.simulate_spring(fmu_dir, int(case), step=step, progress=progress, step_mean=step_mean)
    if family == "r3_clearance":
        return r3.simulate_clearance(fmu_dir, int(case), step=step, progress=progress)
    record = list(dict.fromkeys(f"{c.source}.{c.output}" for c in description.connections))
    return run_system(fmu_dir, description.at_step(step, step_mean), description.connections, description.stop,
                      step, record, progress)


def _run_system(system: str, fmu_dir: Path, step: float, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    result = _simulate(system, fmu_dir, step)
    record = list(result.signals)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{system}.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["time"] + record)
        for n, t in enumerate(result.time):
            writer.writerow([f"{t:.6g}"] + [f"{result.signals[k][n]:.10g}" for k in record])
    title, panels = PLOTS.get(_family(system)[0]) or (
        system, [(key, [(key, key)]) for key in record[:6]])      # a new system: its first outputs
    fig, axes = plt.subplots(len(panels), 1, sharex=True, figsize=(8, 2.4 * len(panels) + 1), squeeze=False)
    axes = axes[:, 0]
    for ax, (label, signals) in zip(axes, panels):
        for key, legend in signals:
            ax.plot(result.time, result[key], label=legend)
        ax.set_ylabel(label)
        ax.legend(fontsize=8)
    axes[0].set_title(f"{title}: {system}")
    axes[-1].set_xlabel("time [s]")
    fig.tight_layout()
    fig.savefig(out / f"{system}.png", dpi=120)
    print(f"wrote {out / (system + '.csv')} and {out / (system + '.png')}")


def _compare_r1(step: float, duration: float, out: Path) -> None:
    """Every PWA method of systems.pwa_methods on the Table 6 oscillator against the reference
    (Reiter Fig. 31-36): error table on stdout, x(t) in r1_methods.csv / .png."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from solvers.pwa import Characteristic, PwaOscillator
    from systems.pwa_methods import METHODS, reference, simulate

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
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name, traj in runs.items():
        ax.plot(traj.t, traj.x, "k-" if name == "reference" else ".-", lw=2 if name == "reference" else 0.8,
                ms=3, label=name)
    ax.set_ylim(-0.4, 0.4)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("deflection x [m]")
    ax.set_title(f"PWA spring (Reiter Table 6), T_d = {step:g} s")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(out / "r1_methods.png", dpi=120)
    print(f"wrote {out / 'r1_methods.csv'} and {out / 'r1_methods.png'}")


# per family: the signals the error report compares
REPORT_KEYS = {
    "z3": ["clutch.w_1", "clutch.w_2", "clutch.w_3", "vehicle.w", "clutch.tau_fric_a", "clutch.tau_fric_b"],
    "fan": ["vehicle.v", "vehicle.pitch", "vehicle.w_wheel_f", "engine.w", "clutch.w_1"],
    "r3_spring": ["spring.phi_rel", "z.w", "wv.w"],
    "r3_clearance": ["mesh.w_mean", "mesh.w_1", "mesh.w_2", "vehicle.w"],   # w_1, w_2 not pointwise when elastic
}


def _reference(system: str, t_grid):
    """The monolithic reference of a documented system (systems.reference)."""
    from systems import reference

    family, case = _family(system)
    if family == "z3":
        return reference.z3_reference(t_grid)
    if family == "fan":
        return reference.fan_reference(case, t_grid)
    if family == "r3_spring":
        return reference.r3_spring_reference(int(case), t_grid)
    return reference.r3_clearance_reference(int(case), t_grid)


def _report(system: str, fmu_dir: Path, steps) -> None:
    """Error of a co-simulation against its monolithic reference, per step, with the
    step-mean and the sampled compliance torques."""
    import numpy as np

    from systems.reference import error_report

    family, _ = _family(system)
    if family is None:
        raise SystemExit(f"{system}: no monolithic reference (references exist for the documented families "
                         f"{', '.join(REPORT_KEYS)})")
    keys, stop = REPORT_KEYS[family], load_system(system).stop
    print(f"{system} co-simulation vs monolithic reference over {stop:g} s: max and RMS error / signal range")
    for step in steps:
        ref = _reference(system, np.arange(int(round(stop / step)) + 1) * step)
        for step_mean in ((True,) if family == "r3_clearance" else (True, False)):
            try:
                report = error_report(_simulate(system, fmu_dir, step, step_mean), ref, keys)
            except Exception as exc:          # a diverging coupling makes an element refuse a step
                print(f"  step {step:g} s, {'step-mean' if step_mean else 'sampled'}: failed ({str(exc).splitlines()[0]})")
                continue
            print(f"  step {step:g} s, {'step-mean' if step_mean else 'sampled'} compliance torques:")
            for key in keys:
                print(f"    {key:20s} max {report[key][0]:.2e}   RMS {report[key][1]:.2e}")


def seconds(text: str) -> float:
    """argparse type of a step or a duration: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (value > 0.0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, got {text}")
    return value


def _or(value, default):
    return default if value is None else value


def _study(args) -> None:
    """Threshold studies on dask (systems.study): CSV and plot in --out."""
    from systems import study

    build_fmus.build_all(args.fmus, force=False)
    args.out.mkdir(parents=True, exist_ok=True)
    client = study.default_client(args.scheduler)
    try:
        if args.kind == "judder-onset":
            # Fan et al. F2: the engine torque above which the clutch sticks and slips in steady state
            spec = study.Study("fan", "stick_slip_cycles_per_second",
                               grid={"T_S": args.T_S, "T_C": args.T_C}, fixed={"stop": _or(args.stop, 4.5)})
            rows = study.threshold_search(spec, args.fmus, client, "T0", _or(args.low, 300.0),
                                          _or(args.high, 323.47), level=0.0, tolerance=args.tolerance)
            x, y = ("T_C", "T_S") if len(args.T_S) > 1 and len(args.T_C) > 1 else ("T_C" if len(args.T_C) > 1 else "T_S", None)
        elif args.kind == "tire-slip-onset":
            # Fan et al. F3 (ice, negative torque): the torque beyond which the driven tire no
            # longer settles to rolling within the run (stick-slip or spinning in its last third)
            spec = study.Study("fan", "driven_tire_rolls", grid={"mu_k_road": args.mu_k_road},
                               fixed={"case": "F3", "stop": _or(args.stop, 8.0)})
            rows = study.threshold_search(spec, args.fmus, client, "T0", _or(args.low, -170.0),
                                          _or(args.high, -160.0), level=0.5, tolerance=args.tolerance)
            x, y = "mu_k_road", None
        else:
            spec = study.Study("clutch_hold", "breakaway", grid={"mu_s": args.mu_s})
            rows = study.threshold_search(spec, args.fmus, client, "tau", 0.0, 1000.0, level=0.5, tolerance=0.01)
            x, y = "mu_s", None
    finally:
        client.close()
    csv_path = study.write_csv(rows, args.out / f"{args.kind}.csv")
    value = next(key for key in rows[0] if key.endswith("_threshold"))
    png = study.plot(rows, x, value, args.out / f"{args.kind}.png", y=y, title=args.kind)
    for row in rows:
        print("  " + ", ".join(f"{k} = {v:.6g}" for k, v in row.items()))
    print(f"wrote {csv_path} and {png}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="drivetrain-fmu", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list elements and documented systems")
    build = sub.add_parser("build", help="build every element FMU")
    build.add_argument("--out", type=Path, default=build_fmus.DEFAULT_OUT)
    run = sub.add_parser("run", help="build the FMUs and co-simulate a documented system")
    run.add_argument("system", choices=catalog(), help="a documented system (drivetrain-fmu list)")
    run.add_argument("--step", type=seconds, help="communication step [s] (default: the system's)")
    run.add_argument("--fmus", type=Path, default=build_fmus.DEFAULT_OUT)
    run.add_argument("--out", type=Path, default=Path("results"))
    compare = sub.add_parser("compare", help="compare the PWA discretisation methods (no FMU)")
    compare.add_argument("case", choices=["r1"])
    compare.add_argument("--step", type=seconds, default=0.1, help="discretisation step T_d [s]")
    compare.add_argument("--duration", type=seconds, default=10.0, help="simulated time [s]")
    compare.add_argument("--out", type=Path, default=Path("results"))
    report = sub.add_parser("report", help="co-simulation error against the monolithic reference")
    report.add_argument("system", choices=catalog(), help="a documented system (drivetrain-fmu list)")
    report.add_argument("--steps", type=seconds, nargs="+", default=[1e-4, 1e-3, 1e-2])
    report.add_argument("--fmus", type=Path, default=build_fmus.DEFAULT_OUT)
    export = sub.add_parser("export", help="write a documented system as an SSP file")
    export.add_argument("system", choices=catalog(), help="a documented system (drivetrain-fmu list)")
    export.add_argument("--step", type=seconds, help="step the SSP is meant to run at [s] (default: the system's)")
    export.add_argument("--stop", type=seconds, help="stop time [s] (default: the system's)")
    export.add_argument("--fmus", type=Path, default=build_fmus.DEFAULT_OUT)
    export.add_argument("--out", type=Path, default=Path("results"))
    studies = sub.add_parser("study", help="threshold studies on a local or remote dask cluster")
    studies.add_argument("kind", choices=["judder-onset", "tire-slip-onset", "breakaway"])
    studies.add_argument("--scheduler", help="tcp://HOST:PORT of a running dask scheduler (default: local cluster)")
    studies.add_argument("--T_S", type=float, nargs="+", default=[400.0], help="clutch static capacities [N.m]")
    studies.add_argument("--T_C", type=float, nargs="+", default=[320.0], help="clutch kinetic capacities [N.m]")
    studies.add_argument("--low", type=float, help="engine torque at the lower end of the search [N.m] "
                         "(judder-onset: 300, no judder; tire-slip-onset: -170, the tire spins)")
    studies.add_argument("--high", type=float, help="engine torque at the upper end [N.m] (judder-onset: "
                         "323.47, judder, a narrow band: above it the clutch slips for good; "
                         "tire-slip-onset: -160, the tire settles to rolling)")
    studies.add_argument("--mu_k_road", type=float, nargs="+", default=[0.07],
                         help="tire-slip-onset: kinetic road friction (ice: 0.07)")
    studies.add_argument("--tolerance", type=float, default=0.5, help="bisection tolerance [N.m]")
    studies.add_argument("--stop", type=seconds, help="simulated time per run [s] (judder-onset 4.5, "
                         "tire-slip-onset 8)")
    studies.add_argument("--mu_s", type=float, nargs="+", default=[0.3, 0.4, 0.5])
    studies.add_argument("--fmus", type=Path, default=build_fmus.DEFAULT_OUT)
    studies.add_argument("--out", type=Path, default=Path("results"))
    run_ssp = sub.add_parser("ssp", help="run an SSP file with this project's master (CSV of the records)")
    run_ssp.add_argument("file", type=Path)
    run_ssp.add_argument("--step", type=seconds, required=True, help="communication step [s]")
    run_ssp.add_argument("--stop", type=seconds, help="default: the file's DefaultExperiment")
    run_ssp.add_argument("--record", nargs="+", help="instance.variable (default: every connected output)")
    run_ssp.add_argument("--out", type=Path, default=Path("results"))
    args = parser.parse_args(argv)
    if args.command == "list":
        for element in ELEMENTS:
            print(f"{element.__name__:12s} {element.description}")
        print("documented systems (systems/ssd/NAME.ssd; drivetrain-fmu run|report|export NAME):")
        for name in catalog():
            try:
                description = load_system(name).description
            except (ValueError, SyntaxError, KeyError) as exc:      # one bad file hides no other
                description = f"(cannot be read: {exc})"
            print(f"  {name:20s} {description}")
    elif args.command == "build":
        for path in build_fmus.build_all(args.out):
            print(f"built {path}")
    elif args.command == "study":
        _study(args)
    elif args.command == "ssp":
        from systems import ssp

        try:
            connections = ssp.read_ssp(args.file).connections
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, ET.ParseError) as exc:
            raise SystemExit(f"{args.file}: {' '.join(str(exc).split())}") from None
        record = args.record or list(dict.fromkeys(f"{c.source}.{c.output}" for c in connections))
        result = ssp.simulate(args.file, args.step, record, stop=args.stop, progress=True)
        args.out.mkdir(parents=True, exist_ok=True)
        target = args.out / f"{args.file.stem}.csv"
        with open(target, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["time"] + record)
            for n, t in enumerate(result.time):
                writer.writerow([f"{t:.6g}"] + [f"{result.signals[k][n]:.10g}" for k in record])
        print(f"wrote {target}")
    elif args.command == "export":
        from systems import ssp

        build_fmus.build_all(args.fmus, force=False)
        args.out.mkdir(parents=True, exist_ok=True)
        path = ssp.export(args.system, args.out / f"{args.system}.ssp", args.fmus, args.step, args.stop)
        stop, step = _or(args.stop, load_system(args.system).stop), _or(args.step, load_system(args.system).step)
        print(f"wrote {path}: run it at a step of {step:g} s (its step-mean compliances' T_comm), e.g.\n"
              f"  OMSimulator {path} --stopTime={stop:g} --stepSize={step:g} --resultFile={args.system}.csv\n"
              f"  ecos simulate --path {path} --stepSize {step:g} --stopTime {stop:g} "
              "--parameterSet initialValues")
    elif args.command == "report":
        build_fmus.build_all(args.fmus, force=False)
        _report(args.system, args.fmus, args.steps)
    elif args.command == "compare":
        _compare_r1(args.step, args.duration, args.out)
    else:
        build_fmus.build_all(args.fmus, force=False)
        _run_system(args.system, args.fmus, args.step, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
