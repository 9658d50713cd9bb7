"""The friction system's compiled kernels (solvers/friction_kernel.py and its ODE phases,
solvers/friction_ode_kernel.py) against their reference.

Compiled, a FrictionSystem hands its per-step calls (capacities, step_inputs, resolve,
advance, member_motion, _advance_ode) to the kernels; the reference (solvers/friction.py) is
the specification, so every float the kernels give must be the reference's bit for bit, and
every error the same.  Checked along random trajectories of every kind of friction system
the elements build (chains of 2..6 bodies with Coulomb, Stribeck and viscous laws, a brake,
a freewheel, a planetary gear set, a differential, an axle on two tires), each step taken as
an element takes it (the feedthrough's resolution, then ``advance`` with it) and also
without a start resolution, with the events recorded, and with per-interface losses.
"""
from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pytest

from drivetrain_fmu import fmus
from drivetrain_fmu.solvers.friction import ChainState, FrictionChain, FrictionSystem, InterfaceLaw, Mode

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_kernels import bits, compiled  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def kernel():
    """solvers.friction_kernel compiled, with the compiled ODE kernel it imports (in
    ``sys.modules`` only while it is imported: this process's references stay uncompiled)."""
    name = "drivetrain_fmu.solvers.friction_ode_kernel"
    sys.modules[name] = compiled("friction_ode_kernel")
    try:
        return compiled("friction_kernel")
    finally:
        del sys.modules[name]


@pytest.mark.parametrize("name", ["friction_kernel", "friction_ode_kernel"])
def test_an_uncompiled_friction_kernel_refuses_to_be_imported_and_the_reference_runs(name):
    spec = importlib.util.spec_from_file_location(f"drivetrain_fmu.solvers.{name}", ROOT / "solvers" / f"{name}.py")
    with pytest.raises(ImportError, match="runs compiled only"):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    system = FrictionChain([0.1, 0.2], [InterfaceLaw()])
    assert "advance" not in vars(system) and system.advance.__func__ is FrictionSystem.advance


def random_law(rng) -> InterfaceLaw:
    kind = rng.choice(["coulomb", "coulomb", "stribeck", "viscous", "equal"])
    mu_s = rng.uniform(0.2, 0.6)
    if kind == "equal":                 # mu_s = mu_k: no drop at breakaway
        return InterfaceLaw(mu_s, mu_s, 0.15, 2.0)
    mu_k = mu_s * rng.uniform(0.5, 1.0)
    if kind == "stribeck":
        return InterfaceLaw(mu_s, mu_k, 0.15, 2.0, w_stribeck=rng.uniform(0.5, 10.0),
                            alpha_stribeck=rng.choice([0.6, 1.0, 1.5, 2.0]), d_visc=rng.choice([0.0, 0.02]))
    return InterfaceLaw(mu_s, mu_k, 0.15, 2.0, d_visc=0.02 if kind == "viscous" else 0.0)


def element_system(name: str) -> FrictionSystem:
    """The friction system an element builds at its default parameters."""
    element = {model.__name__: model for model in fmus.MODELS}[name]()
    return element.build_system()


def systems():
    """(label, a maker of the system from a random generator)."""
    for n in range(2, 7):
        yield f"chain{n}", lambda rng, n=n: FrictionChain([10 ** rng.uniform(-2.0, 0.3) for _ in range(n)],
                                                          [random_law(rng) for _ in range(n - 1)])
    yield "brake", lambda rng: FrictionSystem([rng.uniform(0.05, 1.0)], [random_law(rng)], rows=[[1.0]])
    yield "freewheel", lambda rng: FrictionSystem([rng.uniform(0.05, 1.0), rng.uniform(0.05, 1.0)], [random_law(rng)],
                                                  rows=[[1.0, -1.0]], one_way=(0,))
    for name in ("PlanetaryGear", "Differential", "AxleVehicle", "DualClutch", "Synchronizer"):
        yield name, lambda rng, name=name: element_system(name)


def outcome(function, *args):
    """(the bits of ``function(*args)`` with the Mode types, None) or (None, the error's type
    and text)."""
    try:
        value = function(*args)
    except Exception as error:
        return None, (type(error), str(error))
    return (bits(value), types(value)), None


def types(value):
    """The types of the items of nested tuples and lists (a mode must stay a Mode)."""
    if isinstance(value, (list, tuple)):
        return [types(v) for v in value]
    return type(value)


@pytest.mark.parametrize("label, make", list(systems()), ids=[label for label, _ in systems()])
def test_the_kernel_gives_the_reference_floats_along_random_trajectories(kernel, label, make):
    """8 trajectories of 150 steps per kind of system: torques within +-2 capacities, normal
    forces 0 (free), one level or random, held 1..25 steps, steps of 0.1 to 10 ms; the
    trajectory follows the reference, the kernel takes each step from the same state."""
    compared = stuck = slipping = events_seen = 0
    for run in range(8):
        system, fast = make(random.Random(f"{label}-{run}")), make(random.Random(f"{label}-{run}"))
        vars(fast).update(kernel.compiled_methods(fast))         # as FrictionSystem.__init__ does compiled
        rng = random.Random(f"{label}-{run}-trajectory")
        m, members = system.n_interfaces, system.n
        coordinates = len(system._mass_free)
        speeds = [rng.choice([0.0, 0.0, rng.uniform(-20.0, 20.0)]) for _ in range(coordinates)]
        try:
            state = system.state_from_bodies([0.0] * coordinates, speeds)
        except ValueError:              # a freewheel cannot start slipping forward
            state = system.state_from_bodies([0.0] * coordinates, [0.0] * coordinates)
        hold = rng.choice([1, 5, 25])
        for k in range(150):
            if k % hold == 0:
                f_n = [rng.choice([0.0, 1000.0, rng.uniform(0.0, 2000.0)]) for _ in range(m)]
                level = 2.0 * 0.6 * 0.3 * 2000.0
                torques = [rng.uniform(-level, level) for _ in range(members)]
                h = rng.choice([1e-4, 1e-3, 1e-2])
            assert outcome(fast.capacities, f_n) == outcome(system.capacities, f_n)
            t_s, t_c = system.capacities(f_n)
            assert outcome(fast.step_inputs, torques) == outcome(system.step_inputs, torques)
            inputs = system.step_inputs(torques)
            resolution = outcome(fast.resolve, state.s, state.modes, inputs[1], t_s, t_c)
            assert resolution == outcome(system.resolve, state.s, state.modes, inputs[1], t_s, t_c)
            assert outcome(fast.member_motion, state) == outcome(system.member_motion, state)
            start = system.resolve(state.s, state.modes, inputs[1], t_s, t_c) if resolution[1] is None else None
            events, reference_events = [], []
            for args in ((state, torques, t_s, t_c, h, events, start, inputs),
                         (state, torques, t_s, t_c, h)):
                reference_args = (*args[:5], reference_events, *args[6:]) if len(args) > 5 else args
                assert outcome(fast.advance, *args) == outcome(system.advance, *reference_args)
            assert bits(events) == bits(reference_events)
            losses, reference_losses = [0.0] * m, [0.0] * m
            assert outcome(fast.advance, state, torques, t_s, t_c, h, None, start, inputs, losses) == \
                outcome(system.advance, state, torques, t_s, t_c, h, None, start, inputs, reference_losses)
            assert bits(losses) == bits(reference_losses)
            compared += 1
            events_seen += len(events)
            try:
                state = system.advance(state, torques, t_s, t_c, h, start=start, inputs=inputs)
            except Exception:           # a refused step: go on from the state before it
                continue
            stuck += Mode.STUCK in state.modes
            slipping += any(mode != Mode.STUCK for mode in state.modes)
    assert compared == 8 * 150
    # the trajectories cover stuck and slipping interfaces, and the chains' events
    assert stuck > 0 and slipping > 0, (stuck, slipping)
    if label.startswith("chain"):
        assert events_seen > 0


def test_the_kernel_takes_no_larger_system_and_a_compiled_system_uses_it(kernel):
    """A system beyond MAX_INTERFACES keeps the reference's methods; the kernels' methods of
    one within it are bound to its kernels."""
    law = InterfaceLaw()
    assert kernel.compiled_methods(FrictionChain([0.1] * 7, [law] * 6)) == {}
    methods = kernel.compiled_methods(FrictionChain([0.1] * 6, [law] * 5))
    assert sorted(methods) == ["_advance_ode", "advance", "capacities", "member_motion", "resolve", "step_inputs"]
    assert {type(method.__self__).__name__ for method in methods.values()} == {"FrictionKernel", "SlipPhases"}


def test_the_kernel_state_is_a_chain_state_of_modes(kernel):
    system = FrictionChain([0.1, 0.2, 0.3], [InterfaceLaw(), InterfaceLaw(0.3, 0.3)])
    state = system.state_from_bodies([0.0] * 3, [10.0, 0.0, -5.0])
    new = kernel.FrictionKernel(system).advance(state, [0.0, 50.0, 0.0], *system.capacities([500.0, 0.0]), 1e-3)
    assert type(new) is ChainState and all(type(mode) is Mode for mode in new.modes)
    assert new.modes == (Mode.FORWARD, Mode.FREE)
