"""What pythonfmu 0.7.0's binary asks of an FMU's Python class: the base of :class:`fmus.shell.Shell`.

Every FMU carries pythonfmu's binary (``binaries/<platform>/``, behind our forwarder) and none
of pythonfmu's Python (build_fmus writes the FMU, its modelDescription.xml included):
importing pythonfmu's Fmi2Slave cost a system FMU's first instantiation in a Python host about
a quarter of its instructions (xml.etree, uuid, datetime and json, for the modelDescription
it writes at build time).  The binary (PySlaveInstance.cpp):

1. imports the entry point named in ``resources/slavemodule.txt`` and executes its text again,
   then takes the class whose ancestry holds a class named ``Fmi2Slave`` at the deepest place;
2. makes it with the keyword arguments ``instance_name``, ``resources``, ``logger`` and
   ``visible``, and calls ``_get_log_queue()`` once: a list it empties after every call,
   passing each entry's ``status`` (an fmi2Status number), ``category`` and ``msg`` to the
   host's logger;
3. calls the FMI methods by name on the instance (``setup_experiment``,
   ``enter_initialization_mode``, ``exit_initialization_mode``, ``do_step``, ``terminate``,
   ``get_real`` ... ``set_string``, ``_get_fmu_state``, ``_set_fmu_state``) and
   ``_fmu_state_to_bytes`` / ``_fmu_state_from_bytes`` on the class: the shell's.

The modelDescription.xml the build writes (``build_fmus.model_description``) declares
:data:`LOG_CATEGORIES`, the categories :meth:`Fmi2Slave.log` gives its messages.
"""
from __future__ import annotations

#: fmi2Status, as a log entry's ``status``
OK, WARNING, DISCARD, ERROR, FATAL = range(5)

#: the log categories every FMU declares: {name: description}; a message of status s goes to
#: CATEGORY[s]
LOG_CATEGORIES = {
    "logStatusWarning": "Log messages with fmi2Warning status.",
    "logStatusDiscard": "Log messages with fmi2Discard status.",
    "logStatusError": "Log messages with fmi2Error status.",
    "logStatusFatal": "Log messages with fmi2Fatal status.",
    "logAll": "Log all messages.",
}
CATEGORY = ("logAll", "logStatusWarning", "logStatusDiscard", "logStatusError", "logStatusFatal")


class LogEntry:
    """One message of the log queue, as the binary reads it (a plain object: the shell holds a
    weak reference to one, fmus.shell._pass_on_interrupt)."""

    def __init__(self, status: int, category: str, msg: str):
        self.status, self.category, self.msg = status, category, msg


class Fmi2Slave:
    """The FMU instance as the binary makes it (module docstring, 2.)."""

    def __init__(self, instance_name: str, resources: str | None = None, logger=None, visible: bool = False):
        self.instance_name, self.resources, self.visible = instance_name, resources, visible
        self.log_queue: list[LogEntry] = []

    def _get_log_queue(self) -> list:
        return self.log_queue

    def log(self, msg: str, status: int = OK) -> None:
        """Queue ``msg`` for the host's logger, in the category of its ``status``."""
        self.log_queue.append(LogEntry(status, CATEGORY[status], msg))
