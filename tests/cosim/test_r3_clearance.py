"""R3 clearance cases (Reiter Tables 15-16) by co-simulation: Backlash (J_z | J_w) + Shaft
k2 + vehicle inertia, drive +100 N.m then -100 N.m from 1 s (systems.catalog.r3, chosen drive)."""
import numpy as np
import pytest

from drivetrain_fmu.systems.catalog import r3


@pytest.fixture(scope="module")
def runs(fmu_dir):
    return {case: r3.simulate_clearance(fmu_dir, case) for case in r3.CLEARANCE_CASES}


def test_rattling_with_elastic_impacts_only(runs):
    """c_r = 1 (case 2): the wheel keeps bouncing in the 1e-4 rad play (hundreds of
    impacts, the contact never closes, no energy lost: |e_loss| < 1e-6 J).  c_r = 0
    (cases 1 and 3): every impact is plastic and closes the contact, so the impacts are
    at most the closings of the contact."""
    elastic, plastic = runs[2], runs[1]
    assert elastic["mesh.n_impacts"][-1] >= 10 * plastic["mesh.n_impacts"][-1]
    assert np.all(elastic["mesh.contact"] == 0)
    assert abs(elastic["mesh.e_loss"][-1]) < 1e-6
    for case in (1, 3):
        run = runs[case]
        closings = np.count_nonzero((run["mesh.contact"][1:] != 0) & (run["mesh.contact"][:-1] == 0))
        assert 1 <= run["mesh.n_impacts"][-1] <= closings + 1
        assert run["mesh.e_loss"][-1] > 0.0


@pytest.mark.parametrize("case", sorted(r3.CLEARANCE_CASES))
def test_play_is_never_exceeded_and_the_load_reversal_crosses_it(runs, case):
    b, _ = r3.CLEARANCE_CASES[case]
    run = runs[case]
    assert np.max(np.abs(run["mesh.phi_rel"])) <= b * (1 + 1e-9)
    before = run.time < r3.REVERSAL_TIME
    impacts = run["mesh.n_impacts"]
    assert impacts[before][-1] >= 1 and impacts[-1] > impacts[before][-1]   # impacts on both sides
    if case != 2:
        # plastic: driven forwards J_z rests on +b, after the reversal on -b
        assert np.any(run["mesh.contact"][before] == 1) and np.any(run["mesh.contact"][~before] == -1)
