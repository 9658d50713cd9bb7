"""Multi-rate steps (``--rate INST=H``): checked once, for the master (systems.ssp.run_system),
the system FMU (systems.composite.describe) and the command line alike."""
from __future__ import annotations

import math


def checked_rates(rates, components: dict, step: float, classes, step_name: str = "internal step",
                  where: str = "in this FMU") -> dict:
    """{inst: step in s} of ``rates`` ({inst: H} or 'inst=H' texts), checked: each names a
    component (``where``: of what, for the message) that has a state to advance, once, with
    a finite step that is a whole multiple (>= 1) of ``step`` (the system FMU's internal
    step; for systems.ssp.run_system, the master's step: ``step_name``)."""
    allowed = [inst for inst, c in components.items()
               if not getattr(classes.get(c.element), "stateless", False)]     # fmus.model contract, point 9
    pairs = rates.items() if isinstance(rates, dict) else [_rate_text(text) for text in rates]
    chosen = {}
    for inst, value in pairs:
        option = f"--rate {inst}={value}"
        if inst not in allowed:
            why = (f"{inst} ({components[inst].element}) has no state: it is evaluated at every {step_name}"
                   if inst in components else f"no component {inst!r} {where}")
            raise ValueError(f"{option}: {why}; components that take a rate: {', '.join(allowed)}")
        if inst in chosen:
            raise ValueError(f"{option}: {inst} is given a rate twice")
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ValueError(f"{option}: the step must be a finite number > 0 (seconds)")
        multiple = round(value / step)
        if multiple < 1 or abs(value - multiple * step) > 1e-9 * value:
            raise ValueError(f"{option}: {value!r} s is not a whole multiple of the {step_name} {step!r} s "
                             f"(nearest: {max(multiple, 1)} x {step!r} = {max(multiple, 1) * step!r} s)")
        chosen[inst] = float(value)
    return chosen


def _rate_text(text: str) -> tuple[str, float]:
    inst, equals, value = str(text).partition("=")
    try:
        return inst.strip(), float(value)
    except ValueError:
        raise ValueError(f"--rate {text!r}: give INST=H (a component and its step in s), e.g. vehicle=1e-3") \
            from None
