"""CPU instructions per Clutch step in fmpy on each CPython 3.10-3.13 host, compiled and not.

    python benchmarks/bench_host_pythons.py [--steps 2000] [--write]

The Clutch FMU is built twice from the working tree: as every build makes it (the element
code compiled for each CPython this machine has, compiled_modules.host_pythons) and
``--pure-python`` (the sources only, which every host runs uncompiled: what a host of a
version the FMU carries no compiled code for gets).  Each host interpreter found runs
benchmarks/fmpy_host.py's counting driver (``--drive Clutch``: N steps of the FMU at its
default experiment, zero inputs) under valgrind's callgrind; the count per step is the count of
a run of N steps minus that of a run of 10 steps, over N - 10.  Instruction counts do not
depend on the machine's load (two runs of the same code agree to about 1 %).  Another
interpreter's fmpy is a venv in ``$XDG_CACHE_HOME/drivetrain-fmu/fmpy-hosts``
(fmpy_host.fmpy_python).

``--write`` puts the table into docs/hosts.md (between its ``bench_host_pythons`` markers).
"""
from __future__ import annotations

import argparse
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from drivetrain_fmu import build_fmus  # noqa: E402
from drivetrain_fmu import compiled_modules  # noqa: E402
from benchmarks import fmpy_host  # noqa: E402

DOC = ROOT / "docs" / "hosts.md"
BEGIN, END = "<!-- begin: bench_host_pythons -->", "<!-- end: bench_host_pythons -->"
BASE_STEPS = 10


def count(python: str, fmu_dir: Path, steps: int) -> int:
    """Instructions callgrind counts for fmpy_host.py's driver running ``steps`` Clutch steps."""
    env = dict(os.environ, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1")  # no idle BLAS threads
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", python,
                           str(ROOT / "benchmarks" / "fmpy_host.py"), "--drive", "Clutch", "--fmu-dir", str(fmu_dir),
                           "--steps", str(steps)], capture_output=True, text=True, env=env, cwd=fmu_dir)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"{python} failed to run the Clutch under callgrind:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def per_step(python: str, fmu_dir: Path, steps: int) -> float:
    with ThreadPoolExecutor(2) as pool:
        full, base = pool.map(lambda n: count(python, fmu_dir, n), (steps, BASE_STEPS))
    return (full - base) / (steps - BASE_STEPS)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="Clutch steps per counted run")
    parser.add_argument("--write", action="store_true", help="write the table into docs/hosts.md")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("this benchmark needs valgrind (Debian: apt-get install valgrind)")
    found, missing = compiled_modules.host_pythons()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_host_pythons_") as tmp:
        builds = {"compiled": Path(tmp) / "compiled", "uncompiled": Path(tmp) / "pure"}
        build_fmus.build_all(builds["compiled"], ["Clutch"])
        build_fmus.build_all(builds["uncompiled"], ["Clutch"], pure_python=True)
        for target in sorted(found, key=lambda t: t.short):
            python = fmpy_host.fmpy_python(target)
            counts = {kind: per_step(python, folder, args.steps) for kind, folder in builds.items()}
            rows.append(f"| CPython {target.version.split()[0]} | {counts['compiled']:,.0f} | "
                        f"{counts['uncompiled']:,.0f} | {counts['uncompiled'] / counts['compiled']:.2f} |"
                        .replace(",", " "))
            print(rows[-1], flush=True)
    lines = [f"Measured by `python benchmarks/bench_host_pythons.py --write` ({datetime.date.today()}, "
             f"fmpy {fmpy_host.FMPY.split('==')[1]}, {args.steps} steps of the Clutch at its default experiment, "
             "zero inputs, minus a run of 10 steps; callgrind):", "",
             "| host | compiled (instructions per step) | uncompiled | uncompiled / compiled |",
             "|---|---:|---:|---:|", *rows]
    lines += [f"| CPython {short} | not on this machine | | |" for short in sorted(missing)]
    table = "\n".join(lines)
    print(table)
    if args.write:
        text = DOC.read_text(encoding="utf-8")
        start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
        DOC.write_text(text[:start] + "\n" + table + "\n" + text[end:], encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
