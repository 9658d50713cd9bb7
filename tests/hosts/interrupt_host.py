"""A Python host (fmpy's FMU2Slave) that is interrupted inside an FMU's doStep, run in its own
process by tests/hosts/test_interrupts.py.

    python tests/hosts/interrupt_host.py FMU STEPS H INTERRUPTED [ELEMENT METHOD CALL]

runs STEPS doSteps of H from t = 0.  With ELEMENT METHOD CALL, the method METHOD of the
element class ELEMENT (the FMU's own copy of the element code, which runs in this
interpreter) is wrapped: its CALL-th call, within doStep INTERRUPTED (a number) or within
the fmi2GetReal of every Real output after doStep N (INTERRUPTED ``getN``), runs as usual,
then prints ``BLOCKED`` and sleeps until the test sends SIGINT.  The interrupted step is then
taken again from its start without the hook (the outputs after an interrupted get are got
again).  The process imports neither ``fmus`` nor
``solvers`` before the FMU does (the FMU's copy is the one under test).

Prints one line ``RESULT {json}``: the Real outputs after every step (float.hex), and for the
interrupted step what the host got (``KeyboardInterrupt`` or the exception), the file of the
innermost frame of its traceback, whether the Real outputs and the serialized FMU state
after it equal those before it, and the FMU's log messages of that call.
"""
from __future__ import annotations

import json
import signal
import sys
import time
import traceback


def main(fmu: str, steps: int, h: float, interrupted: str, element=None, method=None, call=None):
    # Ctrl-C raises KeyboardInterrupt here, as in an engineer's script, also where this process
    # inherited SIGINT ignored (a pytest-xdist worker may run with it ignored: Python then
    # installs no handler of its own and the test's SIGINT would be lost)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupted_step = int(interrupted) if not interrupted.startswith("get") else -1
    interrupted_get = int(interrupted[len("get"):]) if interrupted.startswith("get") else -1
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import (FMU2Slave, calloc, fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE,
                           fmi2CallbackFunctions, fmi2CallbackLoggerTYPE, free)

    md = read_model_description(fmu)
    slave = FMU2Slave(guid=md.guid, unzipDirectory=extract(fmu), modelIdentifier=md.coSimulation.modelIdentifier,
                      instanceName="host")
    messages = []
    callbacks = fmi2CallbackFunctions()
    callbacks.logger = fmi2CallbackLoggerTYPE(
        lambda env, name, status, category, text: messages.append([status, text.decode("utf-8", "replace")]))
    callbacks.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
    callbacks.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
    slave.instantiate(callbacks=callbacks, loggingOn=True)
    slave.setupExperiment(startTime=0.0)
    slave.enterInitializationMode()
    slave.exitInitializationMode()
    outputs = [v.valueReference for v in md.modelVariables if v.causality == "output" and v.type == "Real"]

    def state_bytes():
        state = slave.getFMUstate()
        data = bytes(slave.serializeFMUstate(state))
        slave.freeFMUstate(state)
        return data

    hooked = None
    if element is not None:
        # the element's model: an element FMU's class inherits it, a system FMU runs it
        cls = {e.__name__: e for e in sys.modules["drivetrain_fmu.fmus"].MODELS}[element]
        original = getattr(cls, method)
        count = [0]

        def hook(self, *args):
            result = original(self, *args)
            count[0] += 1
            if count[0] == call:
                print("BLOCKED", flush=True)
                time.sleep(120)         # until the test's SIGINT
            return result
        hooked = (cls, method, original, hook)

    rows, report = [], {}
    for n in range(steps):
        t = n * h
        if n == interrupted_step and hooked is not None:
            cls, name, original, hook = hooked
            setattr(cls, name, hook)
            before = (slave.getReal(outputs), state_bytes())
            del messages[:]
            try:
                slave.doStep(t, h)
                report["got"] = "returned"
            except BaseException as exc:    # what the host got: KeyboardInterrupt, or FMICallException
                report["got"] = type(exc).__name__
                report["detail"] = str(exc)
                report["raised_in"] = traceback.extract_tb(exc.__traceback__)[-1].filename
            setattr(cls, name, original)
            report["messages"] = list(messages)
            try:
                report["outputs_kept"] = slave.getReal(outputs) == before[0]
                report["state_kept"] = state_bytes() == before[1]
            except Exception as exc:        # the instance is lost (fmi2Fatal)
                report["after"] = f"{type(exc).__name__}: {exc}"
                break
        try:
            slave.doStep(t, h)
            if n == interrupted_get and hooked is not None:
                cls, name, original, hook = hooked
                setattr(cls, name, hook)
                del messages[:]
                try:
                    slave.getReal(outputs)
                    report["got"] = "returned"
                except BaseException as exc:
                    report["got"] = type(exc).__name__
                    report["raised_in"] = traceback.extract_tb(exc.__traceback__)[-1].filename
                setattr(cls, name, original)
                report["messages"] = list(messages)
            rows.append([x.hex() for x in slave.getReal(outputs)])
        except Exception as exc:
            report["after"] = f"{type(exc).__name__}: {exc}; {messages[-1:]}"
            break
    else:
        slave.terminate()
        slave.freeInstance()
    print("RESULT " + json.dumps({"rows": rows, **report}), flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    main(args[0], int(args[1]), float(args[2]), args[3],
         *((args[4], args[5], int(args[6])) if len(args) > 4 else ()))
