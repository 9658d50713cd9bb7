/* drivetrain-fmu runtime starter (binaries/linux64/libdrivetrain_python.so), loaded with every
 * FMU binary (DT_NEEDED); built and packaged by host_support.py.
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

/* room for the pythonfmu functions a forwarder asks for (fmi2_forwarding.h: N_PYTHONFMU, the FMI 2.0
 * co-simulation functions that take an instance); a forwarder asking for more is refused */
#define PYTHONFMU_SYMBOLS 31

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
 * their host has let go of them (see the forwarding binary, forwarder.c).
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
