# The C declarations of fmus/element_kernel.py (Cython reads them when it compiles that module
# and every module that cimports it: systems/system_kernel.py drives the same kernels over its
# system's array).
from drivetrain_fmu.solvers.friction_kernel cimport ChainValues, FrictionKernel

# what a kernel's step and feedthrough return: done, or left to the model (nothing changed)
cdef enum:
    TAKEN = 0
    BY_REFERENCE = 1

cdef class Element:
    cdef object model
    cdef dict attributes                # vars(model)
    cdef str label
    cdef dict slots                     # name -> slot of its variables in the array
    # (name, slot) of its inputs and of its outputs functions of its state (a kernel: all
    # declared; a model: those connections read and write)
    cdef list inputs
    cdef list state_outputs
    # (name, slot) of its inputs the connections set, and of the others (the FMU's inputs)
    cdef list connected_inputs
    cdef list other_inputs
    cdef list through_outputs           # (name, slot, Boolean) of its feedthrough outputs
    cdef bint stateful
    cdef int saved_size                 # the bytes save_into writes
    cdef bint through_valid             # its feedthrough outputs in the array are those of now

    cdef int read_model(self, double* x) except -1
    cdef int read_other_inputs(self, double* x) except -1
    cdef int write_model(self, double* x) except -1
    cdef bint model_fresh(self) except -1
    cdef int refresh(self, double* x) except -1
    cdef int save_into(self, char* out) except -1
    cdef int restore_from(self, char* saved) except -1
    cdef int read_state(self, object state) except -1
    cdef object new_state(self)
    cdef int step(self, double* x, double t, double h) except -1
    cdef int feedthrough(self, double* x) except -1

cdef class InertiaKernel(Element):
    cdef double J
    cdef double d_ground
    cdef double phi
    cdef double w
    cdef int tau_1
    cdef int tau_2
    cdef int out_phi
    cdef int out_w
    cdef int out_a

cdef class EngineKernel(Element):
    cdef double J
    cdef double T0
    cdef double h2
    cdef double h4
    cdef double phi
    cdef double w
    cdef double time                    # of the communication point
    cdef int tau_load
    cdef int tau_load_2
    cdef int throttle
    cdef int out_phi
    cdef int out_w
    cdef int out_tau

cdef class ShaftKernel(Element):
    cdef double k
    cdef double d
    cdef double t_comm
    cdef double ratio
    cdef double phi_rel_start
    cdef int flanges[4]                 # phi_1, w_1, phi_2, w_2
    cdef int outs[4]                    # tau_1, tau_2, phi_rel, e_spring

cdef class ClockedKernel(Element):
    cdef double time                    # of the communication point
    cdef int out_y
    cdef double value_at(self, double time) except? -1

cdef class TableKernel(ClockedKernel):
    cdef double times[6]                # fmus.table.MAX_POINTS
    cdef double values[6]
    cdef int n
    cdef bint hold

cdef class SineTorqueKernel(ClockedKernel):
    cdef double amplitude
    cdef double f
    cdef double phase
    cdef double offset
    cdef double t_start
    cdef double t_stop

cdef class SpeedTorqueKernel(Element):
    cdef double tau_nominal
    cdef double w_nominal
    cdef bint opposes_motion
    cdef double two                     # 2.0, the exponent of pow (a field: gcc folds a constant)
    cdef int w
    cdef int out_tau

cdef class ChainKernel(Element):
    cdef FrictionKernel friction
    cdef ChainValues values             # the friction system's state (model.state[0])
    cdef tuple thermal                  # the rest of the model's ThermalChainState
    cdef int n_inputs
    cdef int input_slots[24]            # every input, in the model's order
    cdef double prepared_at[24]         # the inputs the prepared values were made at
    cdef bint prepared
    cdef int first[8]                   # each member's two torques' slots
    cdef int second[8]
    cdef int n_clamps
    cdef int clamp_slots[5]
    cdef double clamps_at[5]            # the clamp forces the capacities were made at
    cdef bint capacities_made
    cdef list bounded                   # (slot, lo, hi): Model._bounded_inputs
    cdef int torque_slots[5]            # each interface's friction torque, locked flag
    cdef int locked_slots[5]
    cdef double signs[5]
    cdef int loss_slot
    cdef int n_motion                   # the state outputs its step sets (chain_outputs)
    cdef int motion_slots[22]
    cdef bint slip_outputs
    cdef double torque[8]               # the prepared values (FrictionChainElement.prepare)
    cdef double t_s[5]
    cdef double t_c[5]
    cdef double a_mean
    cdef double g[5]
    cdef int resolved_modes[5]          # the resolution at this state and these inputs
    cdef double resolved_tau[5]
    cdef bint resolved

    cdef int prepare(self, double* x) except -1

# what the FMU's binary makes its hot calls on (fmus/fmi_kernel.py): 1 made, 0 left to the model
cdef class Run:
    cdef double* x

    cdef int take(self, object owner, double t, double h) except -1
    cdef int ready(self, object owner, object preparation) except -1
    cdef int write(self, object owner, object preparation, int* slots, Py_ssize_t n, double* values) except -1

cdef class ElementRun(Run):
    cdef Element kernel
    cdef readonly dict slots            # name -> slot of the element's inputs and outputs
    cdef frozenset through              # the names of its feedthrough outputs
    cdef int n_slots
    cdef char* before                   # the array, the kernel's state and flag before the last step
    cdef public bint stale              # the model changed: the kernel reads it all again
    cdef public bint inputs_set         # its inputs were set into the model
    cdef bint behind                    # the kernel moved since the model was written
    cdef readonly bint stepped          # the last step taken was the kernel's

    cdef int _begin(self) except -1
    cdef int advance(self, double t, double h) except -1

# ``size`` bytes from malloc (at least one); MemoryError naming ``what`` when there are none
cdef void* allocated(Py_ssize_t size, str what) except NULL
