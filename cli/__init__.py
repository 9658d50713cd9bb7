"""Command line: list the elements, build the FMUs, co-simulate a documented drivetrain.

    drivetrain-fmu list [--markdown]            (--markdown: the README's element table)
    drivetrain-fmu build [NAME ...] [--out build/fmus]   (rebuilds the chosen element FMUs, default all)
    drivetrain-fmu run SYSTEM [--step H] [--stop T] [--record inst.var ...]   (co-simulation: CSV and plot)
    drivetrain-fmu report SYSTEM [--steps ...]   (separate FMUs and one system FMU vs monolithic reference)
    drivetrain-fmu report --all [--write [docs/systems.md]]   (every documented system at its step: tables)
    drivetrain-fmu export SYSTEM [--step H] [--stop T]   (SSP archive of the system)
    drivetrain-fmu export-fmu SYSTEM [--input inst.var] [--output inst.var] [--internal-step H] [--rate INST=H] [--iterations N]   (one FMU)
    drivetrain-fmu new NAME --from SYSTEM       (NAME.ssd: an editable copy in the working directory)
    drivetrain-fmu ssp FILE.ssp [--step H] [--stop T] [--record inst.var ...]   (run an SSP file: CSV)
    drivetrain-fmu compare r1 [--step 0.1]      (PWA discretisations, no FMU)
    drivetrain-fmu study judder-onset [--T_S 400] [--T_C 320 300 ...] [--scheduler tcp://HOST:PORT]
    drivetrain-fmu study tire-slip-onset [--mu_k_road 0.07 ...] [--scheduler tcp://HOST:PORT]
    drivetrain-fmu study breakaway [--mu_s 0.3 0.4 ...] [--scheduler tcp://HOST:PORT]

SYSTEM is a documented system's name (drivetrain-fmu list) or the path of an .ssd or .ssp
file.  run, report and export build the FMUs that are not up to date first (--fmus: an
existing folder, or the default build/fmus of the working directory, made if needed) and
say in one line where; every command writes into its own folder RESULTS/COMMAND/SYSTEM/
(RESULTS: --out, default results).  Arguments and files are checked before anything is
built.  Exit status: 0 done, 1 the simulation failed, 2 a usage error (the message names the
bad value and what is allowed) or a missing optional package (the message names the extra to
install: run, report and compare need [cli], study [study]; ssp runs without [cli], with no progress
bar), 130 interrupted (Ctrl-C: what was computed is written), 143 terminated (SIGTERM: as Ctrl-C),
141 stdout closed by its reader (`drivetrain-fmu list | head -3`: nothing said); --debug shows the
Python traceback of an error.
"""
from drivetrain_fmu import compiled_modules

# the element code of this process compiled, where the build has cached it for the sources
# imported here (compiled_modules.prefer_compiled): the FMUs this process runs share it;
# before any module of this package imports the element code
compiled_modules.prefer_compiled()

from .command import main  # noqa: E402

__all__ = ["main"]
