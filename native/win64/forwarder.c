/* drivetrain-fmu: the FMU's binary on Windows (binaries/win64/<Model>.dll), a forwarder to
 * pythonfmu 0.7.0's stock DLL; cross-compiled with mingw-w64 and packaged by host_support.py.
 *
 * binaries/win64/ holds this DLL, pythonfmu's DLL under its own name (PYTHONFMU_LIBRARY,
 * which imports python3.dll, CPython's stable ABI, and the C++ runtime beside it) and a
 * Windows CPython in RUNTIME_FOLDER (python.org's embeddable distribution: PYTHON_DLL,
 * python3.dll, the standard library as STDLIB_ZIP, the extension modules the FMU needs).
 *
 * At the first instantiation in a process it finds the interpreter: a loaded python3X.dll
 * that is initialised (a Python host such as fmpy, or an FMU of this project instantiated
 * before) runs the FMU, as on Linux; otherwise the bundled one is started (isolated: no
 * environment variables, no site, no user site, module search path exactly the runtime
 * folder and its zip, no signal handlers installed in the host, no bytecode written, UTF-8
 * mode) and its GIL released.  pythonfmu's DLL is then loaded once per process (the first
 * FMU's copy, found by name afterwards) and pinned: never unloaded, and the interpreter is
 * never finalised by this binary, since pythonfmu finds Python already running and leaves
 * its finalisation alone (the exit-order fault of Linux, fmus/native_exit.py, has no
 * counterpart then).  The resources URI is decoded (resources_folder) and the logging
 * corrected (fmi2_forwarding.h) as on Linux.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#define PSAPI_VERSION 2     /* K32EnumProcessModules, K32GetModuleBaseNameW: in kernel32 */
#include <psapi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#define EXPORT __declspec(dllexport)
#include "../fmi2_forwarding.h"

#if !defined(PYTHONFMU_LIBRARY) || !defined(RUNTIME_FOLDER) || !defined(PYTHON_DLL) || !defined(STDLIB_ZIP)
#error "compile with -DPYTHONFMU_LIBRARY=... -DRUNTIME_FOLDER=... -DPYTHON_DLL=... -DSTDLIB_ZIP=... (host_support.py)"
#endif
#define WIDE_(text) L##text
#define WIDE(text) WIDE_(text)

static void *pythonfmu_functions[N_PYTHONFMU];

/* the folder of this DLL (binaries\win64), without a trailing backslash */
static int own_folder(wchar_t *folder, DWORD size)
{
    HMODULE self;
    if (!GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                            (LPCWSTR)(void *)&own_folder, &self)) {
        return 0;
    }
    DWORD length = GetModuleFileNameW(self, folder, size);
    if (length == 0 || length >= size) {
        return 0;
    }
    wchar_t *slash = wcsrchr(folder, L'\\');
    if (slash == NULL) {
        return 0;
    }
    *slash = L'\0';
    return 1;
}

/* an initialised CPython DLL (python3X.dll) loaded in this process, or NULL */
static HMODULE running_python(void)
{
    HMODULE modules[1024];
    DWORD needed = 0;
    if (!K32EnumProcessModules(GetCurrentProcess(), modules, sizeof modules, &needed)) {
        return NULL;
    }
    for (DWORD i = 0; i < needed / sizeof modules[0] && i < 1024; ++i) {
        wchar_t name[MAX_PATH];
        if (K32GetModuleBaseNameW(GetCurrentProcess(), modules[i], name, MAX_PATH) == 0
            || _wcsnicmp(name, L"python3", 7) != 0 || _wcsicmp(name, L"python3.dll") == 0) {
            continue;
        }
        int (*initialized)(void) = (int (*)(void))(void *)GetProcAddress(modules[i], "Py_IsInitialized");
        if (initialized != NULL && initialized()) {
            return modules[i];
        }
    }
    return NULL;
}

static HMODULE load_beside(const wchar_t *folder, const wchar_t *name, char *error, size_t size)
{
    wchar_t path[MAX_PATH];
    if (_snwprintf(path, MAX_PATH, L"%ls\\%ls", folder, name) >= MAX_PATH) {
        snprintf(error, size, "drivetrain-fmu: the FMU's folder path is too long: %ls", folder);
        return NULL;
    }
    /* the DLL's own folder first for what it imports */
    HMODULE module = LoadLibraryExW(path, NULL, LOAD_WITH_ALTERED_SEARCH_PATH);
    if (module == NULL) {
        snprintf(error, size, "drivetrain-fmu: cannot load %ls (Windows error %lu)", path, GetLastError());
    }
    return module;
}

/* python3.dll (the stable ABI pythonfmu imports) of the running interpreter ``python``:
 * already loaded, or loaded from python's folder */
static int stable_abi_of(HMODULE python, char *error, size_t size)
{
    wchar_t folder[MAX_PATH];
    if (GetModuleHandleW(L"python3.dll") != NULL) {
        return 1;
    }
    DWORD length = GetModuleFileNameW(python, folder, MAX_PATH);
    wchar_t *slash = length > 0 && length < MAX_PATH ? wcsrchr(folder, L'\\') : NULL;
    if (slash == NULL) {
        snprintf(error, size, "drivetrain-fmu: cannot find the folder of the process's Python DLL");
        return 0;
    }
    *slash = L'\0';
    return load_beside(folder, L"python3.dll", error, size) != NULL;
}

/* start the bundled CPython (binaries\win64\RUNTIME_FOLDER) in a process without one */
static int start_bundled_python(const wchar_t *folder, char *error, size_t size)
{
    wchar_t home[MAX_PATH], search_path[2 * MAX_PATH + 2];
    if (_snwprintf(home, MAX_PATH, L"%ls\\" WIDE(RUNTIME_FOLDER), folder) >= MAX_PATH
        || _snwprintf(search_path, 2 * MAX_PATH + 2, L"%ls\\" WIDE(STDLIB_ZIP) L";%ls", home, home)
               >= 2 * MAX_PATH + 2) {
        snprintf(error, size, "drivetrain-fmu: the FMU's folder path is too long: %ls", folder);
        return 0;
    }
    HMODULE python = load_beside(home, WIDE(PYTHON_DLL), error, size);
    if (python == NULL) {
        return 0;
    }
    void (*set_home)(const wchar_t *) = (void (*)(const wchar_t *))(void *)GetProcAddress(python, "Py_SetPythonHome");
    void (*set_path)(const wchar_t *) = (void (*)(const wchar_t *))(void *)GetProcAddress(python, "Py_SetPath");
    void (*set_name)(const wchar_t *) = (void (*)(const wchar_t *))(void *)GetProcAddress(python, "Py_SetProgramName");
    void (*initialize)(int) = (void (*)(int))(void *)GetProcAddress(python, "Py_InitializeEx");
    void *(*save_thread)(void) = (void *(*)(void))(void *)GetProcAddress(python, "PyEval_SaveThread");
    static const char *const flags[] = {"Py_IsolatedFlag", "Py_IgnoreEnvironmentFlag", "Py_NoSiteFlag",
                                        "Py_NoUserSiteDirectory", "Py_DontWriteBytecodeFlag", "Py_UTF8Mode"};
    if (set_home == NULL || set_path == NULL || set_name == NULL || initialize == NULL || save_thread == NULL) {
        snprintf(error, size, "drivetrain-fmu: the bundled %s lacks the functions that start it", PYTHON_DLL);
        return 0;
    }
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; ++i) {
        int *flag = (int *)(void *)GetProcAddress(python, flags[i]);
        if (flag == NULL) {
            snprintf(error, size, "drivetrain-fmu: the bundled %s has no %s", PYTHON_DLL, flags[i]);
            return 0;
        }
        *flag = 1;
    }
    set_name(L"drivetrain-fmu");
    set_home(home);
    set_path(search_path);
    initialize(0);          /* 0: the host's console and signal handling stay its own */
    save_thread();          /* release the GIL: pythonfmu takes it per call (PyGILState_Ensure) */
    if (load_beside(home, L"python3.dll", error, size) == NULL) {
        return 0;
    }
    return 1;
}

/* pythonfmu's functions, once per process: Python found or started, pythonfmu's DLL loaded
 * (or found loaded) and pinned.  0 with the reason in ``error``. */
static int load_pythonfmu(char *error, size_t size)
{
    wchar_t folder[MAX_PATH], mutex_name[64];
    int done = 0;
    if (!own_folder(folder, MAX_PATH)) {
        snprintf(error, size, "drivetrain-fmu: cannot find the FMU's binaries folder");
        return 0;
    }
    /* one start per process, whichever FMU's binary comes first */
    _snwprintf(mutex_name, 64, L"Local\\drivetrain-fmu-start-%lu", GetCurrentProcessId());
    HANDLE lock = CreateMutexW(NULL, FALSE, mutex_name);
    if (lock == NULL || WaitForSingleObject(lock, INFINITE) != WAIT_OBJECT_0) {
        snprintf(error, size, "drivetrain-fmu: cannot take the start lock (Windows error %lu)", GetLastError());
        if (lock != NULL) {
            CloseHandle(lock);
        }
        return 0;
    }
    HMODULE python = running_python();
    if (python != NULL ? !stable_abi_of(python, error, size) : !start_bundled_python(folder, error, size)) {
        goto done;
    }
    HMODULE library = GetModuleHandleW(WIDE(PYTHONFMU_LIBRARY));
    if (library == NULL && (library = load_beside(folder, WIDE(PYTHONFMU_LIBRARY), error, size)) == NULL) {
        goto done;
    }
    HMODULE pinned;
    if (!GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_PIN | GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS,
                            (LPCWSTR)(void *)library, &pinned)) {
        snprintf(error, size, "drivetrain-fmu: cannot pin pythonfmu's library (Windows error %lu)", GetLastError());
        goto done;
    }
    for (int i = 0; i < N_PYTHONFMU; ++i) {
        if ((pythonfmu_functions[i] = (void *)GetProcAddress(library, pythonfmu_names[i])) == NULL) {
            snprintf(error, size, "drivetrain-fmu: pythonfmu's library %s has no %s", PYTHONFMU_LIBRARY,
                     pythonfmu_names[i]);
            goto done;
        }
    }
    done = 1;
done:
    ReleaseMutex(lock);
    CloseHandle(lock);
    return done;
}

/* ------------------------------------------------------------------ the resources folder
 * FMI 2.0 passes fmuResourceLocation as a file URI (RFC 8089): file:///C:/p, file:/C:/p,
 * file://localhost/C:/p, or file://server/share/p for a UNC path, percent-encoded (RFC 3986
 * 2.1).  pythonfmu 0.7.0 (MSVC build) turns "%20" into a space and cuts 8 characters
 * after "file://": a path given to it as a plain path is used as it is.  It opens
 * slavemodule.txt with a narrow (ANSI code page) path and puts the folder on sys.path as
 * UTF-8: a folder whose path is not ASCII is passed by its 8.3 short name, which is, where
 * the volume has short names. */

static int exists(const char *utf8_path, DWORD want_folder)
{
    wchar_t wide[MAX_PATH];
    if (MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8_path, -1, wide, MAX_PATH) == 0) {
        return 0;
    }
    DWORD attributes = GetFileAttributesW(wide);
    return attributes != INVALID_FILE_ATTRIBUTES && ((attributes & FILE_ATTRIBUTE_DIRECTORY) != 0) == (want_folder != 0);
}

static int is_ascii(const char *text)
{
    for (; *text != '\0'; ++text) {
        if ((unsigned char)*text >= 0x80) {
            return 0;
        }
    }
    return 1;
}

/* ``folder`` (UTF-8) made ASCII by its short name, in place (room for MAX_PATH): 0 if it has none */
static int ascii_path(char *folder)
{
    wchar_t wide[MAX_PATH], short_name[MAX_PATH];
    if (is_ascii(folder)) {
        return 1;
    }
    if (MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, folder, -1, wide, MAX_PATH) == 0) {
        return 0;
    }
    DWORD length = GetShortPathNameW(wide, short_name, MAX_PATH);
    if (length == 0 || length >= MAX_PATH
        || WideCharToMultiByte(CP_UTF8, 0, short_name, -1, folder, MAX_PATH, NULL, NULL) == 0) {
        return 0;
    }
    return is_ascii(folder);
}

/* The FMU's resources folder that fmuResourceLocation ``uri`` names, as a path (malloc'd,
 * MAX_PATH bytes), checked to hold the slave pythonfmu will load (slavemodule.txt and the
 * module it names, ``module``); NULL with the reason in ``error``. */
static char *resources_folder(const char *uri, char *module, size_t module_size, char *error, size_t size)
{
    const char *encoded;
    int unc = 0;
    if (uri == NULL || *uri == '\0') {
        snprintf(error, size, "drivetrain-fmu: no fmuResourceLocation was given (FMI 2.0: the file URI of the "
                 "FMU's resources folder)");
        return NULL;
    }
    if (_strnicmp(uri, "file:", 5) != 0) {
        snprintf(error, size, "drivetrain-fmu: fmuResourceLocation \"%s\" is not a file URI: the FMU reads its "
                 "resources from a folder of this machine (file:///C:/path)", uri);
        return NULL;
    }
    if (uri[5] == '/' && uri[6] == '/') {
        const char *authority = uri + 7, *end = strchr(authority, '/');
        size_t length = end != NULL ? (size_t)(end - authority) : strlen(authority);
        if (length == 0 || (length == 9 && _strnicmp(authority, "localhost", 9) == 0)) {
            encoded = end;
        } else {
            encoded = uri + 5;          /* //server/share/...: a UNC path */
            unc = 1;
        }
    } else {
        encoded = uri[5] == '/' ? uri + 5 : NULL;
    }
    if (encoded == NULL) {
        snprintf(error, size, "drivetrain-fmu: fmuResourceLocation \"%s\" names no absolute path (file:///C:/path)",
                 uri);
        return NULL;
    }
    char *folder = malloc(strlen(encoded) + MAX_PATH + 1);
    if (folder == NULL) {
        snprintf(error, size, "drivetrain-fmu: out of memory");
        return NULL;
    }
    char bad_escape[120] = "";
    if (percent_decode(encoded, folder, bad_escape, sizeof bad_escape) != 0) {
        snprintf(error, size, "drivetrain-fmu: fmuResourceLocation \"%s\" is not a valid file URI: %s", uri,
                 bad_escape);
        goto failed;
    }
    if (!unc && folder[0] == '/' && folder[1] != '\0' && folder[2] == ':') {
        memmove(folder, folder + 1, strlen(folder));        /* /C:/path -> C:/path */
    }
    for (char *c = folder; *c != '\0'; ++c) {
        *c = *c == '/' ? '\\' : *c;
    }
    size_t length = strlen(folder);
    while (length > 3 && folder[length - 1] == '\\') {
        folder[--length] = '\0';
    }
    if (!is_utf8((const unsigned char *)folder) || !exists(folder, 1)) {
        snprintf(error, size, "drivetrain-fmu: the FMU's resources folder %s (fmuResourceLocation \"%s\") does not "
                 "exist: extract the whole FMU and pass its resources folder", folder, uri);
        goto failed;
    }
    if (strlen(folder) >= MAX_PATH - 32 || !ascii_path(folder)) {
        snprintf(error, size, "drivetrain-fmu: the FMU's resources folder %s has a path pythonfmu 0.7.0 cannot open "
                 "on Windows (longer than %d characters, or not ASCII and without a short name): extract the FMU "
                 "into a folder with a short ASCII path", folder, MAX_PATH - 32);
        goto failed;
    }
    if (strstr(folder, "%20") != NULL) {
        snprintf(error, size, "drivetrain-fmu: the FMU's resources folder path %s holds \"%%20\", which pythonfmu "
                 "0.7.0 reads as a space: extract the FMU into a folder without \"%%20\" in its path", folder);
        goto failed;
    }
    /* what pythonfmu reads: the module name, the first line of slavemodule.txt, and <module>.py */
    char file[MAX_PATH + 300];
    snprintf(file, sizeof file, "%s\\slavemodule.txt", folder);
    FILE *names = fopen(file, "r");
    int named = names != NULL && fgets(module, (int)module_size, names) != NULL;
    if (names != NULL) {
        fclose(names);
    }
    if (!named) {
        snprintf(error, size, "drivetrain-fmu: the FMU's resources folder %s has no readable slavemodule.txt (the "
                 "name of the slave module): extract the whole FMU", folder);
        goto failed;
    }
    module[strcspn(module, "\r\n")] = '\0';
    snprintf(file, sizeof file, "%s\\%s.py", folder, module);
    if (*module == '\0' || !exists(file, 0)) {
        snprintf(error, size, "drivetrain-fmu: the slave module \"%s\" that slavemodule.txt names has no readable "
                 "source %s: extract the whole FMU", module, file);
        goto failed;
    }
    return folder;
failed:
    free(folder);
    return NULL;
}

/* the CPython functions of the fast calls (fmi2_forwarding.h): python3.dll, which pythonfmu's
 * library imports (loaded by the time an instance is made) */
static int find_python_api(struct python_api *api)
{
    HMODULE python = GetModuleHandleW(L"python3.dll");
    if (python == NULL) {
        return 0;
    }
    api->gil_ensure = (int (*)(void))(void *)GetProcAddress(python, "PyGILState_Ensure");
    api->gil_release = (void (*)(int))(void *)GetProcAddress(python, "PyGILState_Release");
    api->import_module = (void *(*)(const char *))(void *)GetProcAddress(python, "PyImport_ImportModule");
    api->decref = (void (*)(void *))(void *)GetProcAddress(python, "Py_DecRef");
    api->capsule_import = (void *(*)(const char *, int))(void *)GetProcAddress(python, "PyCapsule_Import");
    api->err_clear = (void (*)(void))(void *)GetProcAddress(python, "PyErr_Clear");
    return api->gil_ensure != NULL && api->gil_release != NULL && api->import_module != NULL
           && api->decref != NULL && api->capsule_import != NULL && api->err_clear != NULL;
}

EXPORT fmi2Component fmi2Instantiate(fmi2String instanceName, fmi2Type fmuType, fmi2String fmuGUID,
                                     fmi2String fmuResourceLocation, const fmi2CallbackFunctions *functions,
                                     fmi2Boolean visible, fmi2Boolean loggingOn)
{
    char error[3 * MAX_PATH + 600], module[256];
    if (functions == NULL) {
        return NULL;
    }
    if (pythonfmu == NULL) {
        if (!load_pythonfmu(error, sizeof error)) {
            host_log(functions, instanceName, fmi2Fatal, "logStatusFatal", error);
            return NULL;
        }
        pythonfmu = pythonfmu_functions;
    }
    char *resources = resources_folder(fmuResourceLocation, module, sizeof module, error, sizeof error);
    if (resources == NULL) {
        host_log(functions, instanceName, fmi2Fatal, "logStatusFatal", error);
        return NULL;
    }
    return instantiate_slave(resources, module, '\\', instanceName, fmuType, fmuGUID, functions, visible,
                             loggingOn);
}

EXPORT void fmi2FreeInstance(fmi2Component c)
{
    struct instance *self = c;
    if (self == NULL) {
        return;
    }
    release_fast_calls(self);
    ((void (*)(fmi2Component))pythonfmu[AT_fmi2FreeInstance])(self->inner);
    drop_categories(self);
    free(self);
}
