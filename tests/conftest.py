"""Builds the FMUs once per test session into a temporary folder."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def fmu_dir(tmp_path_factory):
    import build_fmus

    out = tmp_path_factory.mktemp("fmus")
    build_fmus.build_all(out)
    return out
