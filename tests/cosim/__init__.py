"""Co-simulation tests: systems of element FMUs under the master and as one system FMU."""
from drivetrain_fmu.systems.ssp import System, run_system


def run_as_documented(fmu_dir, system: System, record: list[str]):
    """``system`` co-simulated as its file states it (its step, the step-mean compliances'
    T_comm at that step, its stop), recording ``record``."""
    return run_system(fmu_dir, system.at_step(system.step), system.connections, system.stop, system.step, record)
