"""Backlash FMU through fmpy: the seven two-mass test systems of Reiter Tables 13-14 (R2).

The seed's masses sit side by side at rest position 0 with mass 1 approaching mass 2
from the left (overlap means x1 > x2).  In the element that is the limit +b of
phi_rel = phi_1 - phi_2: body 1 is x1 + B with its ground spring relaxed at B, body 2
is x2, and B = 10 m keeps the other limit (x1 - x2 = -2B) out of reach.  The seed's
separation-force gain k_s has no counterpart in the exact contact constraint (cases 3
and 4 are therefore the same run here).  T_d is the communication step.
"""
import math

import numpy as np
import pytest

from drivetrain_fmu.systems.master import Instance, run

B = 10.0
# case: c1, c2, d1, d2, m1, m2, c_r, x(0) = [x1, v1, x2, v2], T_d
R2 = {
    1: (20, 20, 0, 0, 10, 10, 1.0, (-0.5, 0, 0, 0), 0.1),
    2: (20, 20, 0, 0, 10, 10, 0.0, (-0.5, 0, 0, 0), 0.1),
    3: (20, 40, 0, 0, 10, 10, 0.0, (-0.5, 0, 0, 0), 0.1),
    4: (20, 40, 0, 0, 10, 10, 0.0, (-0.5, 0, 0, 0), 0.1),
    5: (10, 40, 0, 0, 40, 10, 0.0, (-0.5, 1, 0, 0), 0.2),
    6: (20, 20, 1, 0, 20, 100, 0.9, (-0.3, 0.1, 0, 0), 0.1),
    7: (5, 5, 1, 0.1, 10, 0.1, 0.1, (-0.3, 0.1, 0, 0), 0.1),
}
RECORD = ["phi_1", "w_1", "phi_2", "w_2", "phi_rel", "contact", "n_impacts", "impulse_last", "e_loss"]


def simulate(fmu_dir, case, duration=20.0):
    c1, c2, d1, d2, m1, m2, c_r, (x1, v1, x2, v2), step = R2[case]
    params = dict(J_1=m1, J_2=m2, k_ground_1=c1, k_ground_2=c2, d_ground_1=d1, d_ground_2=d2,
                  phi_rest_1=B, phi_rest_2=0.0, b=B, e_rest=c_r, phi_1_start=x1 + B, w_1_start=v1,
                  phi_2_start=x2, w_2_start=v2)
    pair = Instance(fmu_dir / "Backlash.fmu", f"r2_case{case}", params)
    try:
        result = run({"pair": pair}, [], duration, step, [f"pair.{name}" for name in RECORD])
    finally:
        pair.free()
    out = {name: result[f"pair.{name}"] for name in RECORD}
    out["time"] = result.time
    out["energy"] = (0.5 * m1 * out["w_1"] ** 2 + 0.5 * m2 * out["w_2"] ** 2
                     + 0.5 * c1 * (out["phi_1"] - B) ** 2 + 0.5 * c2 * out["phi_2"] ** 2)
    return out


def test_case1_elastic_impact_exchanges_velocities_at_a_quarter_period(fmu_dir):
    out = simulate(fmu_dir, 1)
    omega = math.sqrt(20 / 10)
    t_impact, v_impact = math.pi / (2 * omega), 0.5 * omega     # 1.1107 s, 0.7071 m/s
    k = int(np.argmax(out["n_impacts"] >= 1))                    # first point after the impact
    assert out["time"][k - 1] < t_impact <= out["time"][k]
    # mass 1 stopped at its rest position; mass 2 left it with 0.7071 m/s (spring from rest)
    assert out["w_1"][k] == pytest.approx(0.0, abs=1e-12)
    assert out["phi_1"][k] - B == pytest.approx(0.0, abs=1e-12)
    tau = out["time"][k] - t_impact
    assert out["w_2"][k] == pytest.approx(v_impact * math.cos(omega * tau), rel=1e-12)
    assert out["impulse_last"][k] == pytest.approx(2 * 5.0 * v_impact, rel=1e-12)   # (1+e) m_eff w_rel
    energy0 = out["energy"][0]
    assert np.max(np.abs(out["energy"] / energy0 - 1)) < 5e-3   # measured ~1e-14
    assert np.all(out["phi_rel"] <= B + 1e-9)


def test_case2_plastic_impact_then_moving_together_at_half_speed(fmu_dir):
    out = simulate(fmu_dir, 2)
    omega = math.sqrt(2.0)
    t_impact, v_impact = math.pi / (2 * omega), 0.5 * omega
    k = int(np.argmax(out["n_impacts"] >= 1))
    # identical systems after a plastic impact: one body of twice the mass, speed halved
    tau = out["time"][k] - t_impact
    assert out["w_1"][k] == pytest.approx(0.5 * v_impact * math.cos(omega * tau), rel=1e-12)
    assert np.array_equal(out["w_1"][k:], out["w_2"][k:])
    assert np.all(out["contact"][k:] == 1) and out["n_impacts"][-1] == 1
    assert np.all(out["phi_rel"] <= B + 1e-9)
    # loss of eq. 106: m1 m2 / (2 (m1 + m2)) v^2 (1 - 0) = half the energy
    assert out["e_loss"][-1] == pytest.approx(0.25 * 10 * v_impact**2, rel=1e-9)


@pytest.mark.parametrize("case", [3, 4, 5, 6, 7])
def test_cases_3_to_7_never_overlap_and_balance_energy(fmu_dir, case):
    out = simulate(fmu_dir, case)
    assert out["n_impacts"][-1] >= 1
    assert np.max(out["phi_rel"] - B) <= 1e-9
    balance = out["energy"] + out["e_loss"]
    assert np.max(np.abs(balance / balance[0] - 1)) < 5e-3   # measured below 1e-12
