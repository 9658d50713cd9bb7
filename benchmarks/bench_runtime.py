"""The targets of the self-contained FMUs: size and start-up time without Python.

    python benchmarks/bench_runtime.py [--fmus DIR] [--runs 5] [--only Clutch Vehicle] [--no-c-host]

(a) every FMU's size (target <= 10 MB, 1 MB = 10^6 bytes) and its largest members;
(b) fmusim (the Modelica Association's Reference-FMUs runner, ``$DRIVETRAIN_FMU_HOSTS/fmusim``,
    default ../shared/tools/hosts) running each FMU for one communication step in a mount
    namespace in which every Python installation of this machine is hidden (the one of
    tests/hosts/test_self_contained.py: its ``_hidden_paths`` and ``HIDE_SCRIPT``): the wall time
    of the fmusim process, measured inside the namespace, median of ``--runs``.  An upper
    bound of the instantiation time (target < 1 s): process start, unzip, load, instantiate,
    initialise, one step, free;
(c) a small C host (compiled here with gcc) that dlopen()s the FMU's extracted binary in
    the same namespace and times each phase with clock_gettime: dlopen (the bundled
    runtime's starter initialises Python in the library's constructor), fmi2Instantiate,
    initialisation, one doStep, terminate and free.  Instantiation = dlopen + fmi2Instantiate.

Without ``--fmus`` the working tree is built into a temporary folder.  An FMU that does not
start without Python is reported as FAIL with the host's last message.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.hosts.test_self_contained import HIDE_SCRIPT, _hidden_paths  # noqa: E402

HOSTS = Path(os.environ.get("DRIVETRAIN_FMU_HOSTS", ROOT.parent / "shared" / "tools" / "hosts"))
SIZE_TARGET = 10e6          # bytes
START_TARGET = 1.0          # seconds
STEP = 1e-3

# runs the command, then prints its wall time in nanoseconds on stderr (inside the namespace)
TIMED = 'a=$(date +%s%N); "$@"; rc=$?; b=$(date +%s%N); echo "WALL_NS $((b - a))" >&2; exit $rc'

#: the C host of (c): dlopen and the FMI calls, each phase timed with clock_gettime
C_HOST = Path(__file__).with_name("timing_host.c")
C_PHASES = ("dlopen", "fmi2Instantiate", "initialisation", "doStep", "terminate+free")


def without_python(home: Path):
    """run(command, cwd) -> CompletedProcess in a mount namespace hiding every Python
    installation, with a clean environment (as tests/hosts/test_self_contained.py does)."""
    hidden = _hidden_paths()

    def run(command, cwd, timeout=300):
        return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", HIDE_SCRIPT, "sh",
                               *hidden, "--", *map(str, command)], cwd=cwd, capture_output=True, text=True,
                              env={"PATH": "/usr/bin:/bin", "HOME": str(home)}, timeout=timeout)

    libpython = Path(sys.base_prefix) / "lib" / f"libpython{sys.version_info.major}.{sys.version_info.minor}.so.1.0"
    check = run(["sh", "-c", f"python3 -c pass 2>/dev/null && echo PYTHON; {sys.executable} -c pass 2>/dev/null "
                             f"&& echo PYTHON; test -s {libpython} && echo LIBPYTHON; echo DONE"], home)
    if check.stdout.split() != ["DONE"]:
        raise SystemExit(f"the namespace does not hide Python: {check.stdout} {check.stderr}")
    return run, hidden


def last_message(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip() and "WALL_NS" not in line]
    return lines[-1].strip()[:160] if lines else f"exit status {done.returncode}"


def sizes(fmus: list[Path]) -> bool:
    print(f"(a) FMU size (target <= {SIZE_TARGET / 1e6:g} MB, 1 MB = 10^6 bytes); largest members, compressed "
          "size in the archive (uncompressed):")
    ok = True
    for fmu in fmus:
        size = fmu.stat().st_size
        with zipfile.ZipFile(fmu) as archive:
            members = sorted(archive.infolist(), key=lambda i: i.compress_size, reverse=True)[:4]
            count = len(archive.infolist())
        verdict = "PASS" if size <= SIZE_TARGET else "FAIL"
        ok &= verdict == "PASS"
        print(f"  {fmu.stem:16s} {size / 1e6:6.2f} MB ({size / 2**20:5.2f} MiB, {count:3d} members) {verdict}  "
              + ", ".join(f"{Path(m.filename).name} {m.compress_size / 1e6:.2f} ({m.file_size / 1e6:.2f})"
                          for m in members))
    return ok


def fmusim_times(fmus: list[Path], run, runs: int, work: Path) -> bool:
    fmusim = HOSTS / "fmusim"
    print(f"\n(b) fmusim, one communication step of {STEP:g} s, every Python installation hidden: wall time of "
          f"the fmusim process (start, unzip, load, instantiate, initialise, step, free), median of {runs} "
          f"(target < {START_TARGET:g} s)")
    if not fmusim.exists():
        print(f"  {fmusim} is absent: skipped")
        return False
    ok = True
    for fmu in fmus:
        times, failure = [], None
        for k in range(runs):
            done = run(["sh", "-c", TIMED, "sh", fmusim, "--interface-type", "cs", "--stop-time", STEP,
                        "--output-interval", STEP, "--output-file", work / f"{fmu.stem}.csv", fmu], work)
            wall = re.search(r"WALL_NS (\d+)", done.stderr)
            if done.returncode != 0 or wall is None:
                failure = last_message(done)
                break
            times.append(int(wall.group(1)) * 1e-9)
        if failure:
            ok = False
            print(f"  {fmu.stem:16s} FAIL: does not run without Python: {failure}")
            continue
        median = statistics.median(times)
        verdict = "PASS" if median < START_TARGET else "FAIL"
        ok &= verdict == "PASS"
        print(f"  {fmu.stem:16s} {median:7.3f} s  (min {min(times):.3f}, max {max(times):.3f})  {verdict}")
    return ok


def c_host_times(fmus: list[Path], run, runs: int, work: Path) -> bool:
    print(f"\n(c) C host (dlopen + FMI calls, clock_gettime), every Python installation hidden, median of {runs} "
          f"processes [ms]; instantiation = dlopen + fmi2Instantiate (target < {START_TARGET:g} s)")
    if shutil.which("gcc") is None:
        print("  gcc is absent: skipped")
        return False
    host = work / "c_host"
    subprocess.run(["gcc", "-O2", "-o", str(host), str(C_HOST), "-ldl"], check=True)
    print(f"  {'FMU':16s} " + " ".join(f"{phase:>15s}" for phase in C_PHASES) + f" {'instantiation':>14s}")
    ok = True
    for fmu in fmus:
        folder = work / "extracted" / fmu.stem
        with zipfile.ZipFile(fmu) as archive:
            archive.extractall(folder)
            identifier = ET.fromstring(archive.read("modelDescription.xml"))
        guid = identifier.get("guid")
        model = identifier.find("CoSimulation").get("modelIdentifier")
        binary = folder / "binaries" / "linux64" / f"{model}.so"
        phases, failure = [], None
        for k in range(runs):
            done = run([host, binary, f"file://{folder / 'resources'}", guid, f"{model.lower()}{k}", STEP], work)
            found = re.search(r"TIMES ([\d. ]+)", done.stdout)
            if done.returncode != 0 or found is None:
                failure = last_message(done)
                break
            phases.append([float(x) for x in found.group(1).split()])
        if failure:
            ok = False
            print(f"  {fmu.stem:16s} FAIL: {failure}")
            continue
        medians = [statistics.median(column) for column in zip(*phases)]
        start = statistics.median(p[0] + p[1] for p in phases)
        verdict = "PASS" if start < START_TARGET else "FAIL"
        ok &= verdict == "PASS"
        print(f"  {fmu.stem:16s} " + " ".join(f"{m * 1e3:15.1f}" for m in medians) + f" {start * 1e3:11.1f} ms "
              f"{verdict}")
    return ok


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fmus", type=Path, help="folder of the FMUs (default: build the working tree)")
    parser.add_argument("--only", nargs="+", help="FMU names (default: every .fmu of the folder)")
    parser.add_argument("--runs", type=int, default=5, help="runs per FMU and host (median)")
    parser.add_argument("--no-c-host", action="store_true", help="skip (c)")
    args = parser.parse_args(argv)
    if shutil.which("unshare") is None:
        raise SystemExit("needs unshare (util-linux) and the right to make a mount namespace")
    with tempfile.TemporaryDirectory(prefix="bench_runtime_") as tmp:
        tmp = Path(tmp)
        folder = args.fmus
        if folder is None:
            folder = tmp / "fmus"
            subprocess.run([sys.executable, str(ROOT / "build_fmus.py"), "--out", str(folder)], check=True,
                           stdout=subprocess.DEVNULL)
        fmus = sorted(p for p in folder.glob("*.fmu") if not args.only or p.stem in args.only)
        if not fmus:
            raise SystemExit(f"no FMU in {folder}")
        print(f"FMUs: {folder}")
        (tmp / "home").mkdir()
        run, hidden = without_python(tmp / "home")
        print(f"hidden in the namespace: {', '.join(hidden)}\n")
        verdicts = {"size": sizes(fmus), "fmusim": fmusim_times(fmus, run, args.runs, tmp)}
        if not args.no_c_host:
            verdicts["C host"] = c_host_times(fmus, run, args.runs, tmp)
    print("\n" + ", ".join(f"{name}: {'PASS' if ok else 'FAIL'}" for name, ok in verdicts.items()))
    return 0 if all(verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
