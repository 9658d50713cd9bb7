"""How the command ends: its exit statuses, the errors that choose them, and SIGTERM
handled as Ctrl-C."""
from __future__ import annotations

import signal

from drivetrain_fmu.systems.master import CoSimulationError

PROG = "drivetrain-fmu"
FAILED, USAGE, INTERRUPTED = 1, 2, 130
#: SIGTERM (timeout, a batch scheduler, CI) ends a command as Ctrl-C does, with the status
#: of a command killed by SIGTERM (128 + 15), as shells report it
TERMINATED = 128 + signal.SIGTERM
#: the reader of stdout went away (`drivetrain-fmu list | head -3`): ended quietly with the
#: status of a command killed by SIGPIPE (128 + 13), as shells report it
CLOSED_PIPE = 128 + 13


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line (its whitespace runs made single spaces), cut to ``limit``
    characters with '...': how every message of the command quotes a failure."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


class UsageError(Exception):
    """A user mistake found before the simulation: exit status 2."""


class SimulationFailed(Exception):
    """The simulation did not complete, or its results could not be written: exit status 1."""


class Terminated(KeyboardInterrupt):
    """SIGTERM: handled as Ctrl-C (stopped at a communication point, what was computed
    written, the temporary files removed), exit status TERMINATED."""


def on_sigterm(_signum, _frame):
    raise Terminated


class Exit(SystemExit):
    """How main() ends on an error: its message (already printed on stderr) and the exit
    status (``code``)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.code = status


def simulation_failure(exc, t: float) -> SimulationFailed:
    """One or two lines of a failed FMI call: what failed, when, and the FMU's first message."""
    if isinstance(exc, CoSimulationError):
        first = str(exc).splitlines()[0]
        detail = f"\n  the FMU says: {one_line(exc.messages[0])}" if exc.messages else ""
        return SimulationFailed(f"the simulation failed at t = {t:g} s: {first}{detail}")
    return SimulationFailed(f"the simulation failed at t = {t:g} s: {one_line(exc)}")
