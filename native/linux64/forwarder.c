/* drivetrain-fmu: the FMU's binary (binaries/linux64/<Model>.so), a forwarder to pythonfmu's
 * library; built and packaged by host_support.py.
 *
 * pythonfmu's library (PYTHONFMU_LIBRARY, in this folder) is loaded once per process by the
 * runtime starter and never unloaded; this binary, one per FMU copy a host loads, exports
 * the FMI 2.0 co-simulation functions and forwards them.  It decodes the resources URI
 * for pythonfmu (below, resources_folder).  It corrects pythonfmu 0.7.0's logging: every message reaches the host with a category declared in modelDescription.xml
 * (pythonfmu logs its own errors with a NULL category), '%' doubled (the host formats the
 * message, pythonfmu passes text), errors and fatal errors whatever loggingOn says, other
 * messages filtered here by loggingOn and fmi2SetDebugLogging's categories.
 */
#define _GNU_SOURCE         /* dladdr */
#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>        /* strncasecmp */
#include <sys/stat.h>

#define EXPORT __attribute__((visibility("default")))

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

/* the runtime starter (libdrivetrain_python.so, linked --no-as-needed: every reference to
 * it is weak).  Weak: a process may already hold the starter of another build under the
 * same name (an FMU of another drivetrain-fmu version loaded first); this binary then
 * still loads, and fmi2Instantiate refuses by name. */
#define WEAK __attribute__((weak))
extern const char drivetrain_fmu_runtime_id[] WEAK;
extern void *const *drivetrain_fmu_pythonfmu(const char *folder, const char *const *names, int count,
                                             char *error, size_t size) WEAK;
extern unsigned long drivetrain_fmu_next_generation(void) WEAK;
extern void drivetrain_fmu_hold(const char *path, void *handle, unsigned long generation) WEAK;
extern void drivetrain_fmu_release_held(unsigned long caller) WEAK;

static int same_runtime(void)
{
    return drivetrain_fmu_runtime_id != NULL && strcmp(drivetrain_fmu_runtime_id, RUNTIME_ID) == 0;
}

/* which load of this file this is (the starter reads it with dlsym) */
EXPORT unsigned long drivetrain_fmu_copy_generation;
static int live_instances;
static int released_others;

struct instance {
    void *inner;                       /* pythonfmu's instance */
    fmi2CallbackFunctions host;        /* the host's callbacks */
    fmi2CallbackFunctions relay;       /* what pythonfmu gets: our logger, this as environment */
    int logging_on;
    size_t n_categories;
    char **categories;
    char fatal[512];                   /* pythonfmu's last fatal message (read if it cannot instantiate) */
};

__attribute__((constructor)) static void drivetrain_fmu_wrapper_loaded(void)
{
    if (same_runtime()) {
        drivetrain_fmu_copy_generation = drivetrain_fmu_next_generation();
    }
}

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

/* ------------------------------------------------------------------ the resources folder
 * FMI 2.0 passes fmuResourceLocation as a URI, on Linux a file URI (RFC 8089: file:///p,
 * file:/p or file://localhost/p) whose path is percent-encoded as every URI's is (RFC 3986
 * 2.1: a byte outside the unreserved characters as %XX).  pythonfmu 0.7.0 only turns "%20"
 * into a space and strips "file://": a folder named with ü (%C3%BC), é, '%' (%25) or '#'
 * (%23) became a path that does not exist, where it read an empty slave module name, found
 * no class and called it (NULL): the host died.  The forwarder decodes the URI and gives
 * pythonfmu the folder as a plain path, which it uses as it is (sys.path entry, the
 * slavemodule.txt and <module>.py it reads, the slave's ``resources``).  Hosts that do not
 * encode as RFC 3986 asks are met where what they meant is certain: a path written into
 * the URI as it is (a '%' left as it is) names an existing folder when its decoding does
 * not; fmusim 0.0.39 (Reference-FMUs src/FMI.c, FMIPathToURI: sprintf "%%%2X" of a signed
 * char) writes every byte from 0x80 up as %FF, a byte UTF-8 never holds, and then means the
 * resources folder of the FMU this binary belongs to if that path is the same elsewhere. */

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

/* runs of '/' made one and a trailing '/' removed (the same folder, POSIX 4.13): the path
 * then never holds "file://", which pythonfmu would strip wherever it is */
static void normalize_slashes(char *path)
{
    char *out = path;
    for (const char *c = path; *c != '\0'; ++c) {
        if (!(*c == '/' && out > path && out[-1] == '/')) {
            *out++ = *c;
        }
    }
    if (out > path + 1 && out[-1] == '/') {
        --out;
    }
    *out = '\0';
}

/* ``decoded`` (from fmusim's URI) equals ``path`` but where it has 0xFF and ``path`` a byte
 * from 0x80 up */
static int same_but_lost_bytes(const char *decoded, const char *path)
{
    for (; *decoded != '\0' && *path != '\0'; ++decoded, ++path) {
        unsigned char lost = (unsigned char)*decoded, byte = (unsigned char)*path;
        if (lost != byte && !(lost == 0xFF && byte >= 0x80)) {
            return 0;
        }
    }
    return *decoded == *path;
}

/* <FMU folder>/resources of the FMU whose binary this is (binaries/linux64/<id>.so) */
static char *own_resources(void)
{
    Dl_info binary;
    if (dladdr((void *)&own_resources, &binary) == 0 || binary.dli_fname == NULL) {
        return NULL;
    }
    char *path = malloc(strlen(binary.dli_fname) + sizeof "/resources");
    if (path == NULL) {
        return NULL;
    }
    strcpy(path, binary.dli_fname);
    for (int level = 0; level < 3; ++level) {     /* <id>.so, linux64, binaries */
        char *slash = strrchr(path, '/');
        if (slash == NULL) {
            free(path);
            return NULL;
        }
        *slash = '\0';
    }
    strcat(path, "/resources");
    normalize_slashes(path);
    return path;
}

static int is_folder(const char *path)
{
    struct stat status;
    return stat(path, &status) == 0 && S_ISDIR(status.st_mode);
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

/* The FMU's resources folder that fmuResourceLocation ``uri`` names, as a path (malloc'd),
 * checked to hold the slave pythonfmu will load (slavemodule.txt and the module it names,
 * ``module``); NULL with the reason in ``error``. */
static char *resources_folder(const char *uri, char *module, size_t module_size, char *error, size_t size)
{
    const char *encoded;
    if (uri == NULL || *uri == '\0') {
        snprintf(error, size, "drivetrain-fmu: no fmuResourceLocation was given (FMI 2.0: the file URI of the "
                 "FMU's resources folder)");
        return NULL;
    }
    if (strncasecmp(uri, "file:", 5) != 0) {
        snprintf(error, size, "drivetrain-fmu: fmuResourceLocation \"%s\" is not a file URI: the FMU reads its "
                 "resources from a folder of this machine (file:///path)", uri);
        return NULL;
    }
    if (uri[5] == '/' && uri[6] == '/') {
        const char *authority = uri + 7, *end = strchr(authority, '/');
        size_t length = end != NULL ? (size_t)(end - authority) : strlen(authority);
        if (!(length == 0 || (length == 9 && strncasecmp(authority, "localhost", 9) == 0))) {
            snprintf(error, size, "drivetrain-fmu: fmuResourceLocation \"%s\" names the host \"%.*s\": the FMU reads "
                     "its resources from a folder of this machine (file:///path or file://localhost/path)", uri,
                     (int)length, authority);
            return NULL;
        }
        encoded = end;
    } else {
        encoded = uri[5] == '/' ? uri + 5 : NULL;
    }
    if (encoded == NULL) {
        snprintf(error, size, "drivetrain-fmu: fmuResourceLocation \"%s\" names no absolute path (file:///path, "
                 "file:/path or file://localhost/path)", uri);
        return NULL;
    }
    char bad_escape[120] = "";
    char *decoded = malloc(strlen(encoded) + 1), *written = strdup(encoded), *folder = NULL;
    if (decoded == NULL || written == NULL) {
        snprintf(error, size, "drivetrain-fmu: out of memory");
        goto done;
    }
    normalize_slashes(written);
    if (percent_decode(encoded, decoded, bad_escape, sizeof bad_escape) == 0) {
        normalize_slashes(decoded);
        if (is_folder(decoded)) {
            folder = decoded;
        }
    }
    if (folder == NULL && is_folder(written)) {
        folder = written;               /* a host that wrote the path as it is */
    }
    if (folder == NULL && *bad_escape == '\0' && strchr(decoded, '\xFF') != NULL) {
        char *own = own_resources();    /* fmusim's %FF for each non-ASCII byte */
        if (own != NULL && same_but_lost_bytes(decoded, own) && is_folder(own)) {
            free(decoded);
            decoded = folder = own;
        } else {
            free(own);
        }
    }
    if (folder == NULL) {
        if (*bad_escape != '\0') {
            snprintf(error, size, "drivetrain-fmu: fmuResourceLocation \"%s\" is not a valid file URI: %s; nor is "
                     "%s a folder", uri, bad_escape, written);
        } else {
            snprintf(error, size, "drivetrain-fmu: the FMU's resources folder %s (fmuResourceLocation \"%s\") does "
                     "not exist: extract the whole FMU and pass its resources folder", decoded, uri);
        }
        goto done;
    }
    if (!is_utf8((const unsigned char *)folder)) {
        snprintf(error, size, "drivetrain-fmu: the FMU's resources folder path %s is not UTF-8 text, which "
                 "pythonfmu needs (it puts the folder on Python's module search path): extract the FMU into a "
                 "folder whose path is UTF-8", folder);
        folder = NULL;
        goto done;
    }
    if (strstr(folder, "%20") != NULL) {
        snprintf(error, size, "drivetrain-fmu: the FMU's resources folder path %s holds \"%%20\", which pythonfmu "
                 "0.7.0 reads as a space: extract the FMU into a folder without \"%%20\" in its path", folder);
        folder = NULL;
        goto done;
    }
    /* what pythonfmu reads: the module name, the first line of slavemodule.txt (without
     * that file it imports the name "" and crashes), and <module>.py */
    size_t length = strlen(folder);
    char *file = malloc(length + (module_size > 32 ? module_size : 32) + 8);
    if (file == NULL) {
        snprintf(error, size, "drivetrain-fmu: out of memory");
        folder = NULL;
        goto done;
    }
    sprintf(file, "%s/slavemodule.txt", folder);
    FILE *names = fopen(file, "r");
    if (names == NULL || fgets(module, (int)module_size, names) == NULL) {
        snprintf(error, size, "drivetrain-fmu: the FMU's resources folder %s has no readable slavemodule.txt (the "
                 "name of the slave module): extract the whole FMU", folder);
        folder = NULL;
    } else {
        module[strcspn(module, "\n")] = '\0';
        sprintf(file, "%s/%s.py", folder, module);
        FILE *source = *module != '\0' ? fopen(file, "r") : NULL;
        if (source == NULL) {
            snprintf(error, size, "drivetrain-fmu: the slave module \"%s\" that slavemodule.txt names has no "
                     "readable source %s: extract the whole FMU", module, file);
            folder = NULL;
        } else {
            fclose(source);
        }
    }
    if (names != NULL) {
        fclose(names);
    }
    free(file);
done:
    if (folder != decoded) {
        free(decoded);
    }
    if (folder != written) {
        free(written);
    }
    return folder;
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

EXPORT const char *fmi2GetTypesPlatform(void) { return "default"; }
EXPORT const char *fmi2GetVersion(void) { return "2.0"; }

EXPORT fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                                     fmi2String fmuResourceLocation, const fmi2CallbackFunctions *functions,
                                     fmi2Boolean visible, fmi2Boolean loggingOn)
{
    char folder[PATH_MAX], error[3 * PATH_MAX], module[256];
    Dl_info self_info;
    if (functions != NULL && !same_runtime()) {
        snprintf(error, sizeof error, "drivetrain-fmu: this FMU's runtime (%s) cannot start: the process has "
                 "already loaded the runtime of another build of drivetrain-fmu (%s) from another FMU; FMUs "
                 "from different builds cannot run in one process: rebuild them together", RUNTIME_ID,
                 drivetrain_fmu_runtime_id != NULL ? drivetrain_fmu_runtime_id : "an older one");
        host_log(functions, instanceName, fmi2Fatal, "logStatusFatal", error);
        return NULL;
    }
    if (!__atomic_exchange_n(&released_others, 1, __ATOMIC_ACQ_REL)) {
        drivetrain_fmu_release_held(drivetrain_fmu_copy_generation);   /* copies hosts have let go of */
    }
    if (functions == NULL) {
        return NULL;
    }
    if (__atomic_load_n(&pythonfmu, __ATOMIC_ACQUIRE) == NULL) {
        if (dladdr((void *)&fmi2Instantiate, &self_info) == 0 || self_info.dli_fname == NULL
            || strlen(self_info.dli_fname) >= sizeof folder || strrchr(self_info.dli_fname, '/') == NULL) {
            host_log(functions, instanceName, fmi2Fatal, "logStatusFatal",
                     "drivetrain-fmu: cannot find the FMU's binaries folder");
            return NULL;
        }
        strcpy(folder, self_info.dli_fname);
        *strrchr(folder, '/') = '\0';
        void *const *found = drivetrain_fmu_pythonfmu(folder, pythonfmu_names, N_PYTHONFMU, error, sizeof error);
        if (found == NULL) {
            host_log(functions, instanceName, fmi2Fatal, "logStatusFatal", error);
            return NULL;
        }
        __atomic_store_n(&pythonfmu, found, __ATOMIC_RELEASE);
    }
    char *resources = resources_folder(fmuResourceLocation, module, sizeof module, error, sizeof error);
    if (resources == NULL) {
        host_log(functions, instanceName, fmi2Fatal, "logStatusFatal", error);
        return NULL;
    }
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
            snprintf(error, sizeof error, "drivetrain-fmu: the slave module %s/%s.py defines no class derived "
                     "from pythonfmu's Fmi2Slave", resources, module);
        } else {
            snprintf(error, sizeof error, "drivetrain-fmu: pythonfmu could not load or instantiate the slave "
                     "module %s/%s.py (the message before says why)", resources, module);
        }
        host_log(functions, instanceName, fmi2Fatal, "logStatusFatal", error);
        free(resources);
        free(self);
        return NULL;
    }
    free(resources);
    __atomic_add_fetch(&live_instances, 1, __ATOMIC_ACQ_REL);
    return self;
}

EXPORT void fmi2FreeInstance(fmi2Component c)
{
    struct instance *self = c;
    Dl_info self_info;
    if (self == NULL) {
        return;
    }
    ((void (*)(fmi2Component))pythonfmu[AT_fmi2FreeInstance])(self->inner);
    drop_categories(self);
    free(self);
    if (__atomic_sub_fetch(&live_instances, 1, __ATOMIC_ACQ_REL) == 0
        && dladdr((void *)&fmi2FreeInstance, &self_info) != 0 && self_info.dli_fname != NULL) {
        /* stay loaded for a host that closes this binary twice (fmpy's freeInstance closes
         * it, a script's freeLibrary again); the first instantiation of the next FMU binary
         * loaded in the process drops this reference (drivetrain_fmu_release_held) */
        void *handle = dlopen(self_info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        if (handle != NULL) {
            drivetrain_fmu_hold(self_info.dli_fname, handle, drivetrain_fmu_copy_generation);
        }
    }
}

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
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
    }
    return ((fmi2Status (*)(fmi2Component))pythonfmu[AT_fmi2Reset])(self->inner);
}

EXPORT fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference *vr, size_t nvr, fmi2Real *value)
{
    const struct instance *self = c;
    if (self == NULL) {
        return fmi2Error;
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
