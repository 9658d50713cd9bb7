/* A minimal FMI 2.0 co-simulation host without Python, for the Windows tests (tests/hosts/test_windows.py):
 * cross-compiled with mingw-w64 and run under wine, it runs the extracted FMUs a job list on
 * stdin names, one after the other in one process, and prints their outputs at every
 * communication point.  A job is three lines of tab-separated fields (a path may hold blanks):
 *
 *   fmu DLL RESOURCE_URI GUID STOP STEP
 *   set VR=VALUE VR=VALUE ...        (real inputs and parameters, set in initialization mode)
 *   get VR VR ...                    (the reals printed)
 *
 * Output per job: "fmu DLL", then one line per communication point "t v1 v2 ..." with %.17g
 * (round-trip exact).  The FMUs' log messages go to stderr; exit status 0, or 1 with the
 * failing call named.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void *fmi2Component;
typedef unsigned int fmi2ValueReference;
typedef enum { fmi2OK, fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending } fmi2Status;
typedef struct {
    void (*logger)(void *, const char *, fmi2Status, const char *, const char *, ...);
    void *(*allocateMemory)(size_t, size_t);
    void (*freeMemory)(void *);
    void (*stepFinished)(void *, fmi2Status);
    void *componentEnvironment;
} fmi2CallbackFunctions;

static void logger(void *environment, const char *name, fmi2Status status, const char *category,
                   const char *message, ...)
{
    va_list arguments;
    (void)environment;
    fprintf(stderr, "[%s %d %s] ", name ? name : "?", (int)status, category ? category : "(null)");
    va_start(arguments, message);
    vfprintf(stderr, message, arguments);
    va_end(arguments);
    fputc('\n', stderr);
}

static FARPROC function(HMODULE library, const char *name)
{
    FARPROC found = GetProcAddress(library, name);
    if (found == NULL) {
        fprintf(stderr, "fmi2_host: the FMU's binary has no %s\n", name);
        exit(1);
    }
    return found;
}

static void check(fmi2Status status, const char *call)
{
    if (status != fmi2OK) {
        fprintf(stderr, "fmi2_host: %s returned status %d\n", call, (int)status);
        exit(1);
    }
}

/* split ``line`` at tabs into ``words`` (at most ``most``): their number */
static int split(char *line, char **words, int most)
{
    int n = 0;
    for (char *word = strtok(line, "\t\r\n"); word != NULL && n < most; word = strtok(NULL, "\t\r\n")) {
        words[n++] = word;
    }
    return n;
}

static void run(char **fmu, char **sets, int n_sets, char **gets, int n_gets)
{
    wchar_t path[MAX_PATH];       /* the path is UTF-8 (the job list's encoding) */
    HMODULE library = MultiByteToWideChar(CP_UTF8, 0, fmu[1], -1, path, MAX_PATH) == 0 ? NULL
                    : LoadLibraryExW(path, NULL, LOAD_WITH_ALTERED_SEARCH_PATH);
    if (library == NULL) {
        fprintf(stderr, "fmi2_host: cannot load %s (Windows error %lu)\n", fmu[1], GetLastError());
        exit(1);
    }
    fmi2Component (*instantiate)(const char *, int, const char *, const char *, const fmi2CallbackFunctions *,
                                 int, int) = (void *)function(library, "fmi2Instantiate");
    fmi2Status (*setup)(fmi2Component, int, double, double, int, double) = (void *)function(library, "fmi2SetupExperiment");
    fmi2Status (*enter)(fmi2Component) = (void *)function(library, "fmi2EnterInitializationMode");
    fmi2Status (*leave)(fmi2Component) = (void *)function(library, "fmi2ExitInitializationMode");
    fmi2Status (*set_real)(fmi2Component, const fmi2ValueReference *, size_t, const double *) =
        (void *)function(library, "fmi2SetReal");
    fmi2Status (*get_real)(fmi2Component, const fmi2ValueReference *, size_t, double *) =
        (void *)function(library, "fmi2GetReal");
    fmi2Status (*do_step)(fmi2Component, double, double, int) = (void *)function(library, "fmi2DoStep");
    fmi2Status (*terminate)(fmi2Component) = (void *)function(library, "fmi2Terminate");
    void (*free_instance)(fmi2Component) = (void *)function(library, "fmi2FreeInstance");

    static fmi2CallbackFunctions callbacks = {logger, calloc, free, NULL, NULL};
    fmi2Component instance = instantiate("instance", 1 /* fmi2CoSimulation */, fmu[3], fmu[2], &callbacks, 0, 0);
    if (instance == NULL) {
        fprintf(stderr, "fmi2_host: fmi2Instantiate of %s failed\n", fmu[1]);
        exit(1);
    }
    double stop = atof(fmu[4]), step = atof(fmu[5]), values[256];
    fmi2ValueReference outputs[256];
    check(setup(instance, 0, 0.0, 0.0, 1, stop), "fmi2SetupExperiment");
    check(enter(instance), "fmi2EnterInitializationMode");
    for (int i = 1; i < n_sets; ++i) {
        fmi2ValueReference vr = (fmi2ValueReference)strtoul(sets[i], NULL, 10);
        double value = atof(strchr(sets[i], '=') + 1);
        check(set_real(instance, &vr, 1, &value), "fmi2SetReal");
    }
    check(leave(instance), "fmi2ExitInitializationMode");
    for (int i = 1; i < n_gets; ++i) {
        outputs[i - 1] = (fmi2ValueReference)strtoul(gets[i], NULL, 10);
    }
    long n_steps = (long)(stop / step + 0.5);
    printf("fmu %s\n", fmu[1]);
    for (long k = 0; k <= n_steps; ++k) {
        double time = k * step;           /* as fmpy: t = n h */
        check(get_real(instance, outputs, (size_t)(n_gets - 1), values), "fmi2GetReal");
        printf("%.17g", time);
        for (int i = 0; i < n_gets - 1; ++i) {
            printf(" %.17g", values[i]);
        }
        printf("\n");
        if (k < n_steps) {
            check(do_step(instance, time, step, 1), "fmi2DoStep");
        }
    }
    check(terminate(instance), "fmi2Terminate");
    free_instance(instance);
    fflush(stdout);
}

int main(void)
{
    static char lines[3][65536];
    char *fmu[8], *sets[256], *gets[257];
    while (fgets(lines[0], sizeof lines[0], stdin) != NULL) {
        if (fgets(lines[1], sizeof lines[1], stdin) == NULL || fgets(lines[2], sizeof lines[2], stdin) == NULL) {
            fprintf(stderr, "fmi2_host: a job is three lines (fmu, set, get)\n");
            return 2;
        }
        int n_fmu = split(lines[0], fmu, 8), n_sets = split(lines[1], sets, 256), n_gets = split(lines[2], gets, 257);
        if (n_fmu != 6 || strcmp(fmu[0], "fmu") != 0 || n_sets < 1 || strcmp(sets[0], "set") != 0 || n_gets < 1
            || strcmp(gets[0], "get") != 0) {
            fprintf(stderr, "fmi2_host: bad job (fmu DLL URI GUID STOP STEP / set VR=VALUE ... / get VR ...)\n");
            return 2;
        }
        run(fmu, sets, n_sets, gets, n_gets);
    }
    return 0;
}
