"""The hot FMI calls of an FMU made on its compiled run, straight from the FMU's binary.

pythonfmu's binary turns every FMI call into a Python method call: the method looked up by
name, its arguments built as Python lists, its results converted back, the log queue
flushed: with the shell's entry point behind it, more work than a kernel's step.  The FMU's
binary (native/fmi2_forwarding.h) takes the table ``_API`` (a capsule of the C functions
below) from here after fmi2Instantiate, and calls them for fmi2DoStep, fmi2GetReal,
fmi2GetBoolean and fmi2SetReal, with the GIL, before pythonfmu.  Each either makes the whole
call on the model's run (its ``_run``, an element_kernel.Run: an element's ElementRun,
fmus.kernel_run; a system's SystemLoop, systems/system_kernel.py) as the shell would make it
and returns 0, or returns -1 having changed nothing (but an exchange the shell's get would
make first): the binary then makes the call through pythonfmu and the shell
(fmus/shell.py), which does everything else (the phase guard, a parameter, a refused or
failed step and its message, a step the kernel leaves to the model, an interrupt).

A call is made here only where the shell's would be exactly this: the instance is initialized
(a step) and has a run, no message is queued (a step), the value references are variables
of the run's array of the call's type (inputs only, for a set), and the run makes the call
(Run.take, ready, write).  A host repeats a few lists of value references: each call's is
matched against the earlier ones' (a plan made once per list and run).

Uncompiled, this module refuses to be imported and the binary calls pythonfmu for every call.
"""
from __future__ import annotations

import cython

if not cython.compiled:
    raise ImportError("fmus.fmi_kernel runs compiled only: the FMU's binary calls pythonfmu instead")

import _thread  # noqa: E402
import sys  # noqa: E402

from cython.cimports.cpython.pycapsule import PyCapsule_New  # noqa: E402
from cython.cimports.cpython.ref import Py_DECREF, Py_INCREF  # noqa: E402
from cython.cimports.libc.stdlib import free  # noqa: E402
from cython.cimports.libc.string import memcmp  # noqa: E402
from cython.cimports.drivetrain_fmu.fmus.element_kernel import Run, allocated  # noqa: E402

from drivetrain_fmu.fmus import kernel_run  # noqa: E402
from drivetrain_fmu.fmus.shell import INITIALIZED, interrupt_signal  # noqa: E402
from drivetrain_fmu.fmus.variables import BOOLEAN, INPUT, REAL  # noqa: E402

#: plans kept per call (a host asks a few fixed lists; beyond these the shell makes the call)
MAX_PLANS = cython.declare(cython.int, 16)


@cython.cclass
class Plan:
    """One list of value references of one call on one run: their slots in the run's array."""

    @cython.locals(run=Run, i=cython.Py_ssize_t, slot=cython.int)
    def __init__(self, slave, run, references: list, kind: str, write: bool):
        self.n = len(references)
        self.vr = cython.cast(cython.p_uint, allocated(self.n * cython.sizeof(cython.uint), "a plan of a call"))
        self.slots = cython.cast(cython.p_int, allocated(self.n * cython.sizeof(cython.int), "a plan of a call"))
        self.names, self.usable = [], True
        for i, reference in enumerate(references):
            self.vr[i] = reference
            var = slave._declared.get(reference)
            slot = -1 if var is None else run.slot_of(var.name)
            if slot < 0 or var.type != kind or (write and var.causality != INPUT):
                self.usable = False
            self.slots[i] = slot
            self.names.append(None if var is None else sys.intern(var.name))
        self.preparation = run.preparation(self.names, write) if self.usable else None

    def __dealloc__(self):
        free(self.vr)
        free(self.slots)


@cython.cclass
class Entry:
    """What the binary holds of one instance: the slave, and the plans of its calls."""

    def __init__(self, slave):
        self.slave, self.run = slave, None
        self.gets, self.booleans, self.sets = [], [], []

    def current(self):
        """1 when the slave has a kernel run now (the plans are dropped when it is a new one), else 0."""
        run = self.slave._run
        if run is not self.run:
            self.run = run
            self.gets, self.booleans, self.sets = [], [], []
        return run is not None

    @cython.locals(known=Plan, i=cython.Py_ssize_t)
    def plan(self, plans, vr, n, kind, write):
        for known in plans:
            if known.n == n and memcmp(known.vr, vr, n * cython.sizeof(cython.uint)) == 0:
                return known
        made = Plan(self.slave, self.run, [vr[i] for i in range(n)], kind, write)
        if len(plans) < MAX_PLANS:
            plans.append(made)
        return made


def bind():
    """The Entry (a new reference) of the FMU instance pythonfmu made last on this thread
    (kernel_run.take_made), or NULL (none, or an exception)."""
    try:
        slave = kernel_run.take_made()
        if slave is None:
            return cython.NULL
        entry = Entry(slave)
        Py_INCREF(entry)
        return cython.cast(cython.p_void, entry)
    except BaseException as exc:
        _interrupted(exc)
        return cython.NULL


def release(entry):
    """The binary's reference to ``entry`` dropped (fmi2FreeInstance)."""
    Py_DECREF(cython.cast(object, entry))


@cython.locals(entry=Entry)
def do_step(handle, t, h):
    entry = cython.cast(Entry, handle)
    try:
        slave = entry.slave
        # Shell.do_step's test: x - x == 0 exactly when x is finite
        if slave._fmi_phase is not INITIALIZED or slave.log_queue or not (0.0 < h and h - h == 0.0 and t - t == 0.0):
            return -1
        if not entry.current():
            return -1
        return 0 if entry.run.take(slave, t, h) == 1 else -1
    except BaseException as exc:
        return _interrupted(exc)


@cython.locals(entry=Entry, plan=Plan)
def _readable(entry, vr, n, kind):
    """The plan of a get of the ``n`` value references ``vr`` of ``kind`` (REAL or BOOLEAN),
    the feedthrough outputs among them up to date in the run's array; None where the shell
    makes the call."""
    if not entry.current():         # first: a new run drops the plans of the one before
        return None
    plan = entry.plan(entry.gets if kind is REAL else entry.booleans, vr, n, kind, False)
    if not plan.usable or entry.run.ready(entry.slave, plan.preparation) != 1:
        return None
    return plan


@cython.locals(entry=Entry, plan=Plan, i=cython.Py_ssize_t, x=cython.p_double)
def get_real(handle, vr, n, values):
    entry = cython.cast(Entry, handle)
    try:
        plan = _readable(entry, vr, n, REAL)
        if plan is None:
            return -1
        x = entry.run.x
        for i in range(plan.n):
            values[i] = x[plan.slots[i]]
        return 0
    except BaseException as exc:
        return _interrupted(exc)


@cython.locals(entry=Entry, plan=Plan, i=cython.Py_ssize_t, x=cython.p_double)
def get_boolean(handle, vr, n, values):
    entry = cython.cast(Entry, handle)
    try:
        plan = _readable(entry, vr, n, BOOLEAN)
        if plan is None:
            return -1
        x = entry.run.x
        for i in range(plan.n):
            values[i] = x[plan.slots[i]] != 0.0
        return 0
    except BaseException as exc:
        return _interrupted(exc)


@cython.locals(entry=Entry, plan=Plan)
def set_real(handle, vr, n, values):
    entry = cython.cast(Entry, handle)
    try:
        if not entry.current():
            return -1
        plan = entry.plan(entry.sets, vr, n, REAL, True)
        if not plan.usable:
            return -1
        return 0 if entry.run.write(entry.slave, plan.preparation, plan.slots, plan.n,
                                    cython.cast(cython.p_double, values)) == 1 else -1     # read only
    except BaseException as exc:
        return _interrupted(exc)


def _interrupted(exc):
    """An exception in a fast call, which changed nothing: -1, the shell makes the call (and
    meets the error again, which pythonfmu's path reports); an interrupt's signal is raised
    again, so that the shell's call meets it as it would have."""
    try:
        signum = interrupt_signal(exc)
        if signum is not None:
            _thread.interrupt_main(signum)
    except BaseException:       # the shell's call meets what failed here
        pass
    return -1


API.version = 1
API.bind = bind
API.release = release
API.do_step = do_step
API.get_real = get_real
API.get_boolean = get_boolean
API.set_real = set_real
#: the table the FMU's binary takes (PyCapsule_Import of this name)
_API = PyCapsule_New(cython.address(API), b"drivetrain_fmu.fmus.fmi_kernel._API", cython.NULL)
