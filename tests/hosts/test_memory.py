"""A parameter sweep in one process stays flat in memory (issue #17).

fmpy's simulate_fmu extracts the FMU into a new folder at every call.  The FMU binary was
pythonfmu's library pinned in memory (RTLD_NODELETE, fmus/native_exit.py), so every run
kept one more copy mapped: 0.37 MiB per call (382 KiB measured over 400 calls).  Now the
binary is a small forwarder that is unloaded again, and pythonfmu's library is loaded once
per process (native/linux64/forwarder.c and starter.c).

Tolerance: between calls 100 and 400 the resident set may grow by at most 16 KiB per call
on average (4.7 MiB over 300 calls), and the number of mapped FMU binaries may not grow.
pythonfmu also inserts the resources folder into sys.path at every instantiation; the
slave script keeps one entry per resources folder that still exists, so sys.path may not
grow either (it grew by one entry per call).  What still grows is pythonfmu's own: its
findClass leaks the repr strings of the slave class's MRO (about 1 KiB per call measured
with the sys.path growth; 10^4 calls: 8.9 MiB).  16 KiB leaves room for allocator noise and
is still 20 times less than one more copy of pythonfmu's library (368 KiB resident).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CALLS, FROM = 400, 100
KIB_PER_CALL = 16.0

SWEEP = r'''
import json, sys
sys.path.insert(0, sys.argv[1])
from bench_memory import sweep
samples = sweep(sys.argv[2], "Inertia", int(sys.argv[3]), 100, out=lambda line: None)
print("SAMPLES", json.dumps(samples))
'''


def test_repeated_simulate_fmu_stays_flat(fmu_dir, tmp_path):
    done = subprocess.run([sys.executable, "-c", SWEEP, str(ROOT / "benchmarks"), str(fmu_dir / "Inertia.fmu"),
                           str(CALLS)], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    samples = json.loads(next(line.split(" ", 1)[1] for line in done.stdout.splitlines()
                              if line.startswith("SAMPLES ")))
    first = next(s for s in samples if s["calls"] == FROM)
    last = samples[-1]
    assert last["calls"] == CALLS
    growth = (last["rss_kib"] - first["rss_kib"]) / (CALLS - FROM)
    assert growth < KIB_PER_CALL, (growth, first, last)
    assert last["mapped"] <= first["mapped"], (first, last)
    assert last["sys_path"] <= first["sys_path"], (first, last)
