"""The README's path tried as a new user would, timed: the figures the README states.

    python benchmarks/readme_trial.py [--venv DIR] [--write]

In a fresh virtual environment (``--venv``, default a temporary folder) with ``pip install
'.[all]'`` of this tree, from an empty working folder and with an empty compile cache
(``XDG_CACHE_HOME`` pointed at a new folder, so the element code is compiled as on a new
machine), it times

1. ``drivetrain-fmu run z3`` the first time: it builds the FMUs Z3 uses, compiling the
   element code once;
2. ``drivetrain-fmu run z3`` again: the FMUs are up to date and reused (the run alone);
3. ``drivetrain-fmu build Clutch`` (the README's fmpy example needs it; the compiled
   element code is cached by then);

and measures the size of the FMUs built.  Each command must succeed.  ``--write`` puts the
figures into the README between the comments ``<!-- begin: readme_trial -->`` and ``<!--
end: readme_trial -->``: the README's times are this command's, never typed by hand.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BEGIN, END = "<!-- begin: readme_trial -->", "<!-- end: readme_trial -->"


def timed(command: list[str], cwd: Path, env: dict) -> tuple[float, str]:
    """(wall seconds, stderr) of ``command``; SystemExit with its output when it fails."""
    start = time.monotonic()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-3000:]}")
    print(f"{seconds:7.1f} s  {' '.join(command)}", file=sys.stderr, flush=True)
    return seconds, done.stderr


def trial(venv: Path) -> dict:
    """Install into ``venv`` and run the README's commands: {figure name: value}."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    start = time.monotonic()
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"{ROOT}[all]"], check=True)
    install = time.monotonic() - start
    command = str(venv / "bin" / "drivetrain-fmu")
    with tempfile.TemporaryDirectory(prefix="readme_trial_") as folder:
        work, cache = Path(folder) / "work", Path(folder) / "cache"
        work.mkdir()
        env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"}
        env.pop("PYTHONPATH", None)
        first, said = timed([command, "run", "z3"], work, env)
        compiled = re.findall(r"compiled (\d+)/(\d+) \S+ \((\d+) s\)", said)
        again, _ = timed([command, "run", "z3"], work, env)
        clutch, _ = timed([command, "build", "Clutch"], work, env)
        sizes = [path.stat().st_size for path in (work / "build" / "fmus").glob("*.fmu")]
    return {"install": install, "first": first, "again": again, "clutch": clutch,
            "modules": int(compiled[-1][1]) if compiled else 0,
            "compiling": float(compiled[-1][2]) if compiled else 0.0,
            "fmus": len(sizes), "smallest": min(sizes) / 1e6, "largest": max(sizes) / 1e6,
            "cores": len(os.sched_getaffinity(0)), "load": os.getloadavg()[1],
            "date": time.strftime("%Y-%m-%d", time.gmtime())}


def sentence(figures: dict) -> str:
    """What the README says, from ``figures``."""
    sizes = f"{figures['smallest']:.1f}"
    if f"{figures['largest']:.1f}" != sizes:
        sizes += f" to {figures['largest']:.1f}"
    return (f"{BEGIN}measured by `python benchmarks/readme_trial.py --write` ({figures['date']}, "
            f"{figures['cores']} cores with a load average of {figures['load']:.1f} over the last 5 min, a fresh "
            f"venv and an empty compile cache): the first `run z3` "
            f"{figures['first']:.0f} s, of which {figures['compiling']:.0f} s compile the element code "
            f"({figures['modules']} modules, once per machine and source change); again, with the FMUs up to "
            f"date, {figures['again']:.0f} s; `build Clutch` then {figures['clutch']:.0f} s; each FMU "
            f"{sizes} MB; `pip install` took "
            f"{figures['install']:.0f} s here{END}")


def write(figures: dict, path: Path = README) -> None:
    text = path.read_text(encoding="utf-8")
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        raise SystemExit(f"{path}: needs {BEGIN} ... {END} once")
    start, end = text.index(BEGIN), text.index(END) + len(END)
    path.write_text(text[:start] + sentence(figures) + text[end:], encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, help="folder for the fresh virtual environment (default: temporary; "
                                                  "it must not exist)")
    parser.add_argument("--write", action="store_true", help="put the figures into README.md")
    args = parser.parse_args(argv)
    if args.venv is not None and args.venv.exists():
        parser.error(f"--venv {args.venv} exists: give a new folder")
    folder = args.venv or Path(tempfile.mkdtemp(prefix="readme_venv_")) / "venv"
    try:
        figures = trial(folder)
    finally:
        if args.venv is None:
            shutil.rmtree(folder.parent, ignore_errors=True)
    print(sentence(figures).removeprefix(BEGIN).removesuffix(END))
    if args.write:
        write(figures)
        print(f"wrote the figures into {README}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
