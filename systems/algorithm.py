"""The co-simulation algorithm: one fixed-step exchange over ports, written once.

A **port** is one simulator the algorithm drives (libcosim's ``simulator`` under its
``algorithm``).  Two ports exist: ``systems.master.FmuPort`` (an fmpy instance of a separate
FMU: ``drivetrain-fmu run``) and ``systems.composite_slave.ModelPort`` (an element model
in-process: the system FMU).  A port offers:

* ``variable(name)``: a :data:`Variable` (causality, type, unit, the inputs it depends on
  without delay), or None when there is no such variable;
* ``reader(names)``: ``(values, keys, refresh)``: after ``refresh()`` (None: nothing to
  do, the values are always current), ``values[keys[i]]`` is the output ``names[i]``;
* ``writer(names)``: ``(values, keys, flush)``: write ``values[keys[i]]`` for the input
  ``names[i]``, then ``flush()`` (None: what is written is set);
* ``step(t, h)``: step from t to t + h with the inputs held, or raise (a refused step);
* ``skips(h)``: True when a step of h has nothing to advance (a stateless model that takes
  steps of h), so the algorithm does not take it;
* ``save()`` / ``restore(saved)`` / ``release(saved)``: the port's state (with its inputs),
  for the iterations' rollback.

The algorithm, at a communication point (:meth:`Algorithm.exchange`): the connections whose
source output has no direct feedthrough are moved first (stage 1: every reader of the stage
brought up to date, every value moved, every writer flushed), then those whose source has
(stage 2), so that a compliance element sees the body states of the same point.  A port
whose stage-1 inputs no stage-2 reader reads has them set with its stage-2 inputs (one
flush instead of two).  Then every port steps from t to t + h (:meth:`Algorithm.step`).
Time is the caller's (t = t0 + n h, counted).

* **Iterations** N: after the step the connections are evaluated at t + h, every port is
  set back to its saved state and the step is repeated with each connected input at the
  mean of its values at t and at t + h (trapezoidal coupling), N times.
* **Multi-rate** (``multiples``: {port: m}): that port steps once per m base steps, at the
  end of the last of them, from the start of its step with m h, after the others, each
  connected Real input at the mean of the m values the connections gave it (summed in
  order, divided by m).  Within its step it is neither read (its outputs are held) nor set
  (its inputs stay those of its step's start); what the connections give it goes to its
  inbox.  The **angle lead**: a connection from such a port into an input phi_X (rad) of a
  target that reads w_X (rad/s) from the same port carries phi + w (t - t_s), the angle
  advanced with the held speed over the time since that port's step began.

The phases: base step n runs the program of phase n mod frame (frame: the least common
multiple of the multiples), laid out once.
"""
from __future__ import annotations

import math
from collections import namedtuple

#: what a connection and the algorithm need to know of a port's variable
Variable = namedtuple("Variable", "causality type unit depends")


class Refused(Exception):
    """A port refused a step: ``args`` (the port's label, why)."""


class UseReference(Exception):
    """Raised by this algorithm's compiled kernel (systems/system_kernel.py) where only the
    algorithm words the outcome right (a value that is not finite): run the algorithm instead."""


def stages(ports: dict, connections) -> list[list[tuple]]:
    """The two exchange stages of ``connections`` ((source, output, target, input) each):
    those whose source output has no direct feedthrough, then the others."""
    def feedthrough(c) -> bool:
        return bool(ports[c[0]].variable(c[1]).depends)
    return [[c for c in connections if not feedthrough(c)], [c for c in connections if feedthrough(c)]]


def angle_links(ports: dict, connections, slow) -> list[tuple]:
    """[(angle connection, its speed connection)]: a port of ``slow`` (with its own rate)
    drives a target's phi_X (rad) and the same target's w_X (rad/s)."""
    drivers = {(c[2], c[3]): c for c in connections}
    found = []
    for c in connections:
        if c[0] not in slow or not c[3].startswith("phi_"):
            continue
        speed = "w_" + c[3][len("phi_"):]
        angle, rate, driver = ports[c[2]].variable(c[3]), ports[c[2]].variable(speed), drivers.get((c[2], speed))
        if (angle.unit == "rad" and rate is not None and rate.causality == "input" and rate.unit == "rad/s"
                and driver is not None and driver[0] == c[0]):
            found.append((c, driver))
    return found


class _OwnRate:
    """A port with its own step, ``multiple`` base steps: its inbox (input name -> the value
    the connections gave it last), the sums of its Real inputs over its step, and the writer
    that sets their means."""

    def __init__(self, port, multiple: int, names: list, reals: list):
        self.port, self.multiple, self.reals = port, multiple, reals
        self.inbox = {name: 0.0 for name in names}
        self.sums = []
        self.mean = port.writer(reals) if reals else None

    def collect(self, first: bool):
        """Add the values the connections give it now (``first``: its step begins)."""
        inbox = self.inbox
        if first:
            self.sums = [inbox[name] for name in self.reals]
        else:
            self.sums = [a + inbox[name] for a, name in zip(self.sums, self.reals)]

    def set_means(self):
        if self.mean is not None:
            values, keys, flush = self.mean
            m = self.multiple
            for key, a in zip(keys, self.sums):
                values[key] = a / m
            if flush is not None:
                flush()


class Algorithm:
    """The exchange and stepping of ``ports`` ({name: port}) joined by ``connections``
    ((source, output, target, input) each, Real), base step ``step`` (module docstring).

    ``sources`` maps (port, output) to the (values, key) its stage reader fills; ``at`` is
    the (t, h) of the step being taken (for a caller's message on a refused one)."""

    # as slots: every step reads them, and a slot is found by the class's (cached) look-up alone
    __slots__ = ("ports", "iterations", "at", "stages", "frame", "own", "sources", "targets", "phases",
                 "_flushes", "_steps", "_all_steps", "_saved_ports")

    def __init__(self, ports: dict, connections, step: float, multiples: dict | None = None, iterations: int = 0):
        multiples = multiples or {}
        self.ports, self.iterations, self.at = ports, iterations, (0.0, step)
        connections = [tuple(c) for c in connections]
        self.stages = stages(ports, connections)
        self.frame = math.lcm(1, *multiples.values())
        self.own = {name: _OwnRate(ports[name], m, [c[3] for c in connections if c[2] == name],
                                   [c[3] for c in connections if c[2] == name
                                    and ports[name].variable(c[3]).type == "Real"])
                    for name, m in multiples.items()}
        # readers: per stage and source port, the outputs first read in that stage
        read, self.sources = {}, {}
        for s, links in enumerate(self.stages):
            for c in links:
                if (c[0], c[1]) not in self.sources:
                    self.sources[c[0], c[1]] = None
                    read.setdefault((s, c[0]), []).append(c[1])
        refreshes = [[], []]
        for (s, name), outputs in read.items():
            values, keys, refresh = ports[name].reader(outputs)
            self.sources.update(((name, output), (values, key)) for output, key in zip(outputs, keys))
            refreshes[s].append((name, refresh))
        # writers: per stage and target port; stage-1 inputs of a port no stage-2 reader
        # reads are set with its stage-2 inputs
        written = [{}, {}]
        for s, links in enumerate(self.stages):
            for c in links:
                if c[2] not in self.own:
                    written[s].setdefault(c[2], []).append(c[3])
        stage2_read = {name for s, name in read if s == 1}
        for name in list(written[0]):
            if name in written[1] and name not in stage2_read:
                written[1][name] = written[0].pop(name) + written[1][name]
        targets, flushes = {}, [[], []]
        for s in (0, 1):
            for name, inputs in written[s].items():
                values, keys, flush = ports[name].writer(inputs)
                targets.update(((name, i), (values, key)) for i, key in zip(inputs, keys))
                flushes[s].append((name, flush))
        for name, own in self.own.items():
            targets.update(((name, i), (own.inbox, i)) for i in own.inbox)
        # a port with its own rate: its inputs of each stage set when its step starts
        starts = [[], []]
        for name in self.own:
            for s, links in enumerate(self.stages):
                inputs = [c[3] for c in links if c[2] == name]
                if inputs:
                    values, keys, flush = ports[name].writer(inputs)
                    starts[s].append((name, self.own[name].inbox, values, list(zip(inputs, keys)), flush))
        self.targets = [[targets[c[2], c[3]] for c in links] for links in self.stages]
        speeds = {angle: speed for angle, speed in angle_links(ports, connections, set(self.own))}
        self.phases = []
        for k in range(self.frame):
            lags = {name: (k % own.multiple) * step for name, own in self.own.items()}
            held = {name for name, lag in lags.items() if lag}
            program = []
            for s, links in enumerate(self.stages):
                # plain moves, then the angles read ahead (a held source's phi advanced by its w)
                moves = [(*self.sources[c[0], c[1]], *targets[c[2], c[3]]) for c in links
                         if not (lags.get(c[0]) and c in speeds)]
                leads = [(*self.sources[c[0], c[1]], *targets[c[2], c[3]], *self.sources[speeds[c][:2]], lags[c[0]])
                         for c in links if lags.get(c[0]) and c in speeds]
                program.append(([r for name, r in refreshes[s] if r is not None and name not in held], moves, leads,
                                [start[1:] for start in starts[s] if start[0] not in held],
                                [f for name, f in flushes[s] if f is not None]))
            self.phases.append((program, held))
        self._flushes = [f for stage in flushes for _, f in stage if f is not None]
        # the steps taken at every base step (ports with their own rate apart), bound once
        self._steps = [port.step for name, port in ports.items() if name not in self.own and not port.skips(step)]
        self._all_steps = [port.step for name, port in ports.items() if not port.skips(step)]
        self._saved_ports = list(ports.values())

    def held(self, n: int) -> set:
        """The ports within a step of their own rate at base step ``n`` (not read, not set)."""
        return self.phases[n % self.frame][1]

    def exchange(self, n: int = 0, first_stage: int = 0):
        """Move the connections at base step ``n`` (its phase), from stage ``first_stage``
        on (1: the values of stage 2 only, when only they can have changed)."""
        program = self.phases[n % self.frame][0]
        for refreshes, moves, leads, starts, flushes in program[1:] if first_stage else program:
            for refresh in refreshes:
                refresh()
            for source, key, target, target_key in moves:
                target[target_key] = source[key]
            if leads:
                for source, key, target, target_key, speeds, speed_key, lag in leads:
                    target[target_key] = source[key] + speeds[speed_key] * lag
            for inbox, values, pairs, flush in starts:
                for name, key in pairs:
                    values[key] = inbox[name]
                if flush is not None:
                    flush()
            for flush in flushes:
                flush()

    def connected_values(self) -> list:
        """The values the connections have set, per stage (a port with its own rate: its inbox)."""
        return [[values[key] for values, key in stage] for stage in self.targets]

    def step_all(self, t: float, h: float):
        """Step every port that has something to advance from t over h (an own rate ignored)."""
        self.at = (t, h)
        for step in self._all_steps:
            step(t, h)

    def step(self, n: int, t: float, h: float, origin: float = 0.0, extra: float = 0.0):
        """Base step ``n`` from ``t`` (after :meth:`exchange` at ``n``): with iterations,
        repeated; multi-rate, the ports with their own rate that end their step now step
        after the others, from origin + (n + 1 - m) h + extra (the caller's time of base
        step n + 1 - m)."""
        if self.iterations:
            self._iterate(t, h)
            return
        self.at = (t, h)
        if not self.own:
            for step in self._steps:
                step(t, h)
            return
        for own in self.own.values():
            own.collect(n % own.multiple == 0)
        for step in self._steps:
            step(t, h)
        for own in self.own.values():
            m = own.multiple
            if (n + 1) % m == 0:
                own.set_means()
                self.at = (origin + (n + 1 - m) * h + extra, m * h)
                own.port.step(*self.at)

    def _iterate(self, t: float, h: float):
        """One step repeated ``iterations`` times from the saved states, every connection at
        the mean of its values at t and at t + h."""
        start = self.connected_values()
        ports = self._saved_ports
        saved = [port.save() for port in ports]
        try:
            self.step_all(t, h)
            for _ in range(self.iterations):
                self.exchange(0)
                end = self.connected_values()
                for port, state in zip(ports, saved):
                    port.restore(state)
                for stage, first, last in zip(self.targets, start, end):
                    for (values, key), a, b in zip(stage, first, last):
                        values[key] = 0.5 * (a + b)
                for flush in self._flushes:
                    flush()
                self.step_all(t, h)
        finally:
            for port, state in zip(ports, saved):
                port.release(state)
