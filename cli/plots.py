"""The plots of `run` and `compare` (matplotlib, the [cli] extra)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from drivetrain_fmu.systems.optional import require
from drivetrain_fmu.systems.signals import FLAGS, PLOTS
from drivetrain_fmu.systems.signals import family_of as _family_of

from .checks import output_label

#: per family: a row of zoomed panels (the labels of PLOTS' panels to zoom) over one period of
#: a stick-slip cycle, whose lock events are the 0 -> 1 steps of ``events``: the cycle with the
#: largest |``size``| (at this time scale the panels are solid bands)
ZOOMS = {"fan": {"events": "clutch.locked", "size": "clutch.w_slip",
                 "panels": ("clutch slip [rad/s]", "clutch torque [N.m]")}}
#: successive curves of a panel: solid, then dashed and dotted and thinner, so a curve that
#: coincides with an earlier one (w_1 and w_2 of a locked clutch) stays visible on top of it
LINE_STYLES = (("-", 2.2), ("--", 1.6), (":", 1.4), ("-.", 1.2))


def pyplot(extra: str = "cli"):
    """matplotlib.pyplot drawing into files (Agg), or MissingExtra naming ``extra``."""
    require("matplotlib", "plots need", extra).use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _stick_slip_window(time, events, size) -> tuple[float, float] | None:
    """(start, end) of one stick-slip period and a margin around it: between two successive
    lock events (0 -> 1 steps of ``events``), the cycle with the largest |``size``|; None
    with fewer than two lock events."""
    onsets = time[1:][np.diff(np.asarray(events, dtype=int)) == 1]
    if len(onsets) < 2:
        return None
    peaks = [np.max(np.abs(size[(time >= a) & (time <= b)])) for a, b in zip(onsets[:-1], onsets[1:])]
    k = int(np.argmax(peaks))
    a, b = onsets[k], onsets[k + 1]
    margin = 0.15 * (b - a)
    return max(time[0], a - margin), min(time[-1], b + margin)


def _draw_panel(ax, result, label, signals, window=None) -> None:
    """One panel: its signals in LINE_STYLES (a FLAGS panel stacked, one row per flag)."""
    stacked = label.startswith(FLAGS)
    shown = slice(None) if window is None else (result.time >= window[0]) & (result.time <= window[1])
    for row, (key, legend) in enumerate(signals):
        style, width = LINE_STYLES[row % len(LINE_STYLES)]
        values = result[key] * 0.8 + 1.2 * row if stacked else result[key]
        ax.plot(result.time[shown], values[shown], style, lw=width, label=legend)
    if stacked:      # one row per flag: 0 at its base line, 1 at 0.8 above it
        rows = range(len(signals))
        ax.set_yticks([1.2 * row + level for row in rows for level in (0.0, 0.8)],
                      [f"{legend}: {value}" for _, legend in signals for value in (0, 1)], fontsize=7)
        ax.set_ylim(-0.3, 1.2 * len(signals) - 0.1)
    ax.set_ylabel(label)


def plot_run(path: Path, system, result, record: list[str], units: dict) -> None:
    plt = pyplot()

    family = _family_of(system)
    title, panels = PLOTS.get(family) or (
        output_label(system), [(f"{k} [{units.get(k) or '1'}]", [(k, k)]) for k in record[:6]])  # a system of its own
    zoom = ZOOMS.get(family)
    window = zoom and _stick_slip_window(result.time, result[zoom["events"]], result[zoom["size"]])
    zoomed = [panel for panel in panels if window and panel[0] in zoom["panels"]]
    rows = len(panels) + (1 if zoomed else 0)
    fig = plt.figure(figsize=(8, 2.4 * rows + 1), layout="constrained")
    grid = fig.add_gridspec(rows, max(1, len(zoomed)))
    axes = []
    for n, (label, signals) in enumerate(panels):
        ax = fig.add_subplot(grid[n, :], sharex=axes[0] if axes else None)
        _draw_panel(ax, result, label, signals)
        ax.legend(fontsize=8, loc="best")
        if zoomed and (label, signals) in zoomed:
            ax.axvspan(*window, color="0.5", alpha=0.3, label="zoomed below")
            ax.legend(fontsize=8, loc="best")
        if n < len(panels) - 1:
            ax.tick_params(labelbottom=False)
        axes.append(ax)
    axes[0].set_title(f"{title}: {output_label(system)}", fontsize=10)
    axes[-1].set_xlabel("time [s]")
    for column, (label, signals) in enumerate(zoomed):
        ax = fig.add_subplot(grid[-1, column])
        _draw_panel(ax, result, label, signals, window)
        ax.set_xlabel("time [s]")
        ax.set_title(f"one judder period: t = {window[0]:.4g} to {window[1]:.4g} s", fontsize=9)
        ax.grid(alpha=0.3)
    fig.savefig(path, dpi=120, format="png")        # format: the path may be a partial file's
    plt.close(fig)
