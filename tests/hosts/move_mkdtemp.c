/* mkdtemp("/tmp/NAME.XXXXXX") creates $MKDTEMP_PARENT/NAME.XXXXXX instead */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *mkdtemp(char *template_)
{
    static char moved[4096];
    char *(*system_mkdtemp)(char *) = (char *(*)(char *))dlsym(RTLD_NEXT, "mkdtemp");
    const char *parent = getenv("MKDTEMP_PARENT"), *name = strrchr(template_, '/');
    if (parent != NULL && name != NULL && snprintf(moved, sizeof moved, "%s%s", parent, name) < (int)sizeof moved) {
        return system_mkdtemp(moved);
    }
    return system_mkdtemp(template_);
}
