"""drivetrain-fmu study KIND: the threshold studies of systems.study, CSV and plot."""
from __future__ import annotations

from drivetrain_fmu.fmus import ELEMENTS
from drivetrain_fmu.systems import study

from .checks import element_fmus, or_default, out_folder

#: per study: plot title and the label (words and unit) of each CSV column; "KEY legend" is
#: the legend of a threshold's curve.  The bisection brackets each threshold: PARAMETER_threshold
#: is the smallest value tried at which the effect occurs, PARAMETER_below the largest at
#: which it did not
STUDY_PLOTS = {
    "judder-onset": ("Engine torque at which the clutch starts to judder (stick-slip in steady state)", {
        "T_S": "clutch static friction capacity T_S [N.m]", "T_C": "clutch kinetic friction capacity T_C [N.m]",
        "T0_threshold": "engine torque at judder onset [N.m]",
        "T0_threshold legend": "lowest engine torque tried with judder [N.m]",
        "T0_below": "highest engine torque tried without judder [N.m]"}),
    "tire-slip-onset": ("Engine torque on ice beyond which the driven tire no longer settles to rolling", {
        "mu_k_road": "kinetic tire-road friction coefficient [-]",
        "T0_threshold": "engine torque at the tire-slip onset [N.m]",
        "T0_threshold legend": "torque tried nearest the onset at which the tire rolls [N.m]",
        "T0_below": "torque tried nearest the onset at which the tire slips or spins [N.m]"}),
    "breakaway": ("Torque on a locked clutch at which it breaks away (starts to slip)", {
        "mu_s": "static friction coefficient of the clutch mu_s [-]",
        "tau_threshold": "breakaway torque on body 1 [N.m]",
        "tau_threshold legend": "lowest torque tried at which the clutch slips [N.m]",
        "tau_below": "highest torque tried at which the clutch still holds [N.m]"}),
}


def execute(args) -> None:
    """Threshold studies (systems.study) on this machine's cores or a dask cluster: CSV and plot in
    OUT/study/KIND/."""
    out = out_folder(args, "study", args.kind)
    element_fmus([e.__name__ for e in ELEMENTS], args.fmus)
    client = study.study_workers(args.scheduler)
    try:
        if args.kind == "judder-onset":
            # Fan et al. F2: the engine torque above which the clutch sticks and slips in steady state
            spec = study.Study("fan", "stick_slip_cycles_per_second",
                               grid={"T_S": args.T_S, "T_C": args.T_C}, fixed={"stop": or_default(args.stop, 4.5)})
            rows = study.threshold_search(spec, args.fmus, client, "T0", or_default(args.low, 300.0),
                                          or_default(args.high, 323.47), level=0.0, tolerance=args.tolerance)
            x, y = ("T_C", "T_S") if len(args.T_S) > 1 and len(args.T_C) > 1 else ("T_C" if len(args.T_C) > 1 else "T_S", None)
        elif args.kind == "tire-slip-onset":
            # Fan et al. F3 (ice, negative torque): the torque beyond which the driven tire no
            # longer settles to rolling within the run (stick-slip or spinning in its last third)
            spec = study.Study("fan", "driven_tire_rolls", grid={"mu_k_road": args.mu_k_road},
                               fixed={"case": "F3", "stop": or_default(args.stop, 8.0)})
            rows = study.threshold_search(spec, args.fmus, client, "T0", or_default(args.low, -170.0),
                                          or_default(args.high, -160.0), level=0.5, tolerance=args.tolerance)
            x, y = "mu_k_road", None
        else:
            spec = study.Study("clutch_hold", "breakaway", grid={"mu_s": args.mu_s})
            rows = study.threshold_search(spec, args.fmus, client, "tau", 0.0, 1000.0, level=0.5, tolerance=0.01)
            x, y = "mu_s", None
    finally:
        client.close()
    csv_path = study.write_csv(rows, out / f"{args.kind}.csv")
    value = next(key for key in rows[0] if key.endswith("_threshold"))
    title, labels = STUDY_PLOTS[args.kind]
    png = study.plot(rows, x, value, out / f"{args.kind}.png", y=y, title=title, labels=labels,
                     below=value.replace("_threshold", "_below"))
    for row in rows:
        print("  " + ", ".join(f"{k} = {v:.6g}" for k, v in row.items()))
    print(f"wrote {csv_path} and {png}")
