"""The fingerprint of the element code: what an FMU checks at load time and writes into its
FMU states (``fmus`` and ``solvers`` sources)."""
import hashlib
from pathlib import Path

from drivetrain_fmu import solvers


def source_fingerprint() -> str:
    """SHA-256 of the ``fmus`` and ``solvers`` source files as they are on disk now."""
    digest = hashlib.sha256()
    for package in (Path(__file__).parent, Path(solvers.__file__).parent):
        for path in sorted(package.glob("*.py")):
            digest.update(f"{package.name}/{path.name}".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


# Read when the code is loaded: the files may go away while the code stays in use (fmpy's
# simulate_fmu deletes the extracted FMU, whose resources were the first copy imported).
_LOADED_FINGERPRINT = source_fingerprint()


def code_fingerprint() -> str:
    """SHA-256 of the element code loaded in this process (``fmus`` and ``solvers`` sources,
    read when ``fmus`` was imported).

    Every FMU of a process shares one copy of these packages (the first FMU's resources
    or an installed copy win the import), so each FMU checks at load time that the loaded
    code is the code it was built with (see build_fmus.SLAVE_SCRIPT)."""
    return _LOADED_FINGERPRINT
