"""The step-convergence check of `report` (H, H/2, H/4: observed order and Richardson
error estimate), for a system without a reference."""
from __future__ import annotations

import csv
import math
import sys
import time

import numpy as np

from drivetrain_fmu.fmus.variables import REAL
from drivetrain_fmu.systems.master import CoSimulationError
from drivetrain_fmu.systems.signals import declared as _declared
from drivetrain_fmu.systems.signals import default_record as _default_record
from drivetrain_fmu.systems.signals import family_of as _family_of

from .checks import check_divides, fmus_for, out_folder, output_label, shown_name
from .errors import PROG, SimulationFailed, UsageError, simulation_failure
from .measure import REPORT_KEYS
from .simulation import cosimulate, file_torques, interruptible

#: the least width of the signal names' column of `report` and of the convergence check (longer names widen it)
SIGNAL_WIDTH = 20
#: step convergence: each step H is compared with H/2 and H/4 (halving: Richardson's ratio 2)
HALVINGS = (1, 2, 4)
#: an observed order below this is no convergence (the steps are too large for the system,
#: or an event moved): no error estimate is given
LEAST_ORDER = 0.5


def _convergence_keys(system) -> list[str]:
    """The Real signals the step-convergence check compares: the family's REPORT_KEYS
    where the system has them all, else what `run` records (its plotted signals, then every
    connected output) that is a Real variable (no lock flag or impact count)."""
    family = _family_of(system)
    declared = _declared(system)
    keys = REPORT_KEYS.get(family)
    if keys and all(key == "mesh.w_mean" or key.split(".", 1)[1] in declared.get(key.split(".", 1)[0], {})
                    for key in keys):
        return keys
    return [key for key in _default_record(system)
            if declared.get(key.split(".", 1)[0], {}).get(key.split(".", 1)[1]) == REAL]


def convergence(runs) -> dict:
    """Step convergence of one signal from its runs at a step h, h/2 and h/4 (arrays on
    their own grids): on the grid of h, d1 = RMS(y_h - y_h/2) and d2 = RMS(y_h/2 -
    y_h/4) (and their max), the observed order p = log2(d1 / d2), and by Richardson
    extrapolation (y_h - y = C h^p) the error of the run at h, d1 / (1 - 2^-p) (RMS and max,
    the max with the same p).  None for p and the errors when p < LEAST_ORDER or is not finite
    (no convergence observed); p None and errors 0 when the three runs are equal."""
    coarse = [np.asarray(values, dtype=float)[::k] for values, k in zip(runs, HALVINGS)]
    n = min(map(len, coarse))
    first, second = coarse[0][:n] - coarse[1][:n], coarse[1][:n] - coarse[2][:n]
    rms = [float(np.sqrt(np.mean(d * d))) for d in (first, second)]
    peak = [float(np.max(np.abs(d))) for d in (first, second)]
    span = float(np.ptp(coarse[2])) or 1.0
    measured = {"differences": rms, "max differences": peak, "range": span, "order": None,
                "error": None, "max error": None}
    if rms[0] == 0.0 and rms[1] == 0.0:
        return {**measured, "error": 0.0, "max error": 0.0}
    order = math.log2(rms[0] / rms[1]) if rms[1] > 0.0 and rms[0] > 0.0 else math.nan
    if not (math.isfinite(order) and order >= LEAST_ORDER):
        return {**measured, "order": order if math.isfinite(order) else None}
    factor = 1.0 / (1.0 - 2.0 ** -order)
    return {**measured, "order": order, "error": rms[0] * factor, "max error": peak[0] * factor}


def report_convergence(system, args, documented: bool) -> None:
    """The step-convergence check of any system: the same system at H, H/2 and H/4 (H: each
    --steps, default the file's step) as `run` runs it (separate FMUs, the torques its file
    binds); per signal the observed order and the Richardson estimate of the error of the
    run at H, divided by the signal's range (:func:`convergence`); each run's time on stderr."""
    label = output_label(system)
    stop = system.stop
    if stop is None:
        raise UsageError(f"{shown_name(system)}: its file gives no stop time (DefaultExperiment stopTime)")
    steps = args.steps or ([system.step] if system.step else [])
    if not steps:
        raise UsageError(f"{shown_name(system)}: its file gives no communication step; give --steps H")
    for step in steps:
        check_divides(step, stop, "--steps", system)
    keys = _convergence_keys(system)
    out = out_folder(args, "report", label)
    fmu_dir = fmus_for(system, args.fmus)
    torques = file_torques(system)
    why = ("--convergence" if documented else
           "an edited system: no monolithic reference (those exist for the documented systems and files equal to "
           "one), so its accuracy is estimated from its own convergence")
    print(f"{shown_name(system)}: step convergence over {stop:g} s ({why})")
    print(f"  the same system at H, H/2 and H/4 as `{PROG} run` runs it (separate FMUs, {torques} compliance "
          f"torques); on the grid of H: d1 = RMS(y_H - y_H/2), d2 = RMS(y_H/2 - y_H/4); observed order "
          f"p = log2(d1/d2) (the master holds each input over a step: p near 1, near 2 with step-mean "
          f"compliance torques in a run without friction or impact events); error of the run at H by Richardson "
          f"extrapolation: d1 / (1 - 2^-p); errors divided by each signal's range")
    rows = []
    for step in steps:
        results = []
        for k in HALVINGS:
            started = time.monotonic()
            with interruptible() as (at_point, state):
                try:
                    results.append(cosimulate(system, fmu_dir, step / k, progress=False, at_point=at_point))
                except CoSimulationError as exc:  # a diverging coupling makes an element refuse a step
                    raise SimulationFailed(f"at the step {step / k:g} s: {simulation_failure(exc, state['t'])}") from None
            print(f"  ran {label} at {step / k:g} s ({time.monotonic() - started:.1f} s)", file=sys.stderr, flush=True)
        print(f"  step H = {step:g} s (and {step / 2:g}, {step / 4:g} s):")
        width = max([SIGNAL_WIDTH, *(len(key) + 2 for key in keys)])
        print(f"    {'signal':<{width}}{'order p':<10}{'error at H: RMS':<18}max")
        for key in keys:
            m = convergence([r[key] for r in results])
            order = "-" if m["order"] is None else f"{m['order']:.2f}"
            if m["error"] is None:
                shown = (f"not converging at these steps (d1 {m['differences'][0] / m['range']:.2e}, "
                         f"d2 {m['differences'][1] / m['range']:.2e}): try a smaller --steps")
            else:
                shown = f"{m['error'] / m['range']:<18.2e}{m['max error'] / m['range']:.2e}"
            print(f"    {key:<{width}}{order:<10}{shown}")
            rows.append((step, key, "" if m["order"] is None else f"{m['order']:.4g}",
                         *(f"{d / m['range']:.4g}" for d in m["differences"]),
                         "" if m["error"] is None else f"{m['error'] / m['range']:.4g}",
                         "" if m["max error"] is None else f"{m['max error'] / m['range']:.4g}"))
    csv_path = out / f"{label}_convergence.csv"
    with open(csv_path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["step H [s]", "signal", "observed order", "RMS(y_H - y_H/2) / range",
                         "RMS(y_H/2 - y_H/4) / range", "RMS error at H / range", "max error at H / range"])
        writer.writerows(rows)
    print(f"wrote {csv_path}")
