/* The input-as-a-file helper of the fuzz targets (fuzz_file.h). */
#include "fuzz_file.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[4096];
static char files[4][4200];
static int n_files;

static void remove_files(void)
{
    for (int i = 0; i < n_files; i++)
        unlink(files[i]);
    rmdir(dir);
}

static void make_dir(void)
{
    const char *base = getenv("TMPDIR");
    if (base == NULL || access(base, W_OK) != 0)
        base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(dir, sizeof(dir), "%s/ipu-fuzz.XXXXXX", base);
    if (mkdtemp(dir) == NULL) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(remove_files);
}

const char *fuzz_file(const char *name, const uint8_t *data, size_t size)
{
    if (dir[0] == '\0')
        make_dir();
    int i = 0;
    while (i < n_files && strcmp(strrchr(files[i], '/') + 1, name) != 0)
        i++;
    if (i == n_files) {
        if (n_files == (int)(sizeof(files) / sizeof(files[0])))
            abort();
        snprintf(files[n_files++], sizeof(files[0]), "%s/%s", dir, name);
    }
    int fd = open(files[i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t done = 0;
    while (fd >= 0 && done < size) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    if (fd < 0 || done != size || close(fd) != 0) {
        perror("fuzz: writing the input file");
        abort();
    }
    ipu_error(IPU_OK, "%s", ""); /* a failure that records no message shows */
    return files[i];
}

void fuzz_check_error(ipu_status_t st, const char *what)
{
    if (st == IPU_OK)
        return;
    const char *m = ipu_error_message();
    int control = 0; /* a control byte: not one line (common/status.h) */
    for (const char *p = m; *p; p++)
        control |= (unsigned char)*p < 0x20 || *p == 0x7f;
    if (st == IPU_ERR_INTERNAL || m[0] == '\0' || control) {
        fprintf(stderr, "fuzz: %s returned %s with message \"%s\": want a user error with a "
                "one-line message\n", what, ipu_status_string(st), m);
        abort();
    }
}
