/* drivetrain-fmu: the FMU's binary (binaries/linux64/<Model>.so), a forwarder to pythonfmu's
 * library; built and packaged by host_support.py.
 *
 * pythonfmu's library (PYTHONFMU_LIBRARY, in this folder) is loaded once per process by the
 * runtime starter and never unloaded; this binary, one per FMU copy a host loads, exports
 * the FMI 2.0 co-simulation functions and forwards them.  It decodes the resources URI
 * for pythonfmu (below, resources_folder) and corrects pythonfmu 0.7.0's logging; that
 * part, the FMI types and the functions forwarded unchanged are native/fmi2_forwarding.h,
 * shared with the Windows forwarder (native/win64/forwarder.c).
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
#include "../fmi2_forwarding.h"

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

/* the CPython functions of the fast calls (fmi2_forwarding.h): the process's libpython (the
 * host's, or the bundled one the starter loaded with RTLD_GLOBAL) */
static int find_python_api(struct python_api *api)
{
    *(void **)&api->gil_ensure = dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
    *(void **)&api->gil_release = dlsym(RTLD_DEFAULT, "PyGILState_Release");
    *(void **)&api->import_module = dlsym(RTLD_DEFAULT, "PyImport_ImportModule");
    *(void **)&api->decref = dlsym(RTLD_DEFAULT, "Py_DecRef");
    *(void **)&api->capsule_import = dlsym(RTLD_DEFAULT, "PyCapsule_Import");
    *(void **)&api->err_clear = dlsym(RTLD_DEFAULT, "PyErr_Clear");
    return api->gil_ensure != NULL && api->gil_release != NULL && api->import_module != NULL
           && api->decref != NULL && api->capsule_import != NULL && api->err_clear != NULL;
}

static int same_runtime(void)
{
    return drivetrain_fmu_runtime_id != NULL && strcmp(drivetrain_fmu_runtime_id, RUNTIME_ID) == 0;
}

/* which load of this file this is (the starter reads it with dlsym) */
EXPORT unsigned long drivetrain_fmu_copy_generation;
static int live_instances;
static int released_others;

__attribute__((constructor)) static void drivetrain_fmu_wrapper_loaded(void)
{
    if (same_runtime()) {
        drivetrain_fmu_copy_generation = drivetrain_fmu_next_generation();
    }
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
    struct instance *self = instantiate_slave(resources, module, '/', instanceName, fmuType, fmuGUID, functions,
                                              visible, loggingOn);
    if (self != NULL) {
        __atomic_add_fetch(&live_instances, 1, __ATOMIC_ACQ_REL);
    }
    return self;
}

EXPORT void fmi2FreeInstance(fmi2Component c)
{
    struct instance *self = c;
    Dl_info self_info;
    if (self == NULL) {
        return;
    }
    release_fast_calls(self);
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
