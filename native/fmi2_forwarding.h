/* drivetrain-fmu: what the forwarder of every platform shares (native/<platform>/forwarder.c
 * includes it after defining EXPORT and including <stdio.h>, <stdlib.h>, <string.h>): the FMI 2.0
 * types, the instance that wraps pythonfmu's, the corrected logging, percent-decoding, the
 * UTF-8 check, and the FMI functions forwarded to pythonfmu unchanged.
 *
 * pythonfmu 0.7.0's logging is corrected: every message reaches the host with a category
 * declared in modelDescription.xml (pythonfmu logs its own errors with a NULL category), '%'
 * doubled (the host formats the message, pythonfmu passes text), errors and fatal errors
 * whatever loggingOn says, other messages filtered here by loggingOn and fmi2SetDebugLogging's
 * categories.
 */
#ifndef DRIVETRAIN_FMI2_FORWARDING_H
#define DRIVETRAIN_FMI2_FORWARDING_H


typedef void *fmi2Component;
typedef void *fmi2ComponentEnvironment;
typedef void *fmi2FMUstate;
typedef unsigned int fmi2ValueReference;
typedef double fmi2Real;
typedef int fmi2Integer;
typedef int fmi2Boolean;
typedef const char *fmi2String;
typedef char fmi2Byte;
typedef enum { fmi2OK, fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending } fmi2Status;
typedef enum { fmi2ModelExchange, fmi2CoSimulation } fmi2Type;
typedef enum { fmi2DoStepStatus, fmi2PendingStatus, fmi2LastSuccessfulTime, fmi2Terminated } fmi2StatusKind;
typedef struct {
    void (*logger)(fmi2ComponentEnvironment, fmi2String, fmi2Status, fmi2String, fmi2String, ...);
    void *(*allocateMemory)(size_t, size_t);
    void (*freeMemory)(void *);
    void (*stepFinished)(fmi2ComponentEnvironment, fmi2Status);
    fmi2ComponentEnvironment componentEnvironment;
} fmi2CallbackFunctions;

/* ------------------------------------------------------------------ the fast calls
 * fmus/fmi_kernel.py's table, the capsule drivetrain_fmu.fmus.fmi_kernel._API (the same layout
 * as its FastCalls): C functions that make fmi2DoStep, fmi2GetReal, fmi2GetBoolean and
 * fmi2SetReal of an element FMU on its compiled kernel, called with the GIL.  Each returns 0
 * when it made the whole call, -1 when it changed nothing: pythonfmu then makes the call. */
struct fast_calls {
    int version;
    void *(*bind)(void);
    void (*release)(void *entry);
    int (*do_step)(void *entry, double t, double h);
    int (*get_real)(void *entry, const unsigned int *vr, size_t n, double *values);
    int (*get_boolean)(void *entry, const unsigned int *vr, size_t n, int *values);
    int (*set_real)(void *entry, const unsigned int *vr, size_t n, const double *values);
};
#define FAST_CALLS_VERSION 1
#define FAST_CALLS_MODULE "drivetrain_fmu.fmus.fmi_kernel"
#define FAST_CALLS_CAPSULE FAST_CALLS_MODULE "._API"

/* the CPython functions the fast calls need (all of the stable ABI), found in the process by
 * the platform's forwarder (find_python_api); none: pythonfmu makes every call */
struct python_api {
    int (*gil_ensure)(void);                        /* PyGILState_Ensure (PyGILState_STATE: an enum) */
    void (*gil_release)(int);                       /* PyGILState_Release */
    void *(*import_module)(const char *);           /* PyImport_ImportModule */
    void (*decref)(void *);                         /* Py_DecRef */
    void *(*capsule_import)(const char *, int);     /* PyCapsule_Import */
    void (*err_clear)(void);                        /* PyErr_Clear */
};
static int find_python_api(struct python_api *api);

struct instance {
    void *inner;                       /* pythonfmu's instance */
    const struct fast_calls *fast;     /* NULL: pythonfmu makes every call */
    void *fast_entry;                  /* the fast calls' handle of this instance */
    struct python_api python;
    fmi2CallbackFunctions host;        /* the host's callbacks */
    fmi2CallbackFunctions relay;       /* what pythonfmu gets: our logger, this as environment */
    int logging_on;
    size_t n_categories;
    char **categories;
    char fatal[512];                   /* pythonfmu's last fatal message (read if it cannot instantiate) */
};

static const char *declared_category(fmi2Status status)
{
    switch (status) {       /* pythonfmu's LogCategories (Fmi2Slave.log_categories) */
    case fmi2Warning: return "logStatusWarning";
    case fmi2Discard: return "logStatusDiscard";
    case fmi2Error: return "logStatusError";
    case fmi2Fatal: return "logStatusFatal";
    default: return "logAll";
    }
}

static int wanted(const struct instance *self, fmi2Status status, const char *category)
{
    if (status == fmi2Error || status == fmi2Fatal) {
        return 1;           /* a failing call always says why */
    }
    if (!self->logging_on) {
        return 0;
    }
    for (size_t i = 0; i < self->n_categories; ++i) {
        if (strcmp(self->categories[i], category) == 0 || strcmp(self->categories[i], "logAll") == 0) {
            return 1;
        }
    }
    return self->n_categories == 0;
}

/* the host's logger with ``text`` as it is: '%' doubled (the host formats the message) */
static void host_log(const fmi2CallbackFunctions *host, fmi2String name, fmi2Status status, const char *category,
                     const char *text)
{
    size_t percent = 0, length = 0;
    if (host == NULL || host->logger == NULL) {
        return;
    }
    if (text == NULL) {
        text = "";
    }
    for (const char *c = text; *c; ++c, ++length) {
        percent += *c == '%';
    }
    if (percent == 0) {
        host->logger(host->componentEnvironment, name, status, category, text);
        return;
    }
    char *escaped = malloc(length + percent + 1), *out = escaped;
    if (escaped == NULL) {
        host->logger(host->componentEnvironment, name, status, category, "(a message with %% signs: out of memory)");
        return;
    }
    for (const char *c = text; *c; ++c) {
        if ((*out++ = *c) == '%') {
            *out++ = '%';
        }
    }
    *out = '\0';
    host->logger(host->componentEnvironment, name, status, category, escaped);
    free(escaped);
}

/* pythonfmu calls this with the message as text (no format arguments) */
static void relay_log(fmi2ComponentEnvironment environment, fmi2String name, fmi2Status status, fmi2String category,
                      fmi2String message, ...)
{
    struct instance *self = environment;
    if (category == NULL || *category == '\0') {
        category = declared_category(status);
    }
    if (status == fmi2Fatal) {
        snprintf(self->fatal, sizeof self->fatal, "%s", message ? message : "");
    }
    if (wanted(self, status, category)) {
        host_log(&self->host, name, status, category, message);
    }
}

static void drop_categories(struct instance *self)
{
    for (size_t i = 0; i < self->n_categories; ++i) {
        free(self->categories[i]);
    }
    free(self->categories);
    self->categories = NULL;
    self->n_categories = 0;
}

/* percent-decoding of the resources URI (RFC 3986 2.1), used by each platform's resources_folder */
static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* ``text`` percent-decoded into ``out`` (room for strlen(text) + 1): 0, or -1 with the bad
 * escape named in ``error`` */
static int percent_decode(const char *text, char *out, char *error, size_t size)
{
    for (; *text != '\0'; ++text) {
        if (*text != '%') {
            *out++ = *text;
            continue;
        }
        int high = hex_digit(text[1]), low = high < 0 ? -1 : hex_digit(text[2]);
        if (low < 0) {
            snprintf(error, size, "\"%.3s\" is not a percent-encoded byte (%%XX, X a hexadecimal digit)", text);
            return -1;
        }
        if (high == 0 && low == 0) {
            snprintf(error, size, "%%00 encodes a NUL byte, which no path can hold");
            return -1;
        }
        *out++ = (char)(high * 16 + low);
        text += 2;
    }
    *out = '\0';
    return 0;
}

/* strict UTF-8 (RFC 3629): pythonfmu makes the sys.path entry with PyUnicode_FromString */
static int is_utf8(const unsigned char *c)
{
    while (*c != '\0') {
        int more = *c < 0x80 ? 0 : (*c & 0xE0) == 0xC0 ? 1 : (*c & 0xF0) == 0xE0 ? 2 : (*c & 0xF8) == 0xF0 ? 3 : -1;
        unsigned long code = more == 0 ? *c : more == 1 ? *c & 0x1F : more == 2 ? *c & 0x0F : *c & 0x07;
        if (more < 0) {
            return 0;
        }
        ++c;
        for (int i = 0; i < more; ++i, ++c) {
            if ((*c & 0xC0) != 0x80) {
                return 0;
            }
            code = code << 6 | (*c & 0x3F);
        }
        if ((more == 1 && code < 0x80) || (more == 2 && (code < 0x800 || (code >= 0xD800 && code <= 0xDFFF)))
            || (more == 3 && (code < 0x10000 || code > 0x10FFFF))) {
            return 0;
        }
    }
    return 1;
}

/* pythonfmu's functions this binary calls: the starter looks them up in this order */
enum {
    AT_fmi2Instantiate,
    AT_fmi2FreeInstance,
    AT_fmi2SetupExperiment,
    AT_fmi2EnterInitializationMode,
    AT_fmi2ExitInitializationMode,
    AT_fmi2Terminate,
    AT_fmi2Reset,
    AT_fmi2GetReal,
    AT_fmi2GetInteger,
    AT_fmi2GetBoolean,
    AT_fmi2GetString,
    AT_fmi2SetReal,
    AT_fmi2SetInteger,
    AT_fmi2SetBoolean,
    AT_fmi2SetString,
    AT_fmi2GetFMUstate,
    AT_fmi2SetFMUstate,
    AT_fmi2FreeFMUstate,
    AT_fmi2SerializedFMUstateSize,
    AT_fmi2SerializeFMUstate,
    AT_fmi2DeSerializeFMUstate,
    AT_fmi2GetDirectionalDerivative,
    AT_fmi2SetRealInputDerivatives,
    AT_fmi2GetRealOutputDerivatives,
    AT_fmi2DoStep,
    AT_fmi2CancelStep,
    AT_fmi2GetStatus,
    AT_fmi2GetRealStatus,
    AT_fmi2GetIntegerStatus,
    AT_fmi2GetBooleanStatus,
    AT_fmi2GetStringStatus,
    N_PYTHONFMU
};
static const char *const pythonfmu_names[N_PYTHONFMU] = {
    "fmi2Instantiate",
    "fmi2FreeInstance",
    "fmi2SetupExperiment",
    "fmi2EnterInitializationMode",
    "fmi2ExitInitializationMode",
    "fmi2Terminate",
    "fmi2Reset",
    "fmi2GetReal",
    "fmi2GetInteger",
    "fmi2GetBoolean",
    "fmi2GetString",
    "fmi2SetReal",
    "fmi2SetInteger",
    "fmi2SetBoolean",
    "fmi2SetString",
    "fmi2GetFMUstate",
    "fmi2SetFMUstate",
    "fmi2FreeFMUstate",
    "fmi2SerializedFMUstateSize",
    "fmi2SerializeFMUstate",
    "fmi2DeSerializeFMUstate",
    "fmi2GetDirectionalDerivative",
    "fmi2SetRealInputDerivatives",
    "fmi2GetRealOutputDerivatives",
    "fmi2DoStep",
    "fmi2CancelStep",
    "fmi2GetStatus",
    "fmi2GetRealStatus",
    "fmi2GetIntegerStatus",
    "fmi2GetBooleanStatus",
    "fmi2GetStringStatus"
};
static void *const *pythonfmu;      /* pythonfmu's functions, in that order */

static void bind_fast_calls(struct instance *self);

/* pythonfmu's fmi2Instantiate behind our logger relay, for the slave module `module` in the
 * decoded resources folder `resources` (malloc'ed; freed here).  NULL, with one fatal message
 * naming the module, when pythonfmu cannot load or instantiate it.  `separator`: the
 * platform's path separator, for that message. */
static struct instance *instantiate_slave(char *resources, const char *module, char separator,
                                          fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                                          const fmi2CallbackFunctions *functions, fmi2Boolean visible,
                                          fmi2Boolean loggingOn)
{
    char error[8192];
    struct instance *self = calloc(1, sizeof *self);
    if (self == NULL) {
        free(resources);
        host_log(functions, instanceName, fmi2Fatal, "logStatusFatal", "drivetrain-fmu: out of memory");
        return NULL;
    }
    self->host = *functions;
    self->relay = *functions;
    self->relay.logger = relay_log;
    self->relay.componentEnvironment = self;
    self->logging_on = loggingOn != 0;
    /* pythonfmu logs everything it is given (loggingOn true); relay_log filters */
    self->inner = ((fmi2Component (*)(fmi2String, fmi2Type, fmi2String, fmi2String, const fmi2CallbackFunctions *,
                                      fmi2Boolean, fmi2Boolean))pythonfmu[AT_fmi2Instantiate])(
        instanceName, fmuType, fmuGUID, resources, &self->relay, visible, 1);
    if (self->inner == NULL) {
        /* pythonfmu 0.7.0 looks the class up by an empty name when the module defines none */
        if (strstr(self->fatal, "has no attribute ''") != NULL) {
            snprintf(error, sizeof error, "drivetrain-fmu: the slave module %s%c%s.py defines no class derived "
                     "from a class named Fmi2Slave (drivetrain_fmu.fmus.fmi2's)", resources, separator, module);
        } else {
            snprintf(error, sizeof error, "drivetrain-fmu: pythonfmu could not load or instantiate the slave "
                     "module %s%c%s.py (the message before says why)", resources, separator, module);
        }
        host_log(functions, instanceName, fmi2Fatal, "logStatusFatal", error);
        free(resources);
        free(self);
        return NULL;
    }
    free(resources);
    bind_fast_calls(self);
    return self;
}

/* The fast calls of this instance, where the process has them: right after pythonfmu made
 * the slave, on the same thread (fmi_kernel's bind takes the instance made last there). */
static void bind_fast_calls(struct instance *self)
{
    struct python_api python;
    if (!find_python_api(&python)) {
        return;
    }
    int gil = python.gil_ensure();
    /* PyCapsule_Import imports the package and reads attributes: the module imported first */
    void *module = python.import_module(FAST_CALLS_MODULE);
    const struct fast_calls *fast = NULL;
    if (module != NULL) {
        python.decref(module);
        fast = python.capsule_import(FAST_CALLS_CAPSULE, 0);
    }
    if (fast == NULL) {
        python.err_clear();    /* uncompiled element code: pythonfmu makes every call */
    } else if (fast->version == FAST_CALLS_VERSION) {
        void *entry = fast->bind();
        if (entry != NULL) {
            self->python = python;
            self->fast_entry = entry;
            self->fast = fast;
        }
    }
    python.gil_release(gil);
}

/* Before pythonfmu frees the instance: the fast calls' handle released. */
static void release_fast_calls(struct instance *self)
{
    if (self->fast != NULL) {
        int gil = self->python.gil_ensure();
        self->fast->release(self->fast_entry);
        self->python.gil_release(gil);
        self->fast = NULL;
    }
}

EXPORT const char *fmi2GetTypesPlatform(void) { return "default"; }
EXPORT const char *fmi2GetVersion(void) { return "2.0"; }

EXPORT fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean loggingOn, size_t nCategories,
                                      const fmi2String categories[])
{
    struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    drop_categories(self);
    self->logging_on = loggingOn != 0;
    if (loggingOn && nCategories > 0 && categories != NULL) {
        self->categories = calloc(nCategories, sizeof *self->categories);
        if (self->categories == NULL) {
            return fmi2Error;
        }
        for (size_t i = 0; i < nCategories; ++i) {
            if ((self->categories[self->n_categories] = strdup(categories[i] ? categories[i] : "")) == NULL) {
                return fmi2Error;
            }
            ++self->n_categories;
        }
    }
    return fmi2OK;
}

EXPORT fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean toleranceDefined, fmi2Real tolerance, fmi2Real startTime, fmi2Boolean stopTimeDefined, fmi2Real stopTime)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component, fmi2Boolean, fmi2Real, fmi2Real, fmi2Boolean, fmi2Real))pythonfmu[AT_fmi2SetupExperiment])(self->inner, toleranceDefined, tolerance, startTime, stopTimeDefined, stopTime);
}

EXPORT fmi2Status fmi2EnterInitializationMode(fmi2Component c)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component))pythonfmu[AT_fmi2EnterInitializationMode])(self->inner);
}

EXPORT fmi2Status fmi2ExitInitializationMode(fmi2Component c)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component))pythonfmu[AT_fmi2ExitInitializationMode])(self->inner);
}

EXPORT fmi2Status fmi2Terminate(fmi2Component c)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component))pythonfmu[AT_fmi2Terminate])(self->inner);
}

EXPORT fmi2Status fmi2Reset(fmi2Component c)
{
    struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    /* pythonfmu makes a new slave: the fast calls are bound to that one */
    release_fast_calls(self);
    fmi2Status status = ((fmi2Status (*)(fmi2Component))pythonfmu[AT_fmi2Reset])(self->inner);
    bind_fast_calls(self);
    return status;
}

EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference *vr, size_t nvr, fmi2Real *value)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    if (self->fast != NULL && (nvr == 0 || (vr != NULL && value != NULL))) {
        int gil = self->python.gil_ensure();
        int made = self->fast->get_real(self->fast_entry, vr, nvr, value) == 0;
        self->python.gil_release(gil);
        if (made) {
            return fmi2OK;
        }
    }
    return ((fmi2Status (*)(fmi2Component, const fmi2ValueReference*, size_t, fmi2Real*))pythonfmu[AT_fmi2GetReal])(self->inner, vr, nvr, value);
}

EXPORT fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference *vr, size_t nvr, fmi2Integer *value)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component, const fmi2ValueReference*, size_t, fmi2Integer*))pythonfmu[AT_fmi2GetInteger])(self->inner, vr, nvr, value);
}

EXPORT fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference *vr, size_t nvr, fmi2Boolean *value)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    if (self->fast != NULL && (nvr == 0 || (vr != NULL && value != NULL))) {
        int gil = self->python.gil_ensure();
        int made = self->fast->get_boolean(self->fast_entry, vr, nvr, value) == 0;
        self->python.gil_release(gil);
        if (made) {
            return fmi2OK;
        }
    }
    return ((fmi2Status (*)(fmi2Component, const fmi2ValueReference*, size_t, fmi2Boolean*))pythonfmu[AT_fmi2GetBoolean])(self->inner, vr, nvr, value);
}

EXPORT fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference *vr, size_t nvr, fmi2String *value)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component, const fmi2ValueReference*, size_t, fmi2String*))pythonfmu[AT_fmi2GetString])(self->inner, vr, nvr, value);
}

EXPORT fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference *vr, size_t nvr, const fmi2Real *value)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    if (self->fast != NULL && (nvr == 0 || (vr != NULL && value != NULL))) {
        int gil = self->python.gil_ensure();
        int made = self->fast->set_real(self->fast_entry, vr, nvr, value) == 0;
        self->python.gil_release(gil);
        if (made) {
            return fmi2OK;
        }
    }
    return ((fmi2Status (*)(fmi2Component, const fmi2ValueReference*, size_t, const fmi2Real*))pythonfmu[AT_fmi2SetReal])(self->inner, vr, nvr, value);
}

EXPORT fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference *vr, size_t nvr, const fmi2Integer *value)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component, const fmi2ValueReference*, size_t, const fmi2Integer*))pythonfmu[AT_fmi2SetInteger])(self->inner, vr, nvr, value);
}

EXPORT fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference *vr, size_t nvr, const fmi2Boolean *value)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component, const fmi2ValueReference*, size_t, const fmi2Boolean*))pythonfmu[AT_fmi2SetBoolean])(self->inner, vr, nvr, value);
}

EXPORT fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference *vr, size_t nvr, const fmi2String *value)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component, const fmi2ValueReference*, size_t, const fmi2String*))pythonfmu[AT_fmi2SetString])(self->inner, vr, nvr, value);
}

EXPORT fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *state)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component, fmi2FMUstate*))pythonfmu[AT_fmi2GetFMUstate])(self->inner, state);
}

EXPORT fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate state)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component, fmi2FMUstate))pythonfmu[AT_fmi2SetFMUstate])(self->inner, state);
}

EXPORT fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *state)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component, fmi2FMUstate*))pythonfmu[AT_fmi2FreeFMUstate])(self->inner, state);
}

EXPORT fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate state, size_t *size)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component, fmi2FMUstate, size_t*))pythonfmu[AT_fmi2SerializedFMUstateSize])(self->inner, state, size);
}

EXPORT fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate state, fmi2Byte *bytes, size_t size)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component, fmi2FMUstate, fmi2Byte*, size_t))pythonfmu[AT_fmi2SerializeFMUstate])(self->inner, state, bytes, size);
}

EXPORT fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte *bytes, size_t size, fmi2FMUstate *state)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component, const fmi2Byte*, size_t, fmi2FMUstate*))pythonfmu[AT_fmi2DeSerializeFMUstate])(self->inner, bytes, size, state);
}

EXPORT fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference *unknowns, size_t nUnknown, const fmi2ValueReference *knowns, size_t nKnown, const fmi2Real *dvKnown, fmi2Real *dvUnknown)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component, const fmi2ValueReference*, size_t, const fmi2ValueReference*, size_t, const fmi2Real*, fmi2Real*))pythonfmu[AT_fmi2GetDirectionalDerivative])(self->inner, unknowns, nUnknown, knowns, nKnown, dvKnown, dvUnknown);
}

EXPORT fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference *vr, size_t nvr, const fmi2Integer *order, const fmi2Real *value)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component, const fmi2ValueReference*, size_t, const fmi2Integer*, const fmi2Real*))pythonfmu[AT_fmi2SetRealInputDerivatives])(self->inner, vr, nvr, order, value);
}

EXPORT fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference *vr, size_t nvr, const fmi2Integer *order, fmi2Real *value)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component, const fmi2ValueReference*, size_t, const fmi2Integer*, fmi2Real*))pythonfmu[AT_fmi2GetRealOutputDerivatives])(self->inner, vr, nvr, order, value);
}

EXPORT fmi2Status fmi2DoStep(fmi2Component c, fmi2Real currentCommunicationPoint, fmi2Real communicationStepSize, fmi2Boolean noSetFMUStatePriorToCurrentPoint)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    if (self->fast != NULL) {
        int gil = self->python.gil_ensure();
        int made = self->fast->do_step(self->fast_entry, currentCommunicationPoint, communicationStepSize) == 0;
        self->python.gil_release(gil);
        if (made) {
            return fmi2OK;
        }
    }
    return ((fmi2Status (*)(fmi2Component, fmi2Real, fmi2Real, fmi2Boolean))pythonfmu[AT_fmi2DoStep])(self->inner, currentCommunicationPoint, communicationStepSize, noSetFMUStatePriorToCurrentPoint);
}

EXPORT fmi2Status fmi2CancelStep(fmi2Component c)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component))pythonfmu[AT_fmi2CancelStep])(self->inner);
}

EXPORT fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind kind, fmi2Status *value)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component, const fmi2StatusKind, fmi2Status*))pythonfmu[AT_fmi2GetStatus])(self->inner, kind, value);
}

EXPORT fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind kind, fmi2Real *value)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component, const fmi2StatusKind, fmi2Real*))pythonfmu[AT_fmi2GetRealStatus])(self->inner, kind, value);
}

EXPORT fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind kind, fmi2Integer *value)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component, const fmi2StatusKind, fmi2Integer*))pythonfmu[AT_fmi2GetIntegerStatus])(self->inner, kind, value);
}

EXPORT fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind kind, fmi2Boolean *value)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component, const fmi2StatusKind, fmi2Boolean*))pythonfmu[AT_fmi2GetBooleanStatus])(self->inner, kind, value);
}

EXPORT fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind kind, fmi2String *value)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component, const fmi2StatusKind, fmi2String*))pythonfmu[AT_fmi2GetStringStatus])(self->inner, kind, value);
}

#endif
