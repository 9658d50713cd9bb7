"""Builds the FMUs once per test session into a temporary folder."""
import os
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
