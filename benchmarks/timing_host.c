#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef void *fmi2Component;
typedef struct {
    void (*logger)(void *, const char *, int, const char *, const char *, ...);
    void *(*allocateMemory)(size_t, size_t);
    void (*freeMemory)(void *);
    void (*stepFinished)(void *, int);
    void *componentEnvironment;
} fmi2CallbackFunctions;
typedef fmi2Component (*Instantiate)(const char *, int, const char *, const char *, const fmi2CallbackFunctions *,
                                     int, int);
typedef int (*Setup)(fmi2Component, int, double, double, int, double);
typedef int (*Mode)(fmi2Component);
typedef int (*DoStep)(fmi2Component, double, double, int);
typedef void (*Free)(fmi2Component);

static void logger(void *env, const char *name, int status, const char *category, const char *message, ...) {
    if (status > 1) fprintf(stderr, "[%s] %s\n", category ? category : "", message ? message : "");
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static void *symbol(void *lib, const char *name) {
    void *f = dlsym(lib, name);
    if (!f) { printf("ERROR no %s\n", name); exit(4); }
    return f;
}

/* host BINARY RESOURCE_URI GUID INSTANCE STEP */
int main(int argc, char **argv) {
    if (argc != 6) { fprintf(stderr, "usage: host BINARY RESOURCE_URI GUID INSTANCE STEP\n"); return 1; }
    double step = atof(argv[5]);
    fmi2CallbackFunctions callbacks = {logger, calloc, free, NULL, NULL};
    double t0 = now();
    void *lib = dlopen(argv[1], RTLD_LAZY);
    double t1 = now();
    if (!lib) { printf("ERROR dlopen: %s\n", dlerror()); return 2; }
    Instantiate instantiate = (Instantiate)symbol(lib, "fmi2Instantiate");
    Setup setup = (Setup)symbol(lib, "fmi2SetupExperiment");
    Mode enter = (Mode)symbol(lib, "fmi2EnterInitializationMode");
    Mode leave = (Mode)symbol(lib, "fmi2ExitInitializationMode");
    DoStep do_step = (DoStep)symbol(lib, "fmi2DoStep");
    Mode terminate = (Mode)symbol(lib, "fmi2Terminate");
    Free free_instance = (Free)symbol(lib, "fmi2FreeInstance");
    double t2 = now();
    fmi2Component c = instantiate(argv[4], 1 /* fmi2CoSimulation */, argv[3], argv[2], &callbacks, 0, 0);
    double t3 = now();
    if (!c) { printf("ERROR fmi2Instantiate returned NULL\n"); return 3; }
    if (setup(c, 0, 0.0, 0.0, 0, 0.0) > 1 || enter(c) > 1 || leave(c) > 1) { printf("ERROR initialisation\n"); return 3; }
    double t4 = now();
    if (do_step(c, 0.0, step, 1) > 1) { printf("ERROR fmi2DoStep\n"); return 3; }
    double t5 = now();
    terminate(c);
    free_instance(c);
    double t6 = now();
    printf("TIMES %.9f %.9f %.9f %.9f %.9f\n", t1 - t0, t3 - t2, t4 - t3, t5 - t4, t6 - t5);
    return 0;
}
