"""ElastoBacklash FMU between two Inertia FMUs: a stiff compliant impact against the
rigid impact law (eq. 107-108), momentum, and a contact that never pulls."""
import numpy as np
import pytest

from systems.master import Connection, Instance, run

J1, J2, W1 = 1.0, 2.0, 1.0


@pytest.mark.parametrize("e", [0.5, 0.9])
def test_stiff_contact_reproduces_the_rigid_impact(fmu_dir, e):
    """Body 1 (1 kg.m2, 1 rad/s) closes the 0.01 rad play onto body 2 (2 kg.m2, at rest)
    through a Hertz contact (k = 1e6, n = 1.5, contact time about 4 ms).  Communication
    step 20 us (about 200 points per contact).  Post-impact speeds within 2 % of the
    approach speed of the rigid law; measured deviations 1.9 % (e = 0.5, where the
    Flores damping law itself dissipates a little more than e asks) and 0.2 % (e = 0.9),
    unchanged at 10 us, so they come from the contact law, not from the coupling."""
    instances = {
        "a": Instance(fmu_dir / "Inertia.fmu", "a", {"J": J1, "w_start": W1}),
        "gap": Instance(fmu_dir / "ElastoBacklash.fmu", "gap", {"b": 0.01, "k": 1e6, "n_exp": 1.5, "e_rest": e}),
        "c": Instance(fmu_dir / "Inertia.fmu", "c", {"J": J2}),
    }
    connections = [Connection("a", "phi", "gap", "phi_1"), Connection("a", "w", "gap", "w_1"),
                   Connection("c", "phi", "gap", "phi_2"), Connection("c", "w", "gap", "w_2"),
                   Connection("gap", "tau_1", "a", "tau_1"), Connection("gap", "tau_2", "c", "tau_1")]
    try:
        result = run(instances, connections, 0.04, 2e-5, ["a.w", "c.w", "gap.tau_2", "gap.contact"])
    finally:
        for inst in instances.values():
            inst.free()
    w1_rigid = (J1 * W1 - J2 * W1 * e) / (J1 + J2)      # eq. 107, w2 = 0 before
    w2_rigid = (J1 * W1 + J1 * W1 * e) / (J1 + J2)      # eq. 108
    assert result["gap.contact"][-1] == 0                # separated again
    assert abs(result["a.w"][-1] - w1_rigid) <= 0.02 * W1
    assert abs(result["c.w"][-1] - w2_rigid) <= 0.02 * W1
    # torques act pairwise at every communication point: momentum is exact
    assert np.allclose(J1 * result["a.w"] + J2 * result["c.w"], J1 * W1, rtol=1e-12)
    # never pulls: the torque on body 2 has the sign of the contact side
    assert np.all(result["gap.tau_2"] * result["gap.contact"] >= 0.0)
    assert np.all(result["gap.tau_2"][result["gap.contact"] == 0] == 0.0)
