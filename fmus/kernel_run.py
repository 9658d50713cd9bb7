"""An element FMU's model run by its compiled kernel, where it has one.

:func:`fmus.shell.element_fmu` puts :class:`KernelRun` between the shell and the element model.
Once initialized, an element whose class has a kernel (fmus/element_kernel.py, ``KERNELS``)
takes its steps, gets and undos on that kernel (``element_kernel.ElementRun``: its inputs and
outputs in a C array, its state as C values, every float the model's bit for bit), with one
call from the shell into compiled code per FMI call; the model falls behind and is written
(``sync``) before anything else reads or changes it (an FMU state taken or set).  A step the
kernel leaves to the model (an input out of its range, a value that is not finite, a friction
step that raises) is the model's: it refuses it or takes it, with its message.

The FMU's binary makes the hot calls on the same run without pythonfmu where it can
(fmus/fmi_kernel.py, which finds the instance through :func:`made`).

Uncompiled (element_kernel refuses to be imported), or for an element without a kernel, the
model runs alone: every method here then is the model's.
"""
from __future__ import annotations

import _thread
import weakref

try:
    from .element_kernel import ElementRun, kernel_of
except ImportError:     # uncompiled: the models run
    ElementRun = kernel_of = None


#: thread ident -> weak reference to the FMU instance made last on that thread (made):
#: fmus.fmi_kernel's bind hands it to the FMU's binary right after pythonfmu made it
_MADE = {}


def made(slave):
    """Note ``slave`` as the FMU instance made last on this thread (Shell.__init__)."""
    _MADE[_thread.get_ident()] = weakref.ref(slave)


def take_made():
    """The FMU instance made last on this thread, if not taken yet and alive, else None."""
    ref = _MADE.pop(_thread.get_ident(), None)
    return None if ref is None else ref()


class KernelRun:
    """The model protocol's driving methods (fmus.model) over the element's kernel, once
    initialized (module docstring)."""

    #: the element_kernel.ElementRun of the initialized model, or None: the model runs alone
    _run = None

    def _new_run(self):
        """The kernel run of the initialized model, or None (uncompiled, or no kernel for its
        class: element_kernel.kernel_of; an element FMU steps it at every doStep)."""
        if ElementRun is None:
            return None
        kernel = kernel_of(self, self.MODEL)
        return None if kernel is None else ElementRun(self, kernel)

    def initialize(self):
        super().initialize()
        self._run = self._new_run()

    def take_step(self, t: float, h: float):
        run = self._run
        if run is not None:
            if run.step(t, h):
                return None
            run.hand_over()     # the model takes this step: from what the kernel holds
        return super().take_step(t, h)

    def undo_step(self):
        run = self._run
        if run is not None and run.stepped:
            run.undo()
        else:
            super().undo_step()
            if run is not None:
                run.stale = True

    def reader(self, names, convert):
        by_model = super().reader(names, convert)
        planned = [None, None]          # the run's plan of these variables, and its run

        def read(model):
            run = model._run
            if run is not None:
                if planned[1] is not run:
                    planned[:] = run.plan(names), run
                values = run.read(planned[0], convert)
                if values is not None:
                    return values
                run.sync()              # a feedthrough output the model words (or computes)
            return by_model(model)
        return read

    def writer(self, names):
        write = super().writer(names)

        def write_inputs(model, values):
            write(model, values)
            if model._run is not None:
                model._run.inputs_set = True
        return write_inputs

    def record(self) -> dict:
        if self._run is not None:
            self._run.sync()
        return super().record()

    def restore(self, saved: dict, why_not_restorable):
        """The model's restore, from the model as the kernel holds it (what a record that
        cannot be set leaves); then a new run (the parameters may have changed)."""
        if self._run is not None:
            self._run.sync()
        super().restore(saved, why_not_restorable)
        self._run = None if self.state is None else self._new_run()
