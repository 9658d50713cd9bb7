"""Property-based campaign over one element FMU (issue #17), run in its own process.

tests/elements/test_fuzz.py starts one such process per element of ``fmus.ELEMENTS`` so that a
crash of the FMU (a signal) ends only that process and shows as a failing test naming
the element, the signal, the seed and the last case.  The process drives the built FMU
through fmpy's low-level ``FMU2Slave`` API and imports neither ``fmus`` nor ``solvers``
(the FMU's own copy of them is the one under test): the element's declared variables
come as a JSON spec (:func:`element_spec`) written by the caller.

A case is the FMU's parameters (drawn within their declared ranges, the others left at
their start values), then a few communication steps, each with its inputs (finite,
within their declared ranges) and its step size (1e-6 .. 1 s).  Properties checked on
every case:

1. the process survives (checked by the caller: no signal, no hang guard exit);
2. a doStep that returns fmi2OK leaves every Real output finite (a feedthrough output
   may instead fail its get, as docs/errors.md allows, with a log naming it);
3. a doStep that returns fmi2Discard or fmi2Error logs a message and leaves every output
   and the serialized FMU state bit-identical to what they were before it;
4. every FMI call returns within the hang guard (HANG_GUARD_S, a liveness guard and not a
   speed target: the project has no timed tests; a step whose cost exceeds an element's
   own event/substep budget is refused with a message, which is a valid outcome);
plus: parameters refused at fmi2ExitInitializationMode (cross-checks, a model that cannot
be built) are a valid outcome when the log names a variable; a doStep never returns
fmi2Fatal.

Usage (tests/elements/test_fuzz.py does this; the spec is built from ``fmus`` when not given):

    python tests/elements/fuzz_campaign.py --fmus DIR --element Clutch [--examples N] [--seed S]
    python tests/elements/fuzz_campaign.py --fmus DIR --element Clutch --replay CASE.json   # one case, verbose
    python tests/elements/fuzz_campaign.py --fmus DIR --element Clutch --keep-going        # report every violation

Output: one ``CASE {json}`` line before each case is run (the last one reproduces a
crash), ``PROGRESS`` lines, ``FINDING``/``FALSIFIED {json}`` lines for violations and a
final ``SUMMARY {json}`` line; exit 0 when every property held.  SIGINT (Ctrl-C, ``timeout
-s INT``) ends the campaign after the case under way (a few seconds at most: every doStep's
cost is bounded) with the SUMMARY of the cases run (``"interrupted": true``) and exit status
130.  Its handler only notes the signal (:class:`StopRequest`), and the campaign stops
between cases: a KeyboardInterrupt raised wherever Python happened to be was lost where
Python drops exceptions, in a garbage-collector callback of hypothesis (the campaign then
ran on for minutes) or inside fmi2Instantiate (a false finding, "Failed to instantiate
model"); before the FMUs passed interrupts on (fmus/shell.py), one inside an FMU call made
it fmi2Fatal, taken for a finding and shrunk for up to ``--shrink-seconds`` (300 s).
"""
from __future__ import annotations

import argparse
import ast
import faulthandler
import functools
import io
import json
import math
import re
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: liveness guard per FMI call, seconds.  Not a speed target (the project forbids timed
#: tests): it only turns a call that never returns into a failing test that names the
#: case instead of a CI job killed without a word.
HANG_GUARD_S = 60.0
STEP_MIN, STEP_MAX = 1e-6, 1.0
#: offsets from a bound that a value "near the bound" takes (the smallest subnormal first)
NEAR = (5e-324, 1e-300, 1e-100, 1e-15, 1e-9, 1e-6)
OK, WARNING, DISCARD, ERROR, FATAL = range(5)
STATUS = ["OK", "Warning", "Discard", "Error", "Fatal", "Pending"]
#: separators of the logger's fields and records (a bytes repr writes them as escapes)
_FIELD, _RECORD = "\x1f", "\x1e"


# ---------------------------------------------------------------------------- spec
def element_spec(element) -> dict:
    """What the campaign needs of an element class (plain JSON: no import of ``fmus``
    in the campaign process)."""
    return {
        "element": element.__name__,
        "variables": [{"name": v.name, "causality": v.causality, "type": v.type, "unit": v.unit,
                       "start": v.start, "low": v.low, "high": v.high, "low_open": v.low_open,
                       "feedthrough": bool(v.depends)} for v in element.VARIABLES],
    }


def spec_from_sources(name: str) -> dict:
    """The spec of element ``name`` from ``drivetrain_fmu.fmus``, read in another process
    (importing the element code here would make the FMU share that copy of it)."""
    code = ("import json, sys; from drivetrain_fmu import fmus; "
            "sys.path.insert(0, sys.argv[1]); from fuzz_campaign import element_spec; "
            "print(json.dumps(element_spec({e.__name__: e for e in fmus.ELEMENTS}[sys.argv[2]])))")
    out = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent), name],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout)


# ---------------------------------------------------------------------------- strategies
def _strategies():
    from hypothesis import strategies as st

    def log_uniform(lo_exp, hi_exp):
        """10**e for e uniform in [lo_exp, hi_exp] (shrinks towards 10**lo_exp)."""
        return st.floats(lo_exp, hi_exp).map(lambda e: 10.0 ** e)

    def weighted(draw, weights):
        """Index i drawn with probability weights[i] / sum(weights) (shrinks towards 0)."""
        pick = draw(st.integers(0, sum(weights) - 1))
        for i, weight in enumerate(weights):
            if pick < weight:
                return i
            pick -= weight
        raise AssertionError

    def above(lo, open_, offset):
        value = lo + offset
        if value < lo or (open_ and value == lo):
            value = math.nextafter(lo, math.inf)
        return value

    def clip(var, value):
        lo, hi = var["low"], var["high"]
        if hi is not None and value > hi:
            value = hi
        if lo is not None and (value < lo or (var["low_open"] and value == lo)):
            value = math.nextafter(lo, math.inf) if var["low_open"] else lo
        return value

    def signed(draw, magnitude):
        return magnitude if draw(st.booleans()) else -magnitude

    @st.composite
    def real_parameter(draw, var):
        """A Real parameter within its declared range: moderate rescalings of the start value,
        log-uniform magnitudes up to 1e6 on an unbounded side, values at and next to the
        bounds (the smallest subnormal above an open 0 included)."""
        lo, hi, open_, start = var["low"], var["high"], var["low_open"], float(var["start"])
        if lo is not None and hi is not None:
            kind = weighted(draw, [4, 2, 2, 1, 1])
            if kind == 0:
                return draw(st.floats(lo, hi, exclude_min=open_))
            if kind == 1:
                return hi
            if kind == 2:
                return above(lo, open_, draw(st.sampled_from(NEAR)) * max(1.0, abs(lo)))
            if kind == 3:
                return math.nextafter(hi, -math.inf)
            return lo if not open_ else math.nextafter(lo, math.inf)
        kind = weighted(draw, [4, 4, 2, 1])
        if kind == 0 and start != 0.0:      # the start value rescaled by 1e-3 .. 1e3
            return clip(var, start * draw(log_uniform(-3, 3)))
        if kind in (0, 1):                  # a magnitude 1e-6 .. 1e6
            magnitude = draw(log_uniform(-6, 6))
            if lo is not None:
                return above(lo, open_, magnitude)
            if hi is not None:
                return hi - magnitude
            return signed(draw, magnitude)
        if kind == 2:                       # next to the bound
            if lo is not None:
                if not open_ and draw(st.booleans()):
                    return lo
                return above(lo, open_, draw(st.sampled_from(NEAR)) * max(1.0, abs(lo)))
            if hi is not None:
                return hi - draw(st.sampled_from((0.0,) + NEAR)) * max(1.0, abs(hi))
            return signed(draw, draw(st.sampled_from(NEAR)))
        return 0.0 if lo is None or (lo <= 0.0 and not (open_ and lo == 0.0)) else above(lo, open_, 0.0)

    @st.composite
    def real_input(draw, var):
        """A finite Real input within its declared range: mostly moderate (1e-3 .. 1e3, or 0,
        or the bound), sometimes large (1e3 .. 1e6)."""
        lo, hi, open_ = var["low"], var["high"], var["low_open"]
        if lo is not None and hi is not None:
            return draw(st.floats(lo, hi, exclude_min=open_))
        kind = weighted(draw, [7, 1, 2])
        if kind == 1:
            return clip(var, lo if lo is not None else (hi if hi is not None else 0.0))
        magnitude = draw(log_uniform(-3, 3) if kind == 0 else log_uniform(3, 6))
        if lo is not None:
            return above(lo, open_, magnitude)
        if hi is not None:
            return hi - magnitude
        return signed(draw, magnitude)

    def value(var, kind_of_value):
        if var["type"] == "Boolean":
            return st.booleans()
        if var["type"] == "Integer":
            lo = -1000 if var["low"] is None else int(var["low"]) + (1 if var["low_open"] else 0)
            hi = 1000 if var["high"] is None else int(var["high"])
            return st.integers(lo, hi)
        return kind_of_value(var)

    def step_size(draw, time_parameters):
        """1e-6 .. 1 s log-uniform, the usual 1 ms, the ends, or the value of one of the
        case's time parameters when it is a step size (T_comm: a step of another size is
        refused by design)."""
        kind = weighted(draw, [6, 2, 1, 2])
        if kind == 1:
            return 1e-3
        if kind == 2:
            return draw(st.sampled_from((STEP_MIN, STEP_MAX)))
        if kind == 3 and time_parameters:
            return draw(st.sampled_from(time_parameters))
        return draw(log_uniform(math.log10(STEP_MIN), math.log10(STEP_MAX)))

    def cases(spec):
        variables = spec["variables"]
        parameters = [v for v in variables if v["causality"] == "parameter"]
        inputs = [v for v in variables if v["causality"] == "input"]

        @st.composite
        def case(draw):
            # the share of parameters drawn; the others keep their start values (a parameter
            # is drawn for a high pick, so that shrinking leaves it at its start value)
            rate = draw(st.sampled_from((0.0, 0.1, 0.3, 0.9)))
            chosen = {}
            for var in parameters:
                if rate and draw(st.integers(0, 99)) >= 100 - rate * 100:
                    chosen[var["name"]] = draw(value(var, real_parameter))
            effective = {v["name"]: chosen.get(v["name"], v["start"]) for v in parameters}
            time_parameters = sorted({float(effective[v["name"]]) for v in parameters
                                      if v["unit"] == "s" and v["type"] == "Real"
                                      and STEP_MIN <= float(effective[v["name"]]) <= STEP_MAX})
            current = {v["name"]: v["start"] for v in inputs}
            steps = []
            for j in range(draw(st.integers(1, 6))):
                if inputs and (j == 0 or draw(st.booleans())):      # else the inputs are held
                    for var in inputs:
                        if draw(st.integers(0, 9)) >= 3:
                            current[var["name"]] = draw(value(var, real_input))
                steps.append({"inputs": dict(current), "h": step_size(draw, time_parameters)})
            return {"element": spec["element"], "parameters": chosen, "steps": steps}

        return case()

    return cases


# ---------------------------------------------------------------------------- FMU driver
class Violation(AssertionError):
    """A property does not hold (subclasses: one per property, so that hypothesis reports
    distinct failures separately)."""


class NonFiniteOutput(Violation):
    pass


class RefusedStepChanged(Violation):
    pass


class UnexplainedRefusal(Violation):
    pass


class FatalCall(Violation):
    pass


class Driver:
    """One FMU loaded once; every case instantiates and frees an instance of it."""

    def __init__(self, fmu_dir: Path, spec: dict, verbose=False):
        from fmpy import extract, read_model_description
        from fmpy.fmi2 import (FMU2Slave, calloc, fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE,
                               fmi2CallbackFunctions, fmi2CallbackLoggerTYPE, free)

        self.spec, self.verbose = spec, verbose
        path = Path(fmu_dir) / f"{spec['element']}.fmu"
        md = read_model_description(str(path))
        self.slave = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(path)),
                               modelIdentifier=md.coSimulation.modelIdentifier, instanceName=spec["element"])
        self.messages: list[tuple[int, str]] = []
        # the FMU's logger runs C code only (print of the arguments' reprs into a StringIO, read
        # after each call: _read_log): Python runs a signal's handler at the next bytecode, and
        # in a Python logger called through ctypes the KeyboardInterrupt of a Ctrl-C that arrived
        # meanwhile was dropped ("Exception ignored on calling ctypes callback function")
        self._log = io.StringIO()
        self.callbacks = fmi2CallbackFunctions()
        self.callbacks.logger = fmi2CallbackLoggerTYPE(
            functools.partial(print, sep=_FIELD, end=_RECORD, file=self._log))
        self.callbacks.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
        self.callbacks.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
        declared = {v.name: v for v in md.modelVariables}
        missing = [v["name"] for v in spec["variables"] if v["name"] not in declared]
        if missing:
            raise SystemExit(f"{path} does not declare {missing}: built from other sources than the spec")
        self.vr = {name: v.valueReference for name, v in declared.items()}
        self.types = {v["name"]: v["type"] for v in spec["variables"]}
        outputs = [v for v in spec["variables"] if v["causality"] == "output"]
        # (Real, Integer, Boolean) value references of the state outputs and of the feedthrough ones
        self.state_outputs = self._by_type([v for v in outputs if not v["feedthrough"]])
        self.feedthrough_outputs = self._by_type([v for v in outputs if v["feedthrough"]])
        self.names = {vr: name for name, vr in self.vr.items()}
        self.variable_names = [v["name"] for v in spec["variables"]]
        self.stats = {"cases": 0, "init_refused": 0, "steps_ok": 0, "steps_refused": 0, "get_refused": 0,
                      "max_call_s": 0.0, "max_call": ""}

    def _by_type(self, variables):
        return {kind: [self.vr[v["name"]] for v in variables if v["type"] == kind]
                for kind in ("Real", "Integer", "Boolean")}

    # -- calls -------------------------------------------------------------
    def call(self, label, function, *args):
        """(status, result) of an FMI call under the hang guard; status OK..Fatal."""
        from fmpy.fmi1 import FMICallException

        faulthandler.dump_traceback_later(HANG_GUARD_S, exit=True)
        start = time.perf_counter()
        try:
            result, status = function(*args), OK
        except FMICallException as exc:
            result, status = None, exc.status
        finally:
            faulthandler.cancel_dump_traceback_later()
            self._read_log()
        took = time.perf_counter() - start
        if took > self.stats["max_call_s"]:
            self.stats["max_call_s"], self.stats["max_call"] = took, label
        if self.verbose:
            print(f"  {label} -> {STATUS[status]} ({took:.3g} s){'' if result is None else f' {result!r}'}")
        return status, result

    def _read_log(self):
        """Move what the logger printed into ``messages`` as (status, text)."""
        printed = self._log.getvalue()
        if printed:
            self._log.seek(0)
            self._log.truncate()
            for record in printed.split(_RECORD)[:-1]:
                _, _, status, _, message = record.split(_FIELD)
                self.messages.append((int(status), ast.literal_eval(message).decode("utf-8", errors="replace")))

    def logged_since(self, mark):
        return [text for _, text in self.messages[mark:]]

    def names_a_variable(self, texts) -> bool:
        """True when a message names one of the element's variables ("J_1", "mu_k = ...";
        one-letter names such as Vehicle's "a" only as "a = ...")."""
        joined = "\n".join(texts)
        for name in self.variable_names:
            pattern = rf"(?<!\w){re.escape(name)}(?!\w)" if len(name) > 1 else rf"(?<!\w){name} ="
            if re.search(pattern, joined):
                return True
        return False

    def set_values(self, label, values: dict):
        by_type = {"Real": ([], []), "Integer": ([], []), "Boolean": ([], [])}
        for name, value in values.items():
            refs, vals = by_type[self.types[name]]
            refs.append(self.vr[name])
            vals.append(value)
        setters = {"Real": self.slave.setReal, "Integer": self.slave.setInteger, "Boolean": self.slave.setBoolean}
        for kind, (refs, vals) in by_type.items():
            if refs:
                mark = len(self.messages)
                status, _ = self.call(f"fmi2Set{kind} {label}", setters[kind], refs, vals)
                if status > WARNING:
                    raise FatalCall(f"fmi2Set{kind} of {label} {dict(zip(map(self.names.get, refs), vals))} "
                                    f"(within the declared ranges) returned {STATUS[status]}: "
                                    f"{self.logged_since(mark)}")

    def outputs(self, which, label):
        """{kind: values} of the outputs ``which`` (None when a get was refused).  A get that
        returns fmi2OK with a non-finite Real output violates property 2 (after an accepted
        doStep, and equally after initialization or a refused step)."""
        getters = {"Real": self.slave.getReal, "Integer": self.slave.getInteger, "Boolean": self.slave.getBoolean}
        values = {}
        for kind, refs in which.items():
            if refs:
                status, got = self.call(f"fmi2Get{kind} {label}", getters[kind], refs)
                if status != OK:
                    return None
                values[kind] = list(got)
        bad = {self.names[vr]: x for vr, x in zip(which["Real"], values.get("Real", [])) if not math.isfinite(x)}
        if bad:
            raise NonFiniteOutput(f"fmi2GetReal {label} returned fmi2OK with non-finite outputs {bad}")
        return values

    def serialized_state(self, label):
        status, state = self.call(f"fmi2GetFMUstate {label}", self.slave.getFMUstate)
        if status != OK:
            raise FatalCall(f"fmi2GetFMUstate {label} returned {STATUS[status]}")
        status, data = self.call(f"fmi2SerializeFMUstate {label}", self.slave.serializeFMUstate, state)
        self.call("fmi2FreeFMUstate", self.slave.freeFMUstate, state)
        if status != OK:
            raise FatalCall(f"fmi2SerializeFMUstate {label} returned {STATUS[status]}")
        return data

    def snapshot(self, label):
        """(state outputs, feedthrough outputs or None when their get failed, serialized state)."""
        mark = len(self.messages)
        state_outputs = self.outputs(self.state_outputs, label)
        if state_outputs is None:
            raise FatalCall(f"a get of the state outputs {label} failed: {self.logged_since(mark)}")
        return state_outputs, self.feedthrough(label), self.serialized_state(label)

    def feedthrough(self, label):
        """The feedthrough outputs, or None when their get is refused with a log naming an
        output (docs/errors.md: a feedthrough output that is not finite at the inputs set fails the
        get; the instance is then only freed)."""
        mark = len(self.messages)
        values = self.outputs(self.feedthrough_outputs, label)
        if values is None:
            texts = self.logged_since(mark)
            if not self.names_a_variable(texts):
                raise UnexplainedRefusal(f"a get of the feedthrough outputs {label} failed without a "
                                         f"message naming a variable: {texts}")
            self.stats["get_refused"] += 1
        return values

    # -- one case ----------------------------------------------------------
    def run(self, case):
        self.stats["cases"] += 1
        self.messages.clear()
        status, _ = self.call("fmi2Instantiate", self.slave.instantiate, False, self.callbacks, True)
        try:
            self._run(case)
        finally:
            self.call("fmi2FreeInstance", self.slave.fmi2FreeInstance, self.slave.component)

    def _run(self, case):
        slave = self.slave
        self.call("fmi2SetupExperiment", slave.setupExperiment, None, 0.0)
        self.call("fmi2EnterInitializationMode", slave.enterInitializationMode)
        self.set_values("parameters", case["parameters"])
        if case["steps"]:
            self.set_values("inputs of step 0", case["steps"][0]["inputs"])
        mark = len(self.messages)
        status, _ = self.call("fmi2ExitInitializationMode", slave.exitInitializationMode)
        if status != OK:
            texts = self.logged_since(mark)
            if not self.names_a_variable(texts):
                raise UnexplainedRefusal(f"fmi2ExitInitializationMode returned {STATUS[status]} without a message "
                                         f"naming a variable: {texts}")
            self.stats["init_refused"] += 1
            return
        t = 0.0
        for j, step in enumerate(case["steps"]):
            where = f"before step {j}"
            self.set_values(f"inputs of step {j}", step["inputs"])
            before = self.snapshot(where)
            if before[1] is None:
                return                      # a feedthrough get refused: the instance is lost
            mark = len(self.messages)
            status, _ = self.call(f"fmi2DoStep {j} (t = {t!r}, h = {step['h']!r})", slave.doStep, t, step["h"])
            texts = self.logged_since(mark)
            if status == OK:
                self.stats["steps_ok"] += 1
                where = f"after the accepted (fmi2OK) step {j}"
                if self.outputs(self.state_outputs, where) is None:
                    raise FatalCall(f"a get of the state outputs {where} failed: {self.logged_since(mark)}")
                if self.feedthrough(where) is None:
                    return
                t += step["h"]
            elif status in (DISCARD, ERROR):
                self.stats["steps_refused"] += 1
                if not texts:
                    raise UnexplainedRefusal(f"doStep {j} returned {STATUS[status]} without a log message")
                after = self.snapshot(f"after the refused step {j}")
                if not _identical(before, after):
                    raise RefusedStepChanged(f"doStep {j} returned {STATUS[status]} ({texts}) but changed "
                                             f"{_difference(before, after, self.names, self.state_outputs, self.feedthrough_outputs)}")
            else:
                raise FatalCall(f"doStep {j} returned {STATUS[status]} (a refusal is fmi2Discard and keeps the "
                                f"instance usable): {texts}")
        self.call("fmi2Terminate", slave.terminate)


def _bits(values):
    """Values as exact text (float.hex: -0.0 and NaN payload-free bit identity)."""
    if values is None:
        return None
    return {kind: [x.hex() if isinstance(x, float) else repr(x) for x in xs] for kind, xs in values.items()}


def _identical(before, after):
    return all(_bits(b) == _bits(a) for b, a in zip(before[:2], after[:2])) and before[2] == after[2]


def _difference(before, after, names, state_refs, feedthrough_refs):
    changes = []
    for (b, a, refs) in ((before[0], after[0], state_refs), (before[1], after[1], feedthrough_refs)):
        if b is None or a is None:
            changes.append(f"feedthrough get {'ok' if b is not None else 'refused'} -> "
                           f"{'ok' if a is not None else 'refused'}")
            continue
        for kind, xs in b.items():
            for vr, x, y in zip(refs[kind], xs, a[kind]):
                if _bits({"k": [x]}) != _bits({"k": [y]}):
                    changes.append(f"{names[vr]}: {x!r} -> {y!r}")
    if before[2] != after[2]:
        changes.append(f"serialized state {before[2][:300]!r} -> {after[2][:300]!r}")
    return "; ".join(changes)


# ---------------------------------------------------------------------------- campaign
def element_seed(seed: int, element: str) -> int:
    """The hypothesis seed of one element's campaign (each element its own stream)."""
    return seed * 1_000_003 + zlib.crc32(element.encode())


class StopRequest:
    """The SIGINT handler of a campaign: it notes the signal and raises nothing (an exception
    raised from a handler goes wherever Python is, and some places drop it); the campaign
    asks :meth:`raise_if_asked` between cases."""

    def __init__(self):
        self.asked = False

    def __call__(self, signum, frame):
        self.asked = True

    def raise_if_asked(self):
        if self.asked:
            raise KeyboardInterrupt


STOP = StopRequest()


def campaign(driver: Driver, examples: int, seed: int, keep_going: bool, shrink_seconds: float) -> int:
    from hypothesis import HealthCheck, Phase, example, given, settings
    from hypothesis import seed as hypothesis_seed
    import hypothesis.internal.conjecture.engine as engine

    # bound the time hypothesis spends shrinking a failure (its internal limit, 300 s, has no
    # setting; if a later hypothesis drops the name this only leaves its own limit in place)
    if hasattr(engine, "MAX_SHRINKING_SECONDS"):
        engine.MAX_SHRINKING_SECONDS = shrink_seconds
    spec = driver.spec
    element = spec["element"]
    every = max(1, min(100, examples // 10))
    findings = []
    defaults = {"element": element, "parameters": {},
                "steps": [{"inputs": {v["name"]: v["start"] for v in spec["variables"] if v["causality"] == "input"},
                           "h": 1e-3}] * 3}

    @settings(max_examples=examples, database=None, deadline=None, print_blob=False,
              suppress_health_check=list(HealthCheck),
              phases=(Phase.explicit, Phase.generate) + (() if keep_going else (Phase.shrink,)))
    @hypothesis_seed(element_seed(seed, element))
    @example(defaults)
    @given(_strategies()(spec))
    def one_case(case):
        STOP.raise_if_asked()
        print("CASE", json.dumps(case), flush=True)
        try:
            driver.run(case)
        except Violation as exc:
            if not keep_going:
                error = type(exc)(str(exc))
                error.case = case
                raise error from None
            findings.append({"kind": type(exc).__name__, "message": str(exc), "case": case})
            print("FINDING", json.dumps(findings[-1]), flush=True)
        n = driver.stats["cases"]
        if n % every == 0:
            print(f"PROGRESS {element}: {n}/{examples} cases, {driver.stats['steps_ok']} steps ok, "
                  f"{driver.stats['steps_refused']} refused, {driver.stats['init_refused']} initializations refused, "
                  f"{len(findings)} findings", flush=True)

    failed = []
    try:
        one_case()
    except Exception as exc:        # hypothesis re-raises the (shrunk) failures, several as a group
        group = getattr(exc, "exceptions", None) or [exc]      # an ExceptionGroup holds several
        for error in group:
            failed.append({"kind": type(error).__name__, "message": str(error), "case": getattr(error, "case", None)})
            print("FALSIFIED", json.dumps(failed[-1]), flush=True)
    print("SUMMARY", json.dumps({"element": element, "seed": seed, "examples": examples, **driver.stats,
                                 "findings": len(findings), "falsified": len(failed)}), flush=True)
    return 1 if failed or findings else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fmus", type=Path, required=True, help="folder of the built FMUs")
    parser.add_argument("--element", required=True)
    parser.add_argument("--spec", type=Path, help="the element's spec (JSON of element_spec; default: "
                                                  "from this checkout's fmus)")
    parser.add_argument("--examples", type=int, default=100, help="cases (hypothesis max_examples)")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--keep-going", action="store_true",
                        help="record every violation and go on (no shrinking) instead of stopping at the first")
    parser.add_argument("--shrink-seconds", type=float, default=300.0, help="time hypothesis may spend shrinking")
    parser.add_argument("--replay", type=Path, help="run one case (a file holding its JSON, '-' for stdin) verbosely")
    args = parser.parse_args(argv)
    faulthandler.enable()           # a crash prints the Python stack before the signal ends us
    spec = json.loads(args.spec.read_text()) if args.spec else spec_from_sources(args.element)
    if spec["element"] != args.element:
        raise SystemExit(f"the spec is of {spec['element']}, not {args.element}")
    if args.replay:
        driver = Driver(args.fmus, spec, verbose=True)
        case = json.loads(sys.stdin.read() if str(args.replay) == "-" else args.replay.read_text())
        try:
            driver.run(case)
        except Violation as exc:
            print(f"VIOLATION {type(exc).__name__}: {exc}")
            return 1
        finally:
            for status, text in driver.messages:
                print(f"  log [{STATUS[status]}] {text}")
        print("every property held")
        return 0
    signal.signal(signal.SIGINT, STOP)
    driver = Driver(args.fmus, spec)
    try:
        return campaign(driver, args.examples, args.seed, args.keep_going, args.shrink_seconds)
    except KeyboardInterrupt:       # Ctrl-C, or `timeout -s INT`: a summary of what ran, at once
        print("SUMMARY", json.dumps({"element": spec["element"], "seed": args.seed, "examples": args.examples,
                                     **driver.stats, "interrupted": True}), flush=True)
        return 130


if __name__ == "__main__":
    sys.exit(main())
