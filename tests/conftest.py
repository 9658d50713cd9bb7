"""Builds the FMUs once per test session into a temporary folder."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# The tests' own process runs the element code from its sources (the reference; the FMUs a
# test starts in other processes run it compiled): imported here (every element's module:
# fmus.MODELS), before any test module imports the command, whose import prefers the
# compiled modules of the cache (compiled_modules.prefer_compiled) and would otherwise
# decide it by the collection order.
from drivetrain_fmu import fmus

fmus.MODELS     # noqa: B018 (made at the first ask)

ROOT = Path(__file__).resolve().parents[1]
#: the prebuilt third-party hosts (OMSimulator, fmusim, fmuCheck) of ../shared/tools/hosts
HOSTS = Path(os.environ.get("DRIVETRAIN_FMU_HOSTS", ROOT.parent / "shared" / "tools" / "hosts"))


@pytest.fixture(scope="session", autouse=True)
def temporary_folder_of_the_run(tmp_path_factory):
    """What the tests and the processes they start put in the temporary folder (the FMU
    copies fmpy extracts for the tests' own FMU2Slave instances and the fuzz campaign's
    processes, ecos's SSP extractions) goes under pytest's base folder, which pytest prunes
    to the last three runs: before, every run left gigabytes in /tmp (79 GB on this machine
    after some sessions)."""
    import tempfile

    folder = tmp_path_factory.mktemp("temp")
    saved = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"], tempfile.tempdir = str(folder), str(folder)
    yield folder
    if saved[0] is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = saved[0]
    tempfile.tempdir = saved[1]


@pytest.fixture(scope="session")
def fmu_dir(tmp_path_factory):
    from drivetrain_fmu import build_fmus

    out = tmp_path_factory.mktemp("fmus")
    build_fmus.build_all(out)
    return out


@pytest.fixture(scope="session")
def ecos_host(tmp_path_factory):
    """tests/hosts/ecos_host.c, a non-Python co-simulation host, compiled against a copy of
    ecospy's libecosc outside the Python prefix (so it still runs where that is hidden)."""
    try:
        import ecospy  # loads libecosc: needs Debian's libtbb12
    except (ImportError, OSError) as exc:
        pytest.skip(f"ecospy is not usable here ({exc}); ./run_tests.sh installs it and libtbb12")
    folder = tmp_path_factory.mktemp("ecos")
    library = folder / "lib"
    shutil.copytree(Path(ecospy.__file__).parent / "binaries", library)
    host = folder / "ecos_host"
    subprocess.run(["gcc", "-O2", "-o", str(host), str(Path(__file__).parent / "hosts" / "ecos_host.c"),
                    f"-L{library}", "-lecosc", f"-Wl,-rpath,{library}"], check=True)
    return host
