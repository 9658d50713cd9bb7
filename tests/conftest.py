"""Builds the FMUs once per test session into a temporary folder."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
#: the prebuilt third-party hosts (OMSimulator, fmusim, fmuCheck) of ../shared/tools/hosts
HOSTS = Path(os.environ.get("DRIVETRAIN_FMU_HOSTS", ROOT.parent / "shared" / "tools" / "hosts"))


@pytest.fixture(scope="session")
def fmu_dir(tmp_path_factory):
    import build_fmus

    out = tmp_path_factory.mktemp("fmus")
    build_fmus.build_all(out)
    return out


@pytest.fixture(scope="session")
def ecos_host(tmp_path_factory):
    """tests/ecos_host.c, a non-Python co-simulation host, compiled against a copy of
    ecospy's libecosc outside the Python prefix (so it still runs where that is hidden)."""
    try:
        import ecospy  # loads libecosc: needs Debian's libtbb12
    except (ImportError, OSError) as exc:
        pytest.skip(f"ecospy is not usable here ({exc}); ./run_tests.sh installs it and libtbb12")
    folder = tmp_path_factory.mktemp("ecos")
    library = folder / "lib"
    shutil.copytree(Path(ecospy.__file__).parent / "binaries", library)
    host = folder / "ecos_host"
    subprocess.run(["gcc", "-O2", "-o", str(host), str(Path(__file__).with_name("ecos_host.c")),
                    f"-L{library}", "-lecosc", f"-Wl,-rpath,{library}"], check=True)
    return host
