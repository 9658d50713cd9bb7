"""The compiled kernels of the solvers (tools/generate_kernels.py) against their references.

A kernel is its reference's functions with C types for their locals, generated; compiled,
it replaces them (solvers/ode.py, solvers/vehicle_closed_form.py), uncompiled it refuses
to be imported and the reference runs.  Here: the kernels are up to date with their
references, and the compiled kernels give the reference's floats bit for bit, on the
vehicle's states in every contact mode and on random inputs (hypothesis), errors included.
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import itertools
import math
import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from drivetrain_fmu import build_fmus, compiled_modules
from drivetrain_fmu.solvers import compliance, dense, ode, rigid, vehicle_closed_form
from drivetrain_fmu.solvers.friction import Mode
from drivetrain_fmu.solvers.vehicle import PlanarVehicle, VehicleParams

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import generate_kernels  # noqa: E402

MODES = [m for m in itertools.product((Mode.STUCK, Mode.FORWARD, Mode.BACKWARD, Mode.FREE), repeat=4)
         if m != (Mode.STUCK,) * 4]          # all four stuck: the generic minimum-norm path
FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)


def compiled(name: str):
    """The kernel ``solvers.<name>`` compiled (through the build's cache), loaded apart from
    ``sys.modules`` (the references of this process stay uncompiled)."""
    try:
        compiled_modules.toolchain()
    except compiled_modules.CompileError as exc:
        pytest.skip(str(exc))
    return load_compiled(f"drivetrain_fmu.solvers.{name}", ROOT / "solvers" / f"{name}.py")


def load_compiled(qualified: str, source: Path):
    """The module ``qualified`` compiled from ``source`` (through the build's cache), loaded
    apart from ``sys.modules``."""
    compiled_modules.extensions({qualified: source})
    cached = compiled_modules.cached_path(qualified, compiled_modules.module_text(qualified, source))
    spec = importlib.util.spec_from_file_location(qualified, cached)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def compliance_kernel():
    return compiled("compliance_kernel")


@pytest.fixture(scope="module")
def rigid_kernel():
    return compiled("rigid_kernel")


@pytest.fixture(scope="module")
def dense_kernel():
    return compiled("dense_kernel")


@pytest.fixture(scope="module")
def ode_kernel():
    return compiled("ode_kernel")


@pytest.fixture(scope="module")
def vehicle_kernel():
    return compiled("vehicle_closed_form_kernel")


def bits(value):
    """``value`` (floats, nested in lists and tuples) as its exact bytes, for comparison; a
    NaN as "nan": IEEE 754 leaves the sign and payload of an operation's NaN unspecified, and
    gcc uses that (-(a * b) may become (-a) * b), so they differ; every NaN is rejected alike
    (solvers.contract)."""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else struct.pack("<d", value)
    if isinstance(value, (list, tuple)):
        return [bits(v) for v in value]
    return value


def outcome(function, *args):
    """(the bits of ``function(*args)``, None) or (None, the type of its error: its text is
    Cython's where compiled, "float division" for Python's "float division by zero")."""
    try:
        return bits(function(*args)), None
    except Exception as error:          # the same error is part of bit-identity
        return None, type(error)


def test_the_kernels_are_generated_from_their_references():
    assert generate_kernels.main(["--check"]) == 0, "python tools/generate_kernels.py"


@pytest.mark.parametrize("name", ["compliance_kernel", "dense_kernel", "ode_kernel", "rigid_kernel",
                                  "vehicle_closed_form_kernel"])
def test_an_uncompiled_kernel_refuses_to_be_imported_and_the_reference_runs(name):
    # from its source (the import system may find the build's compiled copy in the cache once
    # this process has called compiled_modules.prefer_compiled: the command's tests do)
    spec = importlib.util.spec_from_file_location(f"drivetrain_fmu.solvers.{name}", ROOT / "solvers" / f"{name}.py")
    with pytest.raises(ImportError, match="runs compiled only"):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    assert dense.matvec.__module__ == "drivetrain_fmu.solvers.dense"
    assert ode._rk_step.__module__ == "drivetrain_fmu.solvers.ode"
    assert vehicle_closed_form.closed_form_dynamics.__module__ == "drivetrain_fmu.solvers.vehicle_closed_form"


def shipped_sources() -> dict:
    """{module name: source} of every module an FMU carries: the element code and a system
    FMU's runtime (build_fmus.composite_modules, shipped as drivetrain_composite)."""
    return {**build_fmus.element_modules(),
            **{f"drivetrain_fmu.systems.{path.stem}": path for path in build_fmus.composite_modules().values()}}


def test_only_the_kernels_know_cython():
    """No shipped module but a generated kernel imports ``cython`` or declares a C type: the
    rest is compiled unchanged (compiled_modules) and runs as it reads where Cython is absent."""
    knowing = {name for name, path in shipped_sources().items()
               if any(isinstance(node, (ast.Import, ast.ImportFrom))
                      and any(alias.name.split(".")[0] == "cython" for alias in node.names)
                      or isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "cython"
                      or isinstance(node, ast.Name) and node.id == "cython"
                      for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))}
    kernels = {name for name in shipped_sources() if name.endswith("_kernel")}
    assert kernels and knowing == kernels, sorted(knowing ^ kernels)


#: imports the modules with Cython hidden (as in a host without it)
HIDDEN = """
import importlib, importlib.abc, sys
class HideCython(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("cython", "Cython"):
            raise ImportError(f"No module named {name!r} (hidden by the test)")
sys.meta_path.insert(0, HideCython())
for name in sys.argv[1:]:
    importlib.import_module(name)
from drivetrain_fmu.solvers import dense
assert dense.matvec.__module__ == "drivetrain_fmu.solvers.dense", dense.matvec.__module__
"""


def test_every_shipped_module_but_the_kernels_imports_where_cython_is_absent():
    names = sorted(name for name in shipped_sources() if not name.endswith("_kernel"))
    done = subprocess.run([sys.executable, "-c", HIDDEN, *names], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


@settings(max_examples=500, deadline=None)
@given(st.lists(FINITE, min_size=6, max_size=6), st.sampled_from([0.0, 1e-300, 1e-3, 0.02, 0.05, 0.3, 20.0]))
def test_the_compliance_and_rigid_body_laws_are_the_reference_bit_for_bit(compliance_kernel, rigid_kernel, values,
                                                                          damping):
    """Any floats, and the damping at the rigid body's branch points (x = d h / J near 0.05)."""
    a, b, c, d, e, f = values
    assert outcome(compliance_kernel.twist, a, b, c, d, e, f) == outcome(compliance.twist, a, b, c, d, e, f)
    assert outcome(compliance_kernel.spring_damper_torque, a, b, c, d, e) == \
        outcome(compliance.spring_damper_torque, a, b, c, d, e)
    assert outcome(compliance_kernel.spring_energy, a, b) == outcome(compliance.spring_energy, a, b)
    for arguments in ((a, b, 1.0, c, damping, 1.0), (a, b, abs(c) + 0.1, d, abs(e), 1e-3), (a, b, c, d, e, f)):
        assert outcome(rigid_kernel.damped_motion, *arguments) == outcome(rigid.damped_motion, *arguments)


def square_and_vector(n):
    return st.tuples(st.lists(st.lists(FINITE, min_size=n, max_size=n), min_size=n, max_size=n),
                     st.lists(FINITE, min_size=n, max_size=n))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 12).flatmap(square_and_vector))
def test_the_matrix_products_are_the_reference_bit_for_bit(dense_kernel, case):
    a, x = case
    assert outcome(dense_kernel.dot, a[0], x) == outcome(dense.dot, a[0], x)
    assert outcome(dense_kernel.matvec, a, x) == outcome(dense.matvec, a, x)
    assert outcome(dense_kernel.quadratic_form, a, x) == outcome(dense.quadratic_form, a, x)


def test_the_products_sum_in_index_order_on_every_python():
    """One rounding per addition from 0.0, as sum() of floats on CPython 3.11 (3.12 and newer
    compensate it: the results would depend on the host's version)."""
    x, y = [1.0, 1e100, 1.0, -1e100], [1.0, 1.0, 1.0, 1.0]
    assert dense.dot(x, y) == ((((0.0 + 1.0) + 1e100) + 1.0) - 1e100) == 0.0
    assert dense.matvec([x, y], y) == [0.0, 4.0]


def test_the_runge_kutta_step_and_error_norm_are_the_reference_bit_for_bit(ode_kernel):
    rng = random.Random(5)
    for _ in range(300):
        n = rng.randint(1, 20)
        weights = [rng.uniform(-5, 5) for _ in range(n)]

        def fun(t, y, weights=weights):
            return tuple(w * math.sin(v + t) for w, v in zip(weights, y))     # a tuple: _listed converts it

        y0 = [rng.uniform(-1, 1) * 10 ** rng.uniform(-8, 8) for _ in range(n)]
        f0, h, t = list(fun(0.1, y0)), 10 ** rng.uniform(-9, 0), rng.uniform(0, 100)
        step = ode._rk_step(fun, t, y0, f0, h)
        assert bits(ode_kernel._rk_step(fun, t, y0, f0, h)) == bits(step)
        y_new, _, err = step
        for atol, rtol in ((1e-12, 1e-10), (1e-9, 1e-11), (0.0, 1e-10)):
            assert bits(ode_kernel._error_norm(err, y0, y_new, atol, rtol)) == \
                bits(ode._error_norm(err, y0, y_new, atol, rtol))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(FINITE, FINITE, FINITE), min_size=1, max_size=20), FINITE, FINITE)
def test_the_error_norm_is_the_reference_bit_for_bit_on_any_floats(ode_kernel, triples, atol, rtol):
    err, y, y_new = (list(column) for column in zip(*triples))
    assert outcome(ode_kernel._error_norm, err, y, y_new, atol, rtol) == \
        outcome(ode._error_norm, err, y, y_new, atol, rtol)


def _vehicle_arguments(model: PlanarVehicle, modes):
    p = model.p
    return (*modes, p.m_body, p.J_body, p.m_wheel_f, p.J_wheel_f, p.m_wheel_r, p.J_wheel_r, p.a, p.b, p.R,
            p.k_susp, p.c_susp, p.k_tire, *model.free_length, *model.damping_tire, p.mu_s_road, p.mu_k_road,
            p.delta_roll, p.alpha_bg, p.beta_bg)


def _both_evaluate(kernel, model, modes, torque, t, yy):
    """(bits of y', of ``last``, fallback calls) of the reference's and the kernel's evaluate."""
    results = []
    for closed_form_dynamics in (vehicle_closed_form.closed_form_dynamics, kernel.closed_form_dynamics):
        last, fallen_back = [None] * 4, []

        def fallback(t, yy, fallen_back=fallen_back):
            fallen_back.append(bits(list(yy)))
            return "fallback"

        evaluate = closed_form_dynamics(*_vehicle_arguments(model, modes), torque, last, fallback)
        results.append((outcome(evaluate, t, yy), bits(last[1:]), fallen_back))
    return results


def test_the_vehicle_closed_form_is_the_reference_bit_for_bit_in_every_contact_mode(vehicle_kernel):
    """Near the F1 steady state (as tests/numerics/test_vehicle_solver.py), perturbed."""
    model = PlanarVehicle(VehicleParams())
    state = model.initial_state(0.0, 5.0, 20.0, 20.0, settle=False)
    for _ in range(50):
        state = model.step(state, 200.0, 0.0, 1e-3).state
    rng = random.Random(7)
    for _ in range(10):
        yy = [v + rng.uniform(-1e-3, 1e-3) for v in state.q] + [v + rng.uniform(-0.1, 0.1) for v in state.qd]
        for modes in MODES:
            reference, kernel = _both_evaluate(vehicle_kernel, model, modes, [150.0, -40.0], 0.3, yy)
            assert reference[0][1] is None, reference
            assert kernel == reference, modes


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(MODES), st.lists(FINITE, min_size=18, max_size=18), FINITE, FINITE,
       st.floats(0.1, 10.0), st.floats(0.05, 2.0))
def test_the_vehicle_closed_form_is_the_reference_bit_for_bit_on_any_state(vehicle_kernel, modes, yy, tau_f,
                                                                            tau_r, wheel_mass, wheel_inertia):
    """Any floats for the state and torques, light or heavy wheels: the same floats, the same
    error (overflow to inf, inf - inf = nan are floats too), the same fallback calls."""
    model = PlanarVehicle(VehicleParams(m_wheel_f=wheel_mass, J_wheel_r=wheel_inertia))
    reference, kernel = _both_evaluate(vehicle_kernel, model, modes, [tau_f, tau_r], 0.0, yy)
    assert kernel == reference


@settings(max_examples=300, deadline=None)
@given(st.lists(FINITE, min_size=9, max_size=9), st.sets(st.integers(0, 3)), st.floats(0.05, 2.0),
       st.floats(0.1, 10.0))
def test_the_vehicle_snap_is_the_reference_bit_for_bit(vehicle_kernel, qd, contacts, R, wheel_inertia):
    model = PlanarVehicle(VehicleParams(R=R, h=R + 0.5, J_wheel_f=wheel_inertia))
    contacts = sorted(contacts)
    assert outcome(vehicle_kernel.closed_form_snap, qd, contacts, R, model.inv_mass) == \
        outcome(vehicle_closed_form.closed_form_snap, qd, contacts, R, model.inv_mass)
