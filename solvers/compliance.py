"""Laws of the compliance elements (no inertia: a torque from the states of two bodies).

Twist through an ideal gear of ratio ``ratio`` at body 1:
    phi_rel = phi_1 / ratio - phi_2 + phi_rel_start,   w_rel = w_1 / ratio - w_2
Linear spring-damper (Shaft):
    tau = k (phi_rel + w_rel T_comm / 2) + d w_rel
the spring part being the mean of k (phi_rel + w_rel s) over the coming communication step
s in [0, T_comm], along the twist advanced with the held relative speed (T_comm = 0: the
spring torque at the communication point).  With that mean the spring's work over a step,
k (phi_rel + w_rel T/2) w_rel T, equals the change of its energy k phi_rel^2 / 2 exactly,
so an explicit co-simulation neither feeds energy into the coupled bodies nor takes it.
"""
from __future__ import annotations


def twist(phi_1: float, w_1: float, phi_2: float, w_2: float, ratio: float, phi_rel_start: float):
    """(phi_rel, w_rel) of body 1 through the gear against body 2."""
    return phi_1 / ratio - phi_2 + phi_rel_start, w_1 / ratio - w_2


def spring_damper_torque(k: float, d: float, phi_rel: float, w_rel: float, t_comm: float) -> float:
    """k (phi_rel + w_rel t_comm / 2) + d w_rel: the spring torque's mean over the coming
    step of t_comm along the held relative speed, plus the damper's."""
    return k * (phi_rel + 0.5 * w_rel * t_comm) + d * w_rel


def spring_energy(k: float, phi_rel: float) -> float:
    """k phi_rel^2 / 2."""
    return 0.5 * k * phi_rel * phi_rel


try:        # compiled, their kernel (tools/generate_kernels.py) replaces the reference functions above
    from .compliance_kernel import spring_damper_torque, spring_energy, twist
except ImportError:
    pass
