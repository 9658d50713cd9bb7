"""The Modelica Standard Library's Rotational examples rebuilt from this project's FMUs.

Described once each, in ``systems/catalog/ssd/msl_friction.ssd``, ``msl_one_way_clutch.ssd`` and
``msl_simple_gear_shift.ssd``, with the parameters of MSL 4.0.0
(Modelica.Mechanics.Rotational.Examples.Friction, .OneWayClutch, .SimpleGearShift; MSL's
friction table mu_pos = [0, 0.5] is a constant mu = 0.5, so mu_s = mu_k = 0.5, or
mu_s = peak mu for OneWayClutch's engaged clutch, with r_eff n_surfaces = cgeo).

What each should show is the lock and unlock sequence of the MSL 4.0 regression results
(Dymola 2020x, DASSL, tolerance 1e-6; the Modelica Association's reference results of
MSL v4.0.0): ``EVENTS`` lists, per system, each stick flag's changes as (time, locked)
and ``SPEEDS`` speeds at given times, read from those results.  MSL's OneWayClutch
result also touches lock for 0.8 ms at 1.5 s, less than one communication step here: not
listed.
"""
from __future__ import annotations

import numpy as np

#: per system: {flag signal: [(instant [s], locked after it), ...]} of MSL 4.0's results
EVENTS = {
    "msl_friction": {
        "clutch.locked": [(0.00678, True), (0.05934, False), (0.10929, True), (0.53425, False), (1.66364, True)],
        "brake.locked": [(0.64061, True)],
    },
    "msl_one_way_clutch": {
        # MSL's "stuck" (|w_rel| < 1e-6) joins the freewheel's lock and the engaged clutch's
        "clutch.locked": [(0.0803, True), (0.167, False), (0.4307, True), (0.9505, False), (1.05, True),
                          (1.167, False), (1.7562, True)],
    },
    "msl_simple_gear_shift": {
        "gear.locked_b": [(2.0408, False)],
        "gear.locked_c": [(2.11079, True)],
    },
}
#: per system: {signal: [(time [s], value), ...]} of MSL 4.0's results
SPEEDS = {
    "msl_friction": {"clutch.w_1": [(2.0, 4.449), (2.5, 3.228), (3.0, 2.290)], "brake.w": [(1.0, 0.0), (3.0, 0.0)]},
    "msl_one_way_clutch": {"clutch.w_2": [(0.3, 0.28052), (2.0, -0.250)]},
    "msl_simple_gear_shift": {"gear.w_sun": [(1.0, 3.835), (2.0, 11.249), (3.0, 6.190), (5.0, 8.090)],
                              "gear.w_carrier": [(1.0, 1.534), (2.0, 4.499), (3.0, 6.190), (5.0, 8.090)]},
}
RECORD = {name: sorted({*EVENTS[name], *SPEEDS[name]}) for name in EVENTS}


def flag_changes(time, flag) -> list[tuple[float, bool]]:
    """(first communication point showing the new value, new value) of each change of ``flag``."""
    values = np.asarray(flag).astype(bool)
    changes = np.nonzero(values[1:] != values[:-1])[0] + 1
    return [(float(time[i]), bool(values[i])) for i in changes]


def comparison(name: str, result) -> list[tuple[str, str, float, float]]:
    """(signal, what, this run's value, MSL 4.0's value) of every documented event instant
    and speed of system ``name`` in ``result`` (a run recording RECORD[name]); an event
    missing from the run (or an extra one) is reported with nan on the missing side."""
    rows = []
    for key, expected in EVENTS[name].items():
        found = flag_changes(result["time"], result[key])
        for k in range(max(len(found), len(expected))):
            ours = found[k] if k < len(found) else (np.nan, None)
            theirs = expected[k] if k < len(expected) else (np.nan, None)
            state = ours[1] if ours[1] is not None else theirs[1]
            rows.append((key, "locks at [s]" if state else "unlocks at [s]", ours[0], theirs[0]))
    for key, points in SPEEDS[name].items():
        for t, value in points:
            i = int(np.argmin(np.abs(result["time"] - t)))
            rows.append((key, f"at {t:g} s [rad/s]", float(result[key][i]), value))
    return rows
