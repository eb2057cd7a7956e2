#include "refdir.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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
