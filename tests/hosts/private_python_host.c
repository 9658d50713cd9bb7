/* A co-simulation host that embeds CPython as a plug-in does: it loads libpython with
 * RTLD_LOCAL (or RTLD_GLOBAL, for comparison), starts it, releases the GIL, then loads an
 * element FMU whose tau_1 input it sets and which it steps 100 times (tests/hosts/test_host_pythons.py).
 *
 *     private_python_host LIBPYTHON FMU_FOLDER GUID local|global TAU_1_VR W_1_VR
 *
 * prints "w_1 <value>" after the steps (or "instantiate failed"), then "host sees the FMU's
 * modules: True|False" from the host's own interpreter. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void *Component;
typedef struct {
    void (*logger)(void *, const char *, int, const char *, const char *, ...);
    void *(*allocate)(size_t, size_t);
    void (*release)(void *);
    void *step_finished;
    void *environment;
} Callbacks;

static void logger(void *environment, const char *instance, int status, const char *category, const char *message,
                   ...)
{
    (void)environment;
    printf("log %s [%d] %s: %s\n", instance, status, category ? category : "NULL", message);
}

static void *symbol(void *library, const char *name)
{
    void *found = dlsym(library, name);
    if (found == NULL) {
        printf("missing symbol %s\n", name);
        exit(3);
    }
    return found;
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: %s LIBPYTHON FMU_FOLDER GUID local|global TAU_1_VR W_1_VR\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    void *python = dlopen(argv[1], RTLD_NOW | (strcmp(argv[4], "global") == 0 ? RTLD_GLOBAL : RTLD_LOCAL));
    if (python == NULL) {
        printf("cannot load %s: %s\n", argv[1], dlerror());
        return 1;
    }
    ((void (*)(int))symbol(python, "Py_InitializeEx"))(0);
    int (*run)(const char *) = (int (*)(const char *))symbol(python, "PyRun_SimpleString");
    void *thread = ((void *(*)(void))symbol(python, "PyEval_SaveThread"))();

    char path[4096], uri[4200];
    snprintf(path, sizeof path, "%s/binaries/linux64/Clutch.so", argv[2]);
    snprintf(uri, sizeof uri, "file://%s/resources", argv[2]);
    void *fmu = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (fmu == NULL) {
        printf("cannot load %s: %s\n", path, dlerror());
        return 1;
    }
    Callbacks callbacks = {logger, calloc, free, NULL, NULL};
    Component (*instantiate)(const char *, int, const char *, const char *, const Callbacks *, int, int) =
        (Component (*)(const char *, int, const char *, const char *, const Callbacks *, int, int))
            symbol(fmu, "fmi2Instantiate");
    Component clutch = instantiate("clutch", 1, argv[3], uri, &callbacks, 0, 0);
    if (clutch == NULL) {
        printf("instantiate failed\n");
    } else {
        int (*setup)(Component, int, double, double, int, double) =
            (int (*)(Component, int, double, double, int, double))symbol(fmu, "fmi2SetupExperiment");
        int (*enter)(Component) = (int (*)(Component))symbol(fmu, "fmi2EnterInitializationMode");
        int (*leave)(Component) = (int (*)(Component))symbol(fmu, "fmi2ExitInitializationMode");
        int (*set)(Component, const unsigned *, size_t, const double *) =
            (int (*)(Component, const unsigned *, size_t, const double *))symbol(fmu, "fmi2SetReal");
        int (*get)(Component, const unsigned *, size_t, double *) =
            (int (*)(Component, const unsigned *, size_t, double *))symbol(fmu, "fmi2GetReal");
        int (*step)(Component, double, double, int) =
            (int (*)(Component, double, double, int))symbol(fmu, "fmi2DoStep");
        void (*release)(Component) = (void (*)(Component))symbol(fmu, "fmi2FreeInstance");
        const unsigned tau_1 = (unsigned)atoi(argv[5]), w_1 = (unsigned)atoi(argv[6]);
        const double torque = 100.0;
        double speed = 0.0;
        int status = setup(clutch, 0, 0.0, 0.0, 0, 0.0) | enter(clutch) | leave(clutch) | set(clutch, &tau_1, 1, &torque);
        for (int k = 0; k < 100; k++) {
            status |= step(clutch, k * 1e-3, 1e-3, 1);
        }
        status |= get(clutch, &w_1, 1, &speed);
        printf("status %d\nw_1 %.17g\n", status, speed);
        release(clutch);
    }
    ((void (*)(void *))symbol(python, "PyEval_RestoreThread"))(thread);
    run("import sys; print('host sees the FMU\\'s modules:', 'drivetrain_fmu.solvers.friction' in sys.modules, flush=True)");
    return 0;
}
