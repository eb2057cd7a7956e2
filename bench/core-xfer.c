/* core-xfer: how fast freshly written data moves from one core to another
 * on this machine right now, as libgcl's shared-memory staging moves it.
 * Two processes pinned to two cores take turns: the first writes a buffer
 * (default 256 KiB, libgcl's staging segment), the second reads it all, and
 * so on; printed is the buffer size over the time of one turn (GB/s), once
 * per half second. On a VM whose vCPUs now share a cache and now do not,
 * this rate changes several-fold and libgcl's shm collectives with it
 * (bench/results/gcl-allreduce.md): run it next to a benchmark to know
 * which state the numbers come from.
 * Then it times the smallest exchange there is: each process writes 8 bytes
 * and a counter into its own cache line and waits for the other's (what a
 * 2-member allreduce of up to 16 bytes costs at least, in libgcl's one-shot
 * path or Open MPI's vader fastbox), and prints microseconds per exchange.
 *
 *   bench/core-xfer [SECONDS (5)] [BYTES (262144)] [CORE_A (0)] [CORE_B (1)]
 * Exit status 0; 2 on bad arguments or when the cores cannot be used. */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One process's side of EXCHANGES symmetric exchanges through the lines
 * at l[0] and l[1] (counter, then 8 bytes of data): returns their sum, so
 * nothing is optimised away. */
#define EXCHANGES 200000L
typedef struct {
    _Atomic long ctr;
    double val;
    char pad[112]; /* one line each, and not an adjacent-line prefetch pair */
} xline_t;
static double exchange(xline_t *l, int me)
{
    double acc = 0;
    for (long i = 1; i <= EXCHANGES; i++) {
        l[me].val = (double)i;
        atomic_store_explicit(&l[me].ctr, i, memory_order_release);
        while (atomic_load_explicit(&l[!me].ctr, memory_order_acquire) < i)
            ;
        acc += l[!me].val + l[me].val;
    }
    return acc;
}

static int pin(int core)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(core, &s);
    return sched_setaffinity(0, sizeof(s), &s);
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 5;
    size_t n = argc > 2 ? strtoull(argv[2], NULL, 0) : 256 * 1024;
    int a = argc > 3 ? atoi(argv[3]) : 0, b = argc > 4 ? atoi(argv[4]) : 1;
    if (secs <= 0 || n < 4096 || n > ((size_t)1 << 30)) {
        fprintf(stderr, "usage: core-xfer [SECONDS > 0] [BYTES 4096..1 GiB] [CORE_A] [CORE_B]\n");
        return 2;
    }
    n &= ~(size_t)7;
    char *m = mmap(NULL, n + 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        perror("core-xfer: mmap");
        return 2;
    }
    _Atomic long *turn = (_Atomic long *)(void *)m; /* odd: the reader's turn; < 0: stop */
    xline_t *xl = (xline_t *)(void *)(m + 256);     /* the exchange's two lines */
    const long *data = (const long *)(void *)(m + 4096);
    memset(m + 4096, 1, n);
    pid_t child = fork();
    if (child < 0) {
        perror("core-xfer: fork");
        return 2;
    }
    if (child == 0) { /* the reader */
        if (pin(b) != 0)
            _exit(2);
        volatile long sink = 0;
        for (long want = 1;; want += 2) {
            long t;
            while ((t = atomic_load(turn)) != want)
                if (t < 0)
                    _exit(exchange(xl, 1) > 0 ? 0 : 1);
            long s = 0;
            for (size_t k = 0; k < n / 8; k++)
                s += data[k];
            sink += s;
            atomic_store(turn, want + 1);
        }
    }
    if (pin(a) != 0) {
        fprintf(stderr, "core-xfer: cannot run on core %d\n", a);
        atomic_store(turn, -1);
        waitpid(child, NULL, 0);
        return 2;
    }
    printf("core-xfer: %zu bytes written on core %d, read on core %d; GB/s per half second:\n", n, a, b);
    double t0 = now(), w = t0;
    long turns = 0;
    for (long t = 0; now() - t0 < secs; t += 2) {
        memset(m + 4096, (int)(t & 0x7f), n);
        atomic_store(turn, t + 1);
        while (atomic_load(turn) != t + 2) {
            int st;
            if (waitpid(child, &st, WNOHANG) == child) { /* the reader could not start */
                fprintf(stderr, "core-xfer: cannot run on core %d\n", b);
                return 2;
            }
        }
        turns++;
        double x = now();
        if (x - w >= 0.5) {
            printf(" %.1f", (double)turns * (double)n / (x - w) / 1e9);
            fflush(stdout);
            turns = 0;
            w = x;
        }
    }
    printf("\n");
    atomic_store(turn, -1);
    double x0 = now();
    volatile double sink = exchange(xl, 0);
    double x1 = now();
    (void)sink;
    waitpid(child, NULL, 0);
    printf("core-xfer: 8-byte exchange between the two cores: %.3f us (%ld in a row)\n",
           (x1 - x0) / (double)EXCHANGES * 1e6, EXCHANGES);
    return 0;
}
