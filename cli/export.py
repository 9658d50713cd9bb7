"""drivetrain-fmu export SYSTEM: the system as an SSP archive, and the step its Jacobi-style
hosts (ecos, fmpy's simulate_ssp) were measured to need."""
from __future__ import annotations

import tempfile
from pathlib import Path

from drivetrain_fmu.systems import ssp
from drivetrain_fmu.systems.ssp import catalog

from .checks import check_parameters, fmus_for, out_folder, output_label, step_and_stop, system_of, warn_unconnected
from .errors import PROG, SimulationFailed

#: ecos and fmpy's simulate_ssp exchange values Jacobi-style (every input lags one step),
#: which needs smaller steps than systems.master's ordered exchange.  Per documented
#: system: the largest step at which ecos ran stable with the RMS error of every compared
#: signal (REPORT_KEYS) at most 1 % of its range against the monolithic reference, and that
#: error's worst signal (measured with ecospy 0.7.2's ecos command over the whole default
#: experiment; see docs/systems.md).
JACOBI_STEPS: dict[str, tuple[float, str]] = {
    "z3": (1e-4, "RMS error of w_2 0.36 %, vehicle speed 0.010 %, friction torques 0.58 % at most; "
                 "2e-4 s: torque 1.3 %; 1e-3 s: w_2 9.7 %; at its 2 ms ecos diverges (|w_1| 1e47 at 10 s); "
                 "10 s take 72 s in ecos"),
    "r3_clearance_1": (1e-4, "RMS error of the speeds 0.63 % at most (2e-4 s: 1.3 %, 1e-3 s: 8 %)"),
    "r3_clearance_2": (1e-4, "RMS error of the mesh's mean speed 0.63 %, vehicle 0.094 % (2e-4 s: 1.3 %, "
                             "1e-3 s: 8 %)"),
    "r3_clearance_3": (1e-4, "RMS error of the speeds 0.94 % at most (2e-4 s: 1.6 %, 1e-3 s: 7.5 %)"),
    "r3_spring_1": (5e-6, "RMS error of the twist 0.93 %, speeds 0.78 % at most (2e-5 s: 3.7 %, 1e-4 s: 18 %, "
                          "1e-3 s: 74 %); 1 s takes about 5 min in ecos"),
    "r3_spring_2": (5e-6, "RMS error of the twist 0.86 %, speeds 0.73 % at most (2e-5 s: 3.5 %, 1e-3 s: 71 %); "
                          "1 s takes about 5 min in ecos"),
    "r3_spring_3": (5e-5, "RMS error of the twist 0.67 %, speeds 0.56 % at most (1e-4 s: 1.35 %, 1e-3 s: 9.7 %)"),
}
#: the Fan systems: the stiff input shaft (77 kN.m/rad between 0.6 and 0.2 kg.m2) under a
#: one-step lag needs a step below 1e-5 s, measured on F1's first 0.5 s (RMS / range)
JACOBI_UNSUITED = {name: (
    "not practical: ecos exchanges values Jacobi-style and the stiff input shaft then needs a step below 1e-5 s "
    "(measured on F1's first 0.5 s: engine speed 0.94 % and flywheel 1.3 % RMS error at 1e-5 s, 2.3 % and "
    "3.2 % at 2e-5 s, 16 % at 5e-5 s, 290 % at 1e-4 s, diverging at 5e-4 s), and 0.5 s at 1e-5 s took 6 min; "
    "run the F systems with `drivetrain-fmu run` or OMSimulator") for name in catalog() if name.startswith("fan_")}


def execute(args) -> None:
    system = system_of(args.system)
    label = output_label(system)
    step, stop = step_and_stop(system, args.step, args.stop)
    check_parameters(system)
    warn_unconnected(system, "export")
    out = out_folder(args, "export", label)
    path = out / f"{label}.ssp"
    with tempfile.TemporaryDirectory(prefix="ssp_") as folder:
        if system.is_archive:                 # re-export with its own FMUs
            fmu_dir = ssp.extracted_fmus(system.path, folder)
            system = ssp.System(system.name, system.description, {
                n: ssp.Component(c.element, {**c.parameters, "T_comm": step} if c.parameters.get("T_comm")
                                 else c.parameters) for n, c in system.components.items()},
                system.connections, system.stop, system.step)
        else:
            fmu_dir = fmus_for(system, args.fmus)
        try:
            ssp.export(system, path, fmu_dir, step, stop)
        except OSError as exc:                # written whole or not at all (systems.ssp.written_whole)
            if exc.filename is not None and Path(exc.filename).parent != path.parent:
                raise                         # an FMU that could not be read: not the archive's write
            raise SimulationFailed(f"cannot write {path} ({exc.strerror or exc}); "
                                   + (f"the previous {path.name} kept" if path.exists() else "nothing written")
                                   + "; free space there or give --out DIR") from None
    print(f"wrote {path}: run it at a step of {step:g} s (its step-mean compliances' T_comm), e.g.\n"
          f"  OMSimulator {path} --stopTime={stop:g} --stepSize={step:g} --resultFile={label}.csv")
    ecos = f"ecos simulate --path {path} --stepSize {step:g} --stopTime {stop:g} --parameterSet initialValues"
    documented = system.path is None or system.path.parent.resolve() == ssp.CATALOG.resolve()
    measured = JACOBI_STEPS.get(label) if documented else None
    if documented and label in JACOBI_UNSUITED:
        print(f"ecos (and fmpy's simulate_ssp): {JACOBI_UNSUITED[label]}")
    elif measured is None:
        print(f"  {ecos}\n(ecos and fmpy's simulate_ssp exchange values Jacobi-style, one step late: compare their "
              f"result with `{PROG} run` at the same step; they may need a smaller step)")
    elif step <= measured[0] * (1 + 1e-9):
        print(f"  {ecos}\n(ecos exchanges values Jacobi-style; measured stable and within 1 % at {measured[0]:g} s: "
              f"{measured[1]})")
    else:
        print(f"ecos and fmpy's simulate_ssp exchange values Jacobi-style and need a smaller step for {label}: "
              f"measured stable and within 1 % of the reference at {measured[0]:g} s ({measured[1]}); export for "
              f"them with\n  {PROG} export {label} --step {measured[0]:g}\n  then ecos simulate --path {path} "
              f"--stepSize {measured[0]:g} --stopTime {stop:g} --parameterSet initialValues")
