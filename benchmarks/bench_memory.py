"""Memory of a parameter sweep in one process: repeated ``fmpy.simulate_fmu`` on one .fmu.

    python benchmarks/bench_memory.py [-n 2000] [--element Inertia] [--fmu PATH] [--every 200]
    python benchmarks/bench_memory.py -n 10000          # the 10^4-run sweep of issue #17

Each call extracts the FMU to a new temporary folder, loads its binary, instantiates,
runs 10 steps with another parameter value and frees it (fmpy deletes the folder).  Printed
every ``--every`` calls: the resident set (VmRSS), how many copies of FMU binaries are mapped
(distinct ``.../binaries/linux64/*.so`` files in /proc/self/maps), the length of sys.path and
of sys.path_importer_cache; at the end the RSS growth per call after a warm-up (the first
10 % of the calls, at least 50), as a least-squares slope.  Without ``--fmu`` the element is
built first (in a subprocess, into a temporary folder).
"""
from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def mapped_fmu_binaries() -> set[str]:
    """Paths of the FMU binaries mapped in this process (deleted ones included)."""
    found = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and "/binaries/linux64/" in parts[5] and ".so" in parts[5]:
                found.add(parts[5].strip())
    return found


def sample(calls: int) -> dict:
    gc.collect()
    return {"calls": calls, "rss_kib": rss_kib(), "mapped": len(mapped_fmu_binaries()),
            "sys_path": len(sys.path), "importer_cache": len(sys.path_importer_cache)}


def slope(points: list[tuple[int, int]]) -> float:
    """Least-squares slope of (x, y) points."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0


def sweep(fmu: str, element: str, n: int, every: int, out=print) -> list[dict]:
    """``n`` simulate_fmu calls on ``fmu``; a sample (see :func:`sample`) every call up to
    ``every`` calls apart; returns the samples (the first before any call)."""
    from fmpy import read_model_description, simulate_fmu

    md = read_model_description(fmu)
    parameter = next((v.name for v in md.modelVariables if v.causality == "parameter" and v.type == "Real"),
                     None)
    samples = [sample(0)]
    out(f"{'calls':>7} {'RSS MiB':>9} {'mapped .so':>10} {'sys.path':>8} {'importer cache':>14}")
    show = lambda s: out(f"{s['calls']:>7} {s['rss_kib'] / 1024:>9.2f} {s['mapped']:>10} {s['sys_path']:>8} "
                         f"{s['importer_cache']:>14}")
    show(samples[0])
    base = float(next(v.start for v in md.modelVariables if v.name == parameter)) if parameter else 0.0
    for call in range(1, n + 1):
        values = {parameter: base * (1.0 + 1e-3 * (call % 100))} if parameter else {}
        simulate_fmu(fmu, stop_time=0.01, step_size=1e-3, output_interval=1e-3, start_values=values)
        if call % max(1, every // 10) == 0 or call == n:
            samples.append(sample(call))
            if call % every == 0 or call == n:
                show(samples[-1])
    return samples


def growth_per_call(samples: list[dict], start: int) -> float:
    """RSS growth in KiB per call over the samples at or after ``start`` calls."""
    return slope([(s["calls"], s["rss_kib"]) for s in samples if s["calls"] >= start])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000, help="number of simulate_fmu calls (default 2000)")
    parser.add_argument("--element", default="Inertia", help="element to build and run (default Inertia)")
    parser.add_argument("--fmu", help="an existing .fmu instead of building --element")
    parser.add_argument("--every", type=int, default=200, help="print a line every this many calls")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench_memory_") as tmp:
        fmu = args.fmu
        if fmu is None:
            subprocess.run([sys.executable, str(ROOT / "build_fmus.py"), "--out", tmp, "--only", args.element],
                           check=True, stdout=subprocess.DEVNULL)
            fmu = os.path.join(tmp, f"{args.element}.fmu")
        samples = sweep(fmu, args.element, args.n, args.every)
    warm = max(50, args.n // 10)
    first, last = next(s for s in samples if s["calls"] >= warm), samples[-1]
    print(f"RSS growth after {warm} warm-up calls: {growth_per_call(samples, warm):.2f} KiB per call "
          f"(least squares), {(last['rss_kib'] - first['rss_kib']) / 1024:.2f} MiB from call {first['calls']} "
          f"to {last['calls']}; mapped FMU binaries {first['mapped']} -> {last['mapped']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
