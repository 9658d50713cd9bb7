"""The build: FMUs check at load time that the process runs the element code they carry."""
import subprocess
import sys
import zipfile

from fmus import source_fingerprint
from tests.conftest import ROOT

MIXED_BUILDS = """
import sys
sys.path.insert(0, {root!r})
from systems.master import Instance
Instance({good!r}, "first").free()          # loads the element code of the current build
probe = Instance.__new__(Instance)
try:
    probe.__init__({stale!r}, "second")
except Exception as exc:
    print("REFUSED", exc)
print("LOG", " ".join(r.message for r in probe.log))
"""


def test_fmu_from_another_build_is_refused_with_a_clear_message(fmu_dir, tmp_path):
    """An FMU whose element code differs from the copy already loaded in the process must
    not silently run the other copy: instantiation fails and the log says why.  The
    'other build' is the Inertia FMU with the fingerprint in its slave script replaced,
    loaded after a Shaft of the current build.  (A second build of the *same* element is
    refused too, but pythonfmu 0.7.0 then reports only "module has no attribute ''":
    its findClass() discards the error of re-executing an already imported script.)"""
    stale = tmp_path / "Inertia.fmu"
    with zipfile.ZipFile(fmu_dir / "Inertia.fmu") as src, zipfile.ZipFile(stale, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "resources/Inertia_fmu.py":
                assert source_fingerprint().encode() in data
                data = data.replace(source_fingerprint().encode(), b"0" * 64)
            dst.writestr(item, data)
    script = MIXED_BUILDS.format(root=str(ROOT), good=str(fmu_dir / "Shaft.fmu"), stale=str(stale))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "REFUSED" in done.stdout
    assert "cannot run in one Python process" in done.stdout and "Inertia.fmu" in done.stdout
