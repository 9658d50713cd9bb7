"""The element, solver and system code compiled into CPython extension modules for the FMUs.

Every FMU carries our Python modules in ``resources/`` (``solvers``, ``fmus`` and, in a
system FMU, ``drivetrain_composite``).  The build also compiles each of them, unchanged,
with Cython and gcc into an extension module put beside its source
(``resources/solvers/friction.cpython-311-x86_64-linux-gnu.so`` next to ``friction.py``).
Python's import system prefers an extension module to a source file in the same folder, so
the FMU runs the compiled code; the sources stay for reading, tracebacks of the pure build
and the build fingerprint.

What compiling changes: the Python bytecode interpreter no longer dispatches each operation
of our code; the operations themselves (float arithmetic on Python floats, calls into the
``math`` module, dictionary and attribute access) are the same CPython calls, so results are
bit-identical to the source's (tests/hosts/test_compiled_modules.py checks a Z3 and a Fan F2 run
of compiled and pure FMUs).  The Cython directives keep Python's semantics where Cython
would otherwise differ: annotations are not turned into C types (an ``int`` annotation
would reject an ``IntEnum``), functions are real function objects (``binding``: wrapping
with ``functools.wraps`` works), and gcc may not fuse a multiply and an add
(``-ffp-contract=off``).

The solvers' hot numerics are kernels (``solvers/*_kernel.py``): tools/generate_kernels.py
generates each from its reference functions (solvers/ode.py's stage sums and error norm,
solvers/vehicle_closed_form.py's closed-form dynamics), declaring C doubles, ints and lists
for their locals in Cython's pure-Python mode (``@cython.locals``): compiled, they are the
same IEEE operations in the same order without a Python float per operation, so results
stay bit-identical (tests/numerics/test_kernels.py).  The friction system's kernels are
written by hand, its stick/slip decisions being loops over modes rather than formulas:
solvers/friction_kernel.py (a system's matrices as C arrays and the calls a step makes over
C doubles) and solvers/friction_ode_kernel.py (its ODE phases: Dormand-Prince with event
location), tested bit for bit against solvers/friction.py (tests/numerics/test_friction_kernel.py).  Cython reads ``import cython`` at compile time
(the extension module imports nothing); an uncompiled kernel refuses to be imported, and
its reference module keeps its own functions.  Only the kernels know Cython: every other
module is compiled unchanged and imports no ``cython``.  The frozen dataclasses a system FMU
makes at import (fmus/variables.pxd, solvers/budget.pxd, friction.pxd, thermal.pxd) are
declared extension types with untyped attributes: Cython then writes their dataclass methods
in C, where the standard library writes them as text and compiles each at every import (30
methods, a fifth of a system FMU's first instantiation).  A kernel
whose C methods another kernel calls declares them in a .pxd beside its source
(solvers/friction_kernel.pxd, which fmus/element_kernel.pxd cimports, which
systems/system_kernel.py cimports): Cython reads the declarations of a module and of those it
cimports, in turn (:func:`declarations`), and they are part of the cache's key
(:func:`module_text`).

Every CPython host, compiled: the FMUs carry the extension modules of each CPython minor
version of :data:`HOST_VERSIONS` the build machine has an interpreter for (with its C
headers), each under that version's own file ending, side by side
(``friction.cpython-310-x86_64-linux-gnu.so`` ... ``friction.cpython-313-...so``): a host
interpreter imports the one of its version and ignores the others, and a host of a version
the FMU carries none for (3.14, a free-threaded build, PyPy) imports the source.
:func:`host_pythons` finds the interpreters: the build's own, then ``python3.X`` on PATH,
then pyenv's ``$PYENV_ROOT/versions/3.X.*`` (newest first); each is asked for its version,
file ending and headers, and one without headers or free-threaded is left out with the
reason.  Cython's C is the same for every version (its version checks are C preprocessor
conditions): each module is cythonized once, then gcc compiles it once per version, on every
core.

Extension modules are cached per module, source, toolchain and target version in
``$XDG_CACHE_HOME/drivetrain-fmu/extensions`` (default ``~/.cache``): a build compiles only
what changed (a first build compiles them all: the README gives the time
benchmarks/readme_trial.py measured); a module no build has used for 30 days is removed.
The folder is locked while compiling, so that concurrent builds (the tests' processes)
compile each module once; a build whose modules are all cached reads them without taking
the lock, and a build that waits for it says so (what it waits for and who holds it) every
15 s.  Compiling says each module done (``compiled i/N name``).

The modules of a process are process-global: an FMU loaded by a Python process that has
already imported ``fmus`` and ``solvers`` runs those (same source: the fingerprint check
passes).  :func:`prefer_compiled` lets such a process (the ``drivetrain-fmu`` command) import
them from the cache too, where the cache holds them compiled from the very sources it would
import.
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

#: the CPython minor versions the FMUs carry compiled element code for (where the build has them)
HOST_VERSIONS = ("3.10", "3.11", "3.12", "3.13")
#: Cython directives (see the module docstring for why each is set)
DIRECTIVES = {"language_level": "3", "binding": "True", "annotation_typing": "False"}
#: gcc's flags: CPython's own semantics flags, no contraction of a*b+c into one rounding
CFLAGS = ("-O2", "-fPIC", "-shared", "-fwrapv", "-fno-strict-aliasing", "-ffp-contract=off")
#: strip's command: the symbol tables go (the FMUs' size); with the environment variable
#: DRIVETRAIN_FMU_SYMBOLS=1 at build time they stay (the same code, its functions named in a
#: profiler such as callgrind; cached apart: the command is part of the toolchain's key)
SYMBOLS_VARIABLE = "DRIVETRAIN_FMU_SYMBOLS"
STRIP = ("strip", "--strip-debug") if os.environ.get(SYMBOLS_VARIABLE) == "1" else ("strip", "--strip-unneeded")
#: a cached extension module no build has used for this long is removed (every source edit
#: adds one per changed module: 0.1 to 0.5 MB)
UNUSED_FOR = 30 * 86400.0
#: the cache's lock file (held while compiling; it names the process that holds it)
LOCK = ".lock"
#: while waiting for another build's compiling, a line every this many seconds
WAIT_REPORT = 15.0


class CompileError(RuntimeError):
    """A module could not be compiled (the message names it and the tool's output)."""


def extension_suffix() -> str:
    """The file ending CPython of this build gives extension modules (.cpython-311-x86_64-linux-gnu.so)."""
    return sysconfig.get_config_var("EXT_SUFFIX")


def cache_folder() -> Path:
    """``$XDG_CACHE_HOME/drivetrain-fmu/extensions`` (default ``~/.cache``) where it can be made
    and written; else (a read-only home) a folder of this user's in the temporary folder, made
    private and refused if another user could have put modules there.  CompileError when
    neither is usable."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    preferred = Path(base) / "drivetrain-fmu" / "extensions"
    try:
        preferred.mkdir(parents=True, exist_ok=True)
        with open(preferred / LOCK, "a"):
            return preferred
    except OSError:
        pass
    fallback = Path(tempfile.gettempdir()) / f"drivetrain-fmu-extensions-{os.getuid()}"
    try:
        fallback.mkdir(mode=0o700, exist_ok=True)
        status = os.lstat(fallback)
        if stat.S_ISDIR(status.st_mode) and status.st_uid == os.getuid() and not status.st_mode & 0o022:
            with open(fallback / LOCK, "a"):
                return fallback
    except OSError:
        pass
    raise CompileError(f"no folder for the compiled modules: {preferred} cannot be written and {fallback} is "
                       "not a private folder of this user's")


@dataclass(frozen=True)
class TargetPython:
    """A CPython the element code is compiled for: what an extension module depends on of it."""

    executable: str
    version: str            # sys.version (the full build string: part of the cache key)
    short: str              # "3.12"
    ext_suffix: str         # ".cpython-312-x86_64-linux-gnu.so"
    include: str            # the folder of its Python.h

    @classmethod
    def current(cls) -> "TargetPython":
        """The Python running this build."""
        namespace = {}
        exec(DESCRIBE, namespace)
        return cls(**namespace["fields"])


#: a TargetPython's fields of the interpreter that runs it (this one, or another: _ask)
DESCRIBE = """import sys, sysconfig
fields = {"executable": sys.executable, "version": sys.version,
          "short": f"{sys.version_info[0]}.{sys.version_info[1]}",
          "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX"), "include": sysconfig.get_paths()["include"]}
"""


def _ask(executable: str):
    """(TargetPython, "") of the interpreter ``executable``, or (None, why it cannot be one)."""
    script = DESCRIBE + ("import json\nprint(json.dumps([fields, sys.implementation.name, "
                         "bool(sysconfig.get_config_var('Py_GIL_DISABLED'))]))\n")
    try:
        done = subprocess.run([executable, "-I", "-c", script], capture_output=True, text=True, timeout=60)
        fields, implementation, free_threaded = json.loads(done.stdout.splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None, "does not run"
    if implementation != "cpython":
        return None, f"is {implementation}, not CPython"
    if free_threaded:
        return None, "is a free-threaded build, which pythonfmu's binary cannot run in (docs/hosts.md)"
    if not (Path(fields["include"]) / "Python.h").is_file():
        return None, f"has no C headers (no Python.h in {fields['include']})"
    return TargetPython(**fields), ""


def _candidates(short: str) -> list[str]:
    """Interpreters that may be CPython ``short``: ``python3.X`` on PATH, then pyenv's
    versions of it, newest first."""
    found = [shutil.which(f"python{short}")]
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    releases = sorted(pyenv.glob(f"{short}.*/bin/python{short}"),
                      key=lambda path: [int(part) if part.isdigit() else -1
                                        for part in path.parts[-3].split(".")], reverse=True)
    return [str(path) for path in [*found, *releases] if path]


@functools.lru_cache(maxsize=None)
def host_pythons(versions: tuple = HOST_VERSIONS) -> tuple:
    """(the TargetPython of each of ``versions`` found on this machine, the build's own first;
    {version: why none was taken} for the others).  Found: the build's own interpreter, then
    :func:`_candidates`; the first one of a version that is CPython, not free-threaded and
    has its C headers is taken."""
    own = TargetPython.current()
    taken, missing = {}, {}
    if own.short in versions and (Path(own.include) / "Python.h").is_file():
        taken[own.short] = own
    for short in versions:
        if short in taken:
            continue
        reasons = []
        for executable in dict.fromkeys(_candidates(short)):
            target, why = _ask(executable)
            if target is not None and target.short == short:
                taken[short] = target
                break
            reasons.append(f"{executable} {why or f'is CPython {target.short}'}")
        else:
            missing[short] = "; ".join(reasons) or f"no python{short} on PATH or in pyenv"
    return tuple(taken[short] for short in sorted(taken, key=lambda s: (s != own.short, s))), missing


def chosen_pythons(versions=None) -> list:
    """The targets of a build: ``versions`` (e.g. ["3.11", "3.12"]; default HOST_VERSIONS)
    found on this machine (:func:`host_pythons`).  CompileError for a version not in
    HOST_VERSIONS, or none found."""
    asked = tuple(versions or HOST_VERSIONS)
    unknown = sorted(set(asked) - set(HOST_VERSIONS))
    if unknown:
        raise CompileError(f"no compiled element code for CPython {', '.join(unknown)}: the versions are "
                           f"{', '.join(HOST_VERSIONS)}")
    targets, _ = host_pythons(tuple(sorted(set(asked))))
    if not targets:
        raise CompileError(f"none of CPython {', '.join(asked)} with its C headers is on this machine")
    return list(targets)


@functools.lru_cache(maxsize=None)
def toolchain(target: TargetPython | None = None) -> str:
    """What an extension module depends on besides its source and name: Cython's version,
    the target CPython's (default the running one) and its headers, gcc's, the commands'
    options; CompileError naming a missing tool."""
    target = target or TargetPython.current()
    try:
        import Cython
    except ImportError:
        raise CompileError("Cython is not installed: it compiles the element code into the FMUs "
                           "(pip install cython)") from None
    gcc = shutil.which("gcc")
    if gcc is None:
        raise CompileError("gcc is not on PATH: it compiles the element code into the FMUs "
                           "(Debian: apt-get install gcc)")
    if shutil.which(STRIP[0]) is None:
        raise CompileError("strip is not on PATH: it strips the compiled element code for the FMUs "
                           "(Debian: apt-get install binutils)")
    include = Path(target.include)
    if not (include / "Python.h").is_file():
        raise CompileError(f"CPython's C headers are not installed (no Python.h in {include}): they compile the "
                           f"element code into the FMUs (Debian: apt-get install python{target.short}-dev)")
    gcc_version = subprocess.run([gcc, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    return "\n".join([Cython.__version__, target.version, gcc_version, repr(sorted(DIRECTIVES.items())),
                      repr(CFLAGS), str(include), repr(STRIP)])


#: a project module a source cimports (its C declarations: the .pxd beside its source)
#: a project module cimported: in a module (pure Python mode) or in a .pxd
CIMPORT = re.compile(r"cython\.cimports\.(drivetrain_fmu\.[\w.]+) import|^from (drivetrain_fmu\.[\w.]+) cimport", re.M)


def declarations(name: str, source: Path) -> dict:
    """``{qualified module name: its .pxd's text}``: the C declarations Cython reads compiling
    the module ``name`` from ``source``: its own (a .pxd beside the source) and those of the
    project's modules it cimports (``from cython.cimports.drivetrain_fmu... import``), and
    of those their declarations cimport (``from drivetrain_fmu... cimport``)."""
    source = Path(source)
    found = {}
    own = source.with_suffix(".pxd")
    if own.is_file():
        found[name] = own.read_bytes()
    pending = [source.read_text(), *(text.decode() for text in found.values())]
    while pending:
        for match in CIMPORT.findall(pending.pop()):
            other = match[0] or match[1]
            if other not in found:
                found[other] = Path(__file__).parent.joinpath(*other.split(".")[1:]).with_suffix(".pxd").read_bytes()
                pending.append(found[other].decode())
    return found


def module_text(name: str, source: Path) -> bytes:
    """What the extension module ``name`` is compiled from: ``source``'s text and the
    :func:`declarations` it is compiled with (the cache's key: :func:`cached_path`)."""
    return _with_declarations(Path(source).read_bytes(), declarations(name, source))


def _with_declarations(text: bytes, declared: dict) -> bytes:
    """A source's ``text`` followed by the ``declared`` it is compiled with (:func:`module_text`)."""
    for other, declarations_text in sorted(declared.items()):
        text += f"\n# declarations of {other}\n".encode() + declarations_text
    return text


def cached_path(name: str, text: bytes, target: TargetPython | None = None) -> Path:
    """Where the extension module ``name`` compiled from ``text`` (:func:`module_text`) by this
    toolchain for ``target`` (default the running CPython) is cached."""
    target = target or TargetPython.current()
    key = hashlib.sha256(f"{name}\n{toolchain(target)}\n".encode() + text).hexdigest()[:24]
    return cache_folder() / f"{name}-{key}{target.ext_suffix}"


def extensions(modules: dict, targets=None) -> dict:
    """``{qualified module name: its source file}`` -> ``{the extension module's path in the
    FMU ('resources/solvers/friction.cpython-311-x86_64-linux-gnu.so'): its bytes}`` for each
    TargetPython of ``targets`` (default the running one), compiled or taken from the cache.
    CompileError naming the module when one fails.

    The cache's lock is taken only when a module must be compiled (a cached module is read
    without waiting for anyone).  What is waited for and why, and each module compiled
    (``i/N name``), is said on stderr."""
    folder = cache_folder()
    targets = list(targets or [TargetPython.current()])
    # read once: key and code
    texts = {name: Path(source).read_bytes() for name, source in modules.items()}
    declared = {name: declarations(name, source) for name, source in modules.items()}
    cached = {(name, target): cached_path(name, _with_declarations(texts[name], declared[name]), target)
              for name in texts for target in targets}
    if all(path.exists() for path in cached.values()):
        try:
            return _read_cached(folder, cached, holding_lock=False)
        except FileNotFoundError:           # removed meanwhile by another build's clean-up: compile it
            pass
    with open(folder / LOCK, "a+") as lock:
        _acquire(lock, folder)
        missing = [job for job, path in cached.items() if not path.exists()]
        if missing:
            lock.truncate(0)                # who holds the lock, for a build that waits for it
            lock.write(f"process {os.getpid()} compiling {len(missing)} modules\n")
            lock.flush()
            _compile_all(missing, modules, texts, declared, cached)
        return _read_cached(folder, cached, holding_lock=True)


#: what a target interpreter runs: the bytecode of each source file named on its stdin, beside it
#: in __pycache__ under its own tag, checked against the source's hash when imported (PEP 552)
BYTECODE = """import importlib.util, json, py_compile, sys
for source in json.load(sys.stdin):
    py_compile.compile(source, doraise=True, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    print(importlib.util.cache_from_source(source))
"""


def bytecode(sources: dict, targets) -> dict:
    """``{path in the FMU of a source module: its text (bytes)}`` -> ``{the path of its bytecode in
    the FMU ('resources/drivetrain_fmu/fmus/__pycache__/__init__.cpython-311.pyc'): its bytes}`` for each
    TargetPython of ``targets``.  An interpreter of that version then imports the module without
    compiling it (also where it may write no bytecode: PYTHONDONTWRITEBYTECODE, a read-only
    folder, a folder fmpy extracts anew for every run), and compiles it as before when the
    source is no longer the one compiled.  CompileError naming the interpreter when one fails.
    The interpreters run side by side (a process each)."""
    key, out = tuple(sorted(sources.items())), {}
    if not key:
        return out
    with ThreadPoolExecutor(max_workers=max(1, len(targets))) as pool:
        for written in pool.map(lambda target: _bytecode(target.executable, key), targets):
            out.update(written)
    return out


@functools.lru_cache(maxsize=None)
def _bytecode(executable: str, sources: tuple) -> dict:
    """:func:`bytecode` for the interpreter ``executable`` (once per process and sources)."""
    with tempfile.TemporaryDirectory(prefix="bytecode_") as tmp:
        for path, text in sources:
            (Path(tmp) / path).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / path).write_bytes(text)
        done = subprocess.run([executable, "-I", "-c", BYTECODE], capture_output=True, text=True,
                              input=json.dumps([str(Path(tmp) / path) for path, _ in sources]))
        if done.returncode != 0:
            raise CompileError(f"{executable} could not compile the FMU's source modules to bytecode: "
                               f"{done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}")
        return {Path(written).relative_to(tmp).as_posix(): Path(written).read_bytes()
                for written in done.stdout.splitlines()}


def _say(line: str) -> None:
    """A progress line on stderr."""
    print(line, file=sys.stderr, flush=True)


def _acquire(lock, folder: Path) -> None:
    """Hold ``lock`` (the cache's lock file, open); while another build holds it, say so
    once and then every WAIT_REPORT s (what is waited for, who holds it, how long)."""
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    start, next_report = time.monotonic(), 0.0
    while True:
        waited = time.monotonic() - start
        if waited >= next_report:
            lock.seek(0)
            holder = lock.read().strip() or "another build"
            _say(f"waiting for another build to finish compiling the element code into {folder} ({holder}; it "
                 f"holds {folder / LOCK}): this build needs modules not yet in the cache, and each is compiled "
                 f"once: {waited:.0f} s")
            next_report += WAIT_REPORT
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if waited >= 1.0:
                _say(f"the other build has finished after {waited:.0f} s")
            return
        except BlockingIOError:
            time.sleep(0.2)


def _compile_all(missing: list, modules: dict, texts: dict, declared: dict, cached: dict) -> None:
    """Compile the (module, target) pairs ``missing`` on every core: each module cythonized
    once, then gcc'd for each target (the largest modules first), saying each one done (i/N)."""
    count, cores = len(missing), len(os.sched_getaffinity(0))
    versions = sorted({target.short for _, target in missing})
    _say(f"compiling {count} module{'s' if count > 1 else ''} of the element code with Cython and gcc into "
         f"{cache_folder()} for CPython {', '.join(versions)} (once per change of their source, {cores} at a time)")
    start, done = time.monotonic(), 0
    names = sorted({name for name, _ in missing}, key=lambda name: -len(texts[name]))
    with tempfile.TemporaryDirectory(prefix="cython_") as tmp, ThreadPoolExecutor(cores) as pool:
        running = {pool.submit(_cythonize, name, Path(modules[name]), texts[name], declared[name], Path(tmp)):
                   (name, None)
                   for name in names}
        while running:
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for job in finished:
                name, target = running.pop(job)
                result = job.result()
                if target is None:          # its C: now gcc for each target that misses it
                    running.update({pool.submit(_gcc, name, result, other, cached[name, other]): (name, other)
                                    for other_name, other in missing if other_name == name})
                    continue
                done += 1
                _say(f"  compiled {done}/{count} {name} ({time.monotonic() - start:.0f} s) for CPython {target.short}")


def _read_cached(folder: Path, cached: dict, holding_lock: bool) -> dict:
    """The cached modules' bytes, each marked used now; then the modules no build has used
    for UNUSED_FOR removed, when this process holds the lock or gets it at once (else
    another build is compiling and the clean-up is left to it)."""
    for path in cached.values():
        os.utime(path)                                      # used now
    data = {f"resources/{name.replace('.', '/')}{target.ext_suffix}": path.read_bytes()
            for (name, target), path in cached.items()}
    if holding_lock:
        _remove_unused(folder)
    else:
        with open(folder / LOCK, "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return data
            _remove_unused(folder)
    return data


def _remove_unused(folder: Path) -> None:
    oldest = time.time() - UNUSED_FOR                       # modules, and partial files of killed builds
    for path in [*folder.glob("*.so"), *folder.glob(".*.so.*")]:
        try:
            if path.stat().st_mtime < oldest:
                path.unlink(missing_ok=True)
        except FileNotFoundError:
            pass


def _run_tool(name: str, source: Path, command: list) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise CompileError(f"compiling {name} ({source}) failed: {Path(command[0]).name} exited with "
                           f"{done.returncode}:\n{(done.stderr or done.stdout).strip()[-2000:]}")


def _cythonize(name: str, source: Path, text: bytes, declared: dict, folder: Path) -> tuple:
    """Cython ``text`` (the source ``source`` as read for the key) as the module ``name`` into
    C in ``folder``, with the C declarations ``declared`` (:func:`declarations`, each where
    Cython looks for its module's: under its qualified name's path): (the C file, ``source``)."""
    work = folder / name
    work.mkdir()
    copy, c_file, include = work / source.name, work / f"{name}.c", work / "include"
    copy.write_bytes(text)
    for other, declarations_text in declared.items():
        pxd = include.joinpath(*other.split(".")).with_suffix(".pxd")
        pxd.parent.mkdir(parents=True, exist_ok=True)
        pxd.write_bytes(declarations_text)
    directives = [arg for key, value in DIRECTIVES.items() for arg in ("-X", f"{key}={value}")]
    _run_tool(name, source, [sys.executable, "-m", "cython", "--module-name", name, *directives, "-I", str(include),
                             "-o", str(c_file), str(copy)])
    return c_file, source


def _gcc(name: str, cythonized: tuple, target: TargetPython, cached: Path) -> None:
    """gcc the C of :func:`_cythonize` against ``target``'s headers into ``cached`` (written
    under a temporary name, then renamed), stripped (STRIP: of its symbol tables, unless
    DRIVETRAIN_FMU_SYMBOLS=1)."""
    c_file, source = cythonized
    built = c_file.with_name(f"{name}{target.ext_suffix}")
    _run_tool(name, source, ["gcc", *CFLAGS, f"-I{target.include}", "-o", str(built), str(c_file)])
    _run_tool(name, source, [*STRIP, str(built)])
    partial = cached.with_name(f".{cached.name}.{os.getpid()}")
    shutil.copyfile(built, partial)
    os.replace(partial, cached)


class _CachedExtensionFinder:
    """Finds a module of ``fmus`` or ``solvers`` as the cached extension module compiled from
    the source Python's path finder would load, when the cache holds it (else leaves it to
    that finder)."""

    PACKAGES = frozenset({"drivetrain_fmu.fmus", "drivetrain_fmu.solvers"})

    def find_spec(self, name, path, target=None):
        if name.rpartition(".")[0] not in self.PACKAGES or not path:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return None
        try:
            cached = cached_path(name, module_text(name, Path(spec.origin)))
        except (CompileError, OSError):       # no usable cache: the source
            return None
        if not cached.is_file():
            return None
        return importlib.util.spec_from_file_location(name, cached)


def prefer_compiled() -> bool:
    """From now on, import the modules of ``fmus`` and ``solvers`` (not the packages
    themselves) from the cache where it holds them compiled from the sources this process
    would import; False (and nothing changed) when the toolchain is missing: the cache cannot
    be current without it."""
    try:
        toolchain()
    except CompileError:
        return False
    if not any(isinstance(finder, _CachedExtensionFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _CachedExtensionFinder())
    return True
