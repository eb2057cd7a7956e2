#include "refdir.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>

void *refdir_load(const char *dir, const char *name, const char *part, size_t bytes)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s.%s.bin", dir, name, part);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        fail_msg("missing reference file %s", path);
    void *buf = malloc(bytes + 1);
    assert_non_null(buf);
    size_t got = fread(buf, 1, bytes + 1, f);
    fclose(f);
    if (got != bytes)
        fail_msg("%s: %zu bytes, expected %zu (the reference script wrote other shapes)", path, got,
                 bytes);
    return buf;
}

int refdir_make(const char *prefix, const char *script, char *dir, size_t len)
{
    const char *py = getenv("PYTHON_REF"), *src = getenv("top_srcdir"), *tmp = getenv("TMPDIR");
    char cmd[2048];
    snprintf(dir, len, "%s/%s_XXXXXX", tmp && tmp[0] ? tmp : "/tmp", prefix);
    if (mkdtemp(dir) == NULL) {
        perror(dir);
        return -1;
    }
    snprintf(cmd, sizeof(cmd), "'%s' '%s/tests/unit/%s' '%s'", py && py[0] ? py : "/usr/bin/python3",
             src && src[0] ? src : ".", script, dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "reference generation failed: %s\n", cmd);
        return -1;
    }
    return 0;
}

void refdir_remove(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4096];
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}
