"""Safe unloading of pythonfmu 0.7.0's native library (binaries/linux64/<model>.so).

That library keeps its interpreter guard in a global ``std::shared_ptr<PyState>``
and resets it twice when it goes away: the C++ static destructor of the pointer runs
first (an exit handler, or ``__cxa_finalize`` at dlclose), then the library's
``__attribute__((destructor))`` function ``finalizePythonInterpreter()`` assigns
``nullptr`` to the already destroyed pointer, reading and decrementing the freed
control block.  When that block has gone to glibc's unsorted bin the decrement lands
on a list pointer and the process aborts with "corrupted double-linked list" (seen
in CI at interpreter exit, both in pytest and in a plain fmpy script; valgrind flags
the invalid read in ``finalizePythonInterpreter`` on every run).

The fix, applied once per binary and process when an element is instantiated:

* open the binary once more with RTLD_NODELETE, so it is never unloaded before the
  process exits: a held handle alone is not enough, since fmpy's ``freeInstance``
  already calls ``freeLibrary`` and a script that calls ``freeLibrary`` as well closes
  the library twice (the first pythonfmu library of a process is NODELETE anyway through
  its STB_GNU_UNIQUE symbols; every later one, another FMU or another copy, is not);
* register ``finalizePythonInterpreter`` itself with ``__cxa_atexit``.  It is
  registered after the library's static initialisation, so it runs before the static
  destructor: the pointer is reset while it is still alive (in a Python host that
  only joins PyState's finished helper thread; in a C host it finalises the
  interpreter exactly as the static destructor would), and the two later resets
  find a null pointer and do nothing.

That applies to FMUs whose ``<model>.so`` is pythonfmu's library itself (builds with
``--python-hosts-only``).  In the FMUs with the bundled runtime ``<model>.so`` is a small
forwarder and pythonfmu's library is ``libdrivetrain_pythonfmu.so`` beside it, which the
runtime starter loads once per process with RTLD_NODELETE and orders the same way at
exit (host_support.py); there is nothing to do here for them, and pinning the forwarder
would keep every extracted copy mapped (a parameter sweep with fmpy's ``simulate_fmu``
extracts the FMU once per run).
"""
from __future__ import annotations

import ctypes
import os

_ORDERED: dict[str, ctypes.CDLL] = {}
#: pythonfmu's library in FMUs with the bundled runtime (host_support.PYTHONFMU_LIBRARY)
FORWARDED_LIBRARY = "libdrivetrain_pythonfmu.so"


def order_native_exit(resources: str | None, model_identifier: str) -> bool:
    """Apply the fix to ``<resources>/../binaries/linux64/<model_identifier>.so``.

    Returns True when the binary is (now or already) protected, False when there is no
    such binary (the element runs in-process, e.g. while pythonfmu builds it).
    """
    if not resources:
        return False
    binary = os.path.realpath(os.path.join(resources, os.pardir, "binaries", "linux64",
                                           model_identifier + ".so"))
    if binary in _ORDERED:
        return True
    if not os.path.isfile(binary):
        return False
    if os.path.isfile(os.path.join(os.path.dirname(binary), FORWARDED_LIBRARY)):
        return True             # a forwarder: the runtime starter orders pythonfmu's exit
    library = ctypes.CDLL(binary, mode=os.RTLD_NOW | os.RTLD_NODELETE)
    reset = ctypes.cast(library.finalizePythonInterpreter, ctypes.c_void_p)
    cxa_atexit = ctypes.CDLL(None).__cxa_atexit
    cxa_atexit.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    cxa_atexit.restype = ctypes.c_int
    if cxa_atexit(reset, None, None) != 0:
        raise OSError(f"__cxa_atexit refused to register the exit handler of {binary}")
    _ORDERED[binary] = library
    return True
