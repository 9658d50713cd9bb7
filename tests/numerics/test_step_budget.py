"""Every doStep has a bounded cost (issue 17, item 4): the loops whose length depends on
parameters, inputs or the step size count against a budget min(floor + rate h, cap)
(solvers.budget) and a step that needs more is refused (fmi2Discard) naming the budget,
with the state of the last communication point kept.

The cases are the issue's slow steps: each ran for seconds to minutes before it was
refused or finished (times measured in the report of issue 17).  No test is timed: the
work is counted (evaluations of the right-hand side, or the count the message names).
"""
import math

import pytest

import drivetrain_fmu.solvers.friction
import drivetrain_fmu.solvers.rigid
from drivetrain_fmu.solvers.budget import Budget
from drivetrain_fmu.fmus import Backlash
from drivetrain_fmu.fmus import Clutch, ClutchChain
from drivetrain_fmu.fmus import Engine
from drivetrain_fmu.fmus import Vehicle


def make(cls, **params):
    slave = cls(instance_name="budget", resources=None)
    for name, value in params.items():
        slave.assign({name: value})
    slave.exit_initialization_mode()
    return slave


def refused(slave, h, t=0.0):
    """(refused?, the refusal's message): one doStep of ``h`` with the state kept."""
    before = slave.state
    ok = slave.do_step(t, h)
    messages = [entry.msg for entry in slave.log_queue]
    slave.log_queue.clear()
    if not ok:
        assert slave.state is before           # a refused step leaves the state untouched
    return not ok, " | ".join(messages)


def counting(monkeypatch, module, name):
    """Count the calls of ``module.name`` (a right-hand side's building block)."""
    calls = [0]
    original = getattr(module, name)

    def counted(*args, **kwargs):
        calls[0] += 1
        return original(*args, **kwargs)
    monkeypatch.setattr(module, name, counted)
    return calls


def test_engine_whose_harmonics_cannot_be_resolved_is_refused_within_its_budget(monkeypatch):
    """Engine T0 = 10^4 N.m on J = 0.6 kg.m2 with h2 = 50, one 1 s step: the speed and the
    2nd-order harmonic grow so fast that DOPRI5 needs more than 10^5 steps (the old limit,
    reached after 2-7 s).  Budget for h = 1 s: min(500 + 2e4 x 1, 20 000) = 20 000 attempted
    steps; each costs 6 torque evaluations (FSAL) and the start one more, so at most
    6 x 20 000 + 1 evaluations before the refusal."""
    torque_calls = counting(monkeypatch, drivetrain_fmu.solvers.rigid, "engine_torque")
    engine = make(Engine, T0=1e4, h2=50.0)
    w_before = engine.w
    was_refused, message = refused(engine, 1.0)
    assert was_refused
    assert "more than 20000 integration steps" in message and "budget" in message
    assert "smaller communication step" in message
    assert torque_calls[0] <= 6 * 20_000 + 1
    assert engine.w == w_before


def test_stiff_clutch_is_refused_within_its_substep_budget(monkeypatch):
    """Clutch with a viscous coefficient d_visc = 10^6 N.m.s/rad between J_1 = 1e-3 and
    J_2 = 0.28 kg.m2 driven to slip (tau_1 = 10^4 N.m): slip dynamics of rate
    d_visc (1/J_1 + 1/J_2) = 1e9 1/s, which the explicit integrator follows only with steps
    of about 3 ns: a 1 ms step took 10^5 integration steps (3-4 s) before.  Budget for
    h = 1 ms: 500 + 2e4 x 1e-3 = 520 attempted steps, 6 friction evaluations each."""
    law_calls = counting(monkeypatch, drivetrain_fmu.solvers.friction.InterfaceLaw, "slipping_torque")
    clutch = make(Clutch, d_visc=1e6, J_1=1e-3, w_stribeck=1.0, tau_1=1e4)
    was_refused, message = refused(clutch, 1e-3)
    assert was_refused
    assert "friction chain: more than 520 integration steps" in message and "d_visc" in message
    assert law_calls[0] <= 6 * 520 + 10      # + the few evaluations of resolve and the events


def test_a_chain_step_over_its_event_budget_is_refused_naming_it(monkeypatch):
    """The event budget's plumbing: with a budget of no event at all, a ClutchChain step
    in which a slipping clutch locks (one event) is refused naming the budget, and the same
    step with the stated budget (100 + 1e4 h) is taken, with that one event."""
    chain = make(ClutchChain, n_bodies=2, w_1_start=1.0, f_n_1=1000.0)
    monkeypatch.setattr(drivetrain_fmu.solvers.friction, "EVENT_BUDGET", Budget("stick/slip events", 0, 0.0, 0))
    was_refused, message = refused(chain, 0.1)
    assert was_refused and "friction chain: more than 0 stick/slip events in one step" in message
    monkeypatch.undo()
    assert chain.do_step(0.0, 0.1) and chain.state.chain.modes == (drivetrain_fmu.solvers.friction.STUCK,)


def test_backlash_long_step_with_oscillating_bodies_is_refused_within_its_budget():
    """Backlash with both bodies on ground springs (10^4 N.m/rad), elastic impacts and a
    1000 s step: thousands of impacts, each found by a crossing search over the rest of the
    step; it took 26 s to reach the old limit of 10^4 events.  The searches of one step now
    share min(20 000 + 1e6 h, 200 000) interval halvings."""
    pair = make(Backlash, k_ground_1=1e4, k_ground_2=1e4, w_1_start=1.0, e_rest=1.0)
    was_refused, message = refused(pair, 1000.0)
    assert was_refused
    assert "backlash: more than 200000 crossing-search evaluations in one step" in message
    assert "smaller communication step" in message


def test_backlash_grazing_over_a_long_step_is_a_budget_refusal_not_an_internal_error():
    """Body 1 on a ground spring swinging through the clearance, one 1000 s step: the
    crossing search once gave up with "RuntimeError: first_crossing: no convergence
    (grazing contact?)", reported as an internal error; it is the budget's refusal now."""
    pair = make(Backlash, k_ground_1=1e4, w_1_start=1.0)
    was_refused, message = refused(pair, 1000.0)
    assert was_refused
    assert "internal error" not in message and "crossing-search evaluations" in message


def test_stiff_vehicle_is_refused_at_any_step_within_its_budget():
    """Vehicle with a 1 g front wheel on a 10^8 N/m tire (tire hop sqrt(k/m) = 3.2e5 rad/s,
    in range): rolling at 5 m/s it needs about 10^6 integration steps per simulated second,
    100 times the budget's rate of 10^4 per second.  One 0.1 s step took 28-60 s before and
    succeeded.  Refused now, naming the stiffness to change, at 0.05 s (budget
    min(200 + 1e4 x 0.05, 1000) = 700 attempted steps) and at 1 ms (budget 210) alike."""
    vehicle = make(Vehicle, m_wheel_f=1e-3, k_tire=1e8, settle_start=False, v_start=5.0)
    was_refused, message = refused(vehicle, 0.05)
    assert was_refused
    assert "vehicle: more than 700 integration steps in one step" in message and "k_tire" in message
    was_refused, message = refused(vehicle, 1e-3)
    assert was_refused and "vehicle: more than 210 integration steps in one step" in message
