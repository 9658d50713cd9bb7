"""Errors name the variable or the cause in words a user acts on (issue 17, item 5).

Each case is one of the issue's unclear messages, reproduced in-process with the slave
classes (the FMI entry points are the same methods pythonfmu calls): before, the log read
"(34, 'Numerical result out of range')", "cannot convert float NaN to integer",
"BodyState.__init__() takes 3 positional arguments but 4 were given", "('variables',)"
or "math domain error".
"""
import json

import pytest

from fmus.backlash import Backlash
from fmus.clutch import Clutch, ClutchChain, DualClutch
from fmus.elasto_backlash import ElastoBacklash
from fmus.inertia import Inertia
from fmus.vehicle import Vehicle


def make(cls, initialize=True, **params):
    slave = cls(instance_name="messages", resources=None)
    for name, value in params.items():
        setattr(slave, name, value)
    if initialize:
        slave.exit_initialization_mode()
    return slave


def vr(slave, name):
    return next(ref for ref, var in slave.vars.items() if var.name == name)


def step_message(slave, h=1e-3):
    assert not slave.do_step(0.0, h)
    return " | ".join(entry.msg for entry in slave.log_queue)


def failure(call, *args):
    with pytest.raises(Exception) as caught:
        call(*args)
    return str(caught.value)


def test_stribeck_overflow_names_the_parameters_in_a_step_and_a_get():
    """Clutch alpha_stribeck = 1000, w_stribeck = 1 rad/s, slipping at 100 rad/s:
    (100 / 1)^1000 is beyond the float range.  The refusal names the two parameters and
    the fastest slip they allow, w_stribeck 1.8e308^(1/alpha) = 2.0336 rad/s."""
    clutch = make(Clutch, alpha_stribeck=1000.0, w_stribeck=1.0, w_1_start=100.0)
    message = step_message(clutch)
    assert "(|w_slip| / w_stribeck)^alpha_stribeck = (100.0 / 1.0)^1000.0" in message
    assert "at most w_stribeck * 1.8e308^(1/alpha_stribeck) = 2.03355 rad/s" in message
    assert "Numerical result out of range" not in message
    got = failure(clutch.get_real, [vr(clutch, "tau_fric")])
    assert "fmi2GetReal failed" in got and "alpha_stribeck" in got and "OverflowError" in got


def test_stribeck_overflow_names_the_clutch_of_a_dual_clutch():
    """DualClutch, clutch b with alpha_stribeck_b = 564 slipping at 100 rad/s: the message
    names clutch b's parameters (suffix _b), not clutch a's."""
    clutch = make(DualClutch, alpha_stribeck_b=564.0, w_stribeck_b=1.0, w_1_start=100.0, w_3_start=-100.0,
                  f_n_b=100.0)
    message = step_message(clutch)
    assert "w_stribeck_b and alpha_stribeck_b" in message and "alpha_stribeck_a" not in message


def test_contact_law_overflow_names_the_penetration_and_exponent():
    """ElastoBacklash n_exp = 1000 at a penetration of 3 - 1e-4 rad: p^n is beyond the
    float range (Python's float power raised OverflowError (34, ...)); the failing get
    names the output, the inputs and the contact law's values."""
    spring = make(ElastoBacklash, n_exp=1000.0, phi_1=3.0)
    got = failure(spring.get_real, [vr(spring, "tau_2")])
    assert "is not finite at the inputs set now" in got
    assert "penetration p = 2.9999 rad, n_exp = 1000.0" in got
    assert "Numerical result out of range" not in got


def test_a_state_of_another_version_names_the_solver_state():
    """An Inertia state whose solver state has three values where this version keeps two
    (phi, w): "BodyState.__init__() takes 3 positional arguments" before; now the message
    says which part of the state cannot be restored and why, and the instance is kept."""
    body = make(Inertia, tau_1=1.0)
    body.do_step(0.0, 1e-3)
    saved = body._get_fmu_state()
    saved["state"] = saved["state"] + [0.5]
    saved["code"] = "0123456789ab"
    w_before = body.w
    got = failure(body._set_fmu_state, saved)
    assert "fmi2SetFMUstate failed" in got and "the solver state" in got
    assert "written by element code 0123456789ab" in got and "set states of the same build only" in got
    assert body.w == w_before and body.do_step(1e-3, 1e-3)


def test_a_state_with_a_nan_count_is_refused_naming_the_cause():
    """A Backlash state whose impact count is NaN ("cannot convert float NaN to integer")."""
    pair = make(Backlash)
    saved = json.loads(json.dumps(pair._get_fmu_state()))
    saved["state"][5] = float("nan")
    got = failure(pair._set_fmu_state, saved)
    assert "the solver state" in got and "altered after fmi2GetFMUstate" in got


def test_a_state_variable_of_the_wrong_type_is_named():
    """A ClutchChain state whose n_bodies is NaN: named as not an Integer."""
    chain = make(ClutchChain)
    saved = chain._get_fmu_state()
    saved["variables"]["n_bodies"] = float("nan")
    got = failure(chain._set_fmu_state, saved)
    assert "the state's variable n_bodies = nan is not of type Integer" in got


@pytest.mark.parametrize("key", ["variables", "state"])
def test_a_state_without_its_records_is_named(key):
    """A state dictionary of the right element missing a record: "('variables',)" or
    KeyError 'state' before (or "a state of 'Clutch' cannot be set into a Clutch")."""
    clutch = make(Clutch)
    saved = clutch._get_fmu_state()
    del saved[key]
    got = failure(clutch._set_fmu_state, saved)
    assert f"lacks its {key} record" in got and "cannot be set into a Clutch" not in got


def test_too_soft_tires_for_the_static_start_are_named():
    """Vehicle m_wheel_f = 1 kg, k_tire = 100 N/m: the static tire deflections differ by
    more than the wheelbase, so no level start exists ("math domain error" from asin)."""
    vehicle = make(Vehicle, initialize=False, m_wheel_f=1.0, k_tire=100.0)
    got = failure(vehicle.exit_initialization_mode)
    assert "k_tire = 100.0 N/m is too soft" in got and "settle_start = false" in got
    assert "math domain error" not in got
