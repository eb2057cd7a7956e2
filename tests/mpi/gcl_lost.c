/* A member lost on libgcl's shared-memory path (src/collectives/shm_lost.c,
 * "lost members"): gcl_lost [-n RANKS] forks RANKS processes that make a
 * world with gcl_init_oob (the allgather through files in a temporary
 * directory: no MPI, so no launcher tears the job down) and run one
 * collective in a loop on the shared-memory path; then, per case:
 *   - kill:   the victim gets SIGKILL and is reaped at once. Every survivor's
 *             call in flight returns GCL_ERR_TRANSPORT with a message naming
 *             "lost rank V" within LOST_BOUND_S of the kill, even with no
 *             timeout (0), and its next call on the communicator returns the
 *             same at once;
 *   - zombie: the same, but the victim is not reaped until the end (its pid
 *             still exists, a zombie);
 *   - nb:     the same with three non-blocking calls in flight per
 *             iteration: after the first that fails, every later one fails
 *             the same way (on one host: with hosts, a later call may have
 *             got all it needed before the loss);
 *   - stop:   the victim gets SIGSTOP: it is not lost, the survivors time
 *             out (GCL_ERR_TIMED_OUT, no sooner than the timeout);
 *   - left:   (3+ ranks) the victim does its part of a reduce to rank 0 and
 *             exits while rank 1 comes 1 s late: rank 0 waits for rank 1 and
 *             gets the right result, not an error (a member that finished its
 *             part is not lost for that op).
 * With GCL_TOPO_PPN=k (pretended hosts of k ranks: the hierarchical path)
 * a loss on one host reaches the other hosts through the lost-rank notices
 * (transport/lost.h), and a leader that stops over it tells its host's
 * members (gcl_shm_abandon): the same bounds hold.
 * Prints "gcl_lost: ok (N ranks)" when every case passed. */
#include <gcl/gcl.h>

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXN 16
#define LOST_BOUND_S 2.0 /* kill -> every survivor's error */
#define LATER_BOUND_S 0.5 /* a call after the loss */
#define MSG 400

enum { C_ALLREDUCE, C_ALLGATHER, C_BROADCAST, C_BARRIER, C_REDUCE_SCATTER, C_NB, C_REDUCE };
enum { A_KILL, A_ZOMBIE, A_STOP, A_LEFT };

typedef struct {
    const char *name;
    int coll;
    size_t count; /* floats */
    int victim;   /* -1: the last rank */
    int action;
    double timeout;
} case_t;

typedef struct {
    _Atomic int ready, done;
    int iters;
    int st;            /* the first error (or GCL_OK: A_LEFT) */
    double t_err;      /* when it was returned (CLOCK_MONOTONIC) */
    double call_s;     /* how long that call took */
    char msg[MSG];
    int st_later;      /* a barrier after it */
    double later_s;
    char msg_later[MSG];
    int nreq, st_req[3]; /* C_NB: the statuses of the failing iteration */
    char msg_req[3][MSG];
    double value;      /* A_LEFT: rank 0's reduce result */
} res_t;

typedef struct {
    double t_kill;
    res_t r[MAXN];
} shared_t;

static const char *dir;
static int R, N, rounds;
static shared_t *sh;
static int fails;
static int hosts; /* GCL_TOPO_PPN set: several pretended hosts */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* gcl_oob_t's allgather through files dir/r<round>_<rank> */
static int file_allgather(const void *send, void *recv, size_t len, void *arg)
{
    (void)arg;
    int k = rounds++;
    char p[512], t[512];
    snprintf(t, sizeof(t), "%s/r%d_%d.tmp", dir, k, R);
    snprintf(p, sizeof(p), "%s/r%d_%d", dir, k, R);
    FILE *f = fopen(t, "wb");
    if (f == NULL || fwrite(send, 1, len, f) != len || fclose(f) != 0 || rename(t, p) != 0)
        return -1;
    for (int q = 0; q < N; q++) {
        snprintf(p, sizeof(p), "%s/r%d_%d", dir, k, q);
        FILE *g;
        for (int tries = 0; (g = fopen(p, "rb")) == NULL; tries++) {
            if (tries > 30000)
                return -2;
            usleep(1000);
        }
        size_t got = fread((char *)recv + (size_t)q * len, 1, len, g);
        fclose(g);
        if (got != len)
            return -3;
    }
    return 0;
}

static void keep(char *dst, const char *src)
{
    snprintf(dst, MSG, "%s", src);
}

static gcl_status_t one_call(const case_t *c, gcl_comm_t *w, float *a, float *b, res_t *me, int victim)
{
    size_t n = c->count;
    switch (c->coll) {
    case C_ALLREDUCE: return gcl_allreduce(a, b, n, GCL_FLOAT32, GCL_SUM, w);
    case C_ALLGATHER: return gcl_allgather(a, b, n, GCL_FLOAT32, w);
    case C_BROADCAST: return gcl_broadcast(a, n, GCL_FLOAT32, victim, w);
    case C_BARRIER: return gcl_barrier(w);
    case C_REDUCE_SCATTER: return gcl_reduce_scatter(a, b, n, GCL_FLOAT32, GCL_SUM, w);
    default: break;
    }
    /* C_NB: three in flight, waited for in order */
    gcl_request_t *q[3] = {NULL, NULL, NULL};
    gcl_status_t st[3];
    st[0] = gcl_iallreduce(a, b, n, GCL_FLOAT32, GCL_SUM, w, &q[0]);
    st[1] = gcl_iallgather(a, b + n, 1024, GCL_FLOAT32, w, &q[1]);
    st[2] = gcl_ibarrier(w, &q[2]);
    gcl_status_t first = GCL_OK;
    for (int i = 0; i < 3; i++) {
        if (st[i] == GCL_OK)
            st[i] = gcl_wait(&q[i]);
        if (st[i] != GCL_OK && first == GCL_OK)
            first = st[i];
        me->st_req[i] = st[i];
        keep(me->msg_req[i], st[i] == GCL_OK ? "" : gcl_last_error());
    }
    me->nreq = 3;
    return first;
}

static int child(const case_t *c, int victim)
{
    res_t *me = &sh->r[R];
    gcl_oob_t o = {.allgather = file_allgather, .rank = R, .size = N};
    gcl_init_params_t pr = {.field_mask = GCL_INIT_FIELD_TIMEOUT, .timeout_s = c->timeout};
    gcl_comm_t *w;
    gcl_status_t st = gcl_init_oob(&o, &pr, &w);
    if (st != GCL_OK) {
        fprintf(stderr, "gcl_lost: rank %d: gcl_init_oob: %s\n", R, gcl_last_error());
        return 2;
    }
    size_t n = c->count < 1024 ? 1024 : c->count;
    float *a = malloc(n * (size_t)N * 4 * 2), *b = malloc(n * (size_t)N * 4 * 2);
    if (a == NULL || b == NULL)
        return 2;
    for (size_t i = 0; i < n * (size_t)N * 2; i++)
        a[i] = 1;
    if (c->action == A_LEFT) {
        /* one reduce to rank 0: the victim leaves right after its part,
         * rank 1 comes late; rank 0 must still get the sum */
        a[0] = (float)(R + 1);
        atomic_store(&me->ready, 1);
        if (R == 1)
            usleep(1000000);
        double t0 = now();
        st = gcl_reduce(a, b, 1, GCL_FLOAT32, GCL_SUM, 0, w);
        me->call_s = now() - t0;
        me->st = st;
        me->value = R == 0 && st == GCL_OK ? b[0] : 0;
        keep(me->msg, st == GCL_OK ? "" : gcl_last_error());
        if (R == victim) {
            gcl_finalize(w);
            _exit(0);
        }
    } else {
        double t0 = 0;
        for (me->iters = 0; me->iters < 100000000; me->iters++) {
            t0 = now();
            st = one_call(c, w, a, b, me, victim);
            if (me->iters == 0)
                atomic_store(&me->ready, 1);
            if (st != GCL_OK)
                break;
        }
        me->t_err = now();
        me->call_s = me->t_err - t0;
        me->st = st;
        keep(me->msg, gcl_last_error());
        for (int i = me->nreq - 1; i >= 0; i--) /* C_NB: the first that failed */
            if (me->st_req[i] != GCL_OK)
                keep(me->msg, me->msg_req[i]);
        t0 = now();
        me->st_later = gcl_barrier(w);
        me->later_s = now() - t0;
        keep(me->msg_later, gcl_last_error());
    }
    atomic_store(&me->done, 1);
    gcl_finalize(w);
    free(a);
    free(b);
    return 0;
}

static void failf(const case_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failf(const case_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL: %d ranks, %s: ", N, c->name);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fails++;
}

/* msg names the victim as the communicator's rank v */
static int names(const char *msg, int v)
{
    char want[32];
    snprintf(want, sizeof(want), "lost rank %d ", v);
    return strstr(msg, want) != NULL;
}

static void check(const case_t *c, int v)
{
    for (int r = 0; r < N; r++) {
        res_t *x = &sh->r[r];
        if (r == v)
            continue;
        if (!atomic_load(&x->done)) {
            failf(c, "rank %d did not finish", r);
            continue;
        }
        if (c->action == A_LEFT) {
            if (x->st != GCL_OK)
                failf(c, "rank %d: %s: %s", r, gcl_status_string(x->st), x->msg);
            if (r == 0 && x->value != (float)(N * (N + 1) / 2))
                failf(c, "rank 0: reduce gave %g, want %d", x->value, N * (N + 1) / 2);
            continue;
        }
        if (c->action == A_STOP) {
            if (x->st != GCL_ERR_TIMED_OUT)
                failf(c, "rank %d: %s, want a timeout: %s", r, gcl_status_string(x->st), x->msg);
            else if (x->call_s < 0.9 * c->timeout || x->call_s > c->timeout + 5)
                failf(c, "rank %d: timed out after %.2f s (timeout %.2f s)", r, x->call_s, c->timeout);
            continue;
        }
        double after = x->t_err - sh->t_kill;
        if (x->st != GCL_ERR_TRANSPORT || !names(x->msg, v))
            failf(c, "rank %d: %s (iteration %d), want a transport error naming rank %d: %s", r,
                  gcl_status_string(x->st), x->iters, v, x->msg);
        else if (after > LOST_BOUND_S)
            failf(c, "rank %d: the loss reported %.2f s after the kill (bound %.1f s)", r, after,
                  LOST_BOUND_S);
        if (x->st_later != GCL_ERR_TRANSPORT || !names(x->msg_later, v))
            failf(c, "rank %d: the call after the loss: %s, want a transport error naming rank %d: %s",
                  r, gcl_status_string(x->st_later), v, x->msg_later);
        else if (x->later_s > LATER_BOUND_S)
            failf(c, "rank %d: the call after the loss took %.2f s", r, x->later_s);
        if (c->coll == C_NB && !hosts) {
            int seen = 0;
            for (int i = 0; i < x->nreq; i++) {
                if (x->st_req[i] != GCL_OK)
                    seen = 1;
                if (seen && (x->st_req[i] != GCL_ERR_TRANSPORT || !names(x->msg_req[i], v)))
                    failf(c, "rank %d: request %d of the failing iteration: %s: %s", r, i,
                          gcl_status_string(x->st_req[i]), x->msg_req[i]);
            }
        }
        if (r == (v == 0 ? 1 : 0)) {
            printf("  %s: rank %d: %s after %.2f s (%.2f s after the kill): %s\n", c->name, r,
                   gcl_status_string(x->st), x->call_s, after, x->msg);
            for (int i = 0; i < x->nreq; i++)
                printf("    request %d: %s\n", i, gcl_status_string(x->st_req[i]));
        }
    }
}

static void run_case(const case_t *c)
{
    char tmpl[] = "/tmp/gcl_lost.XXXXXX";
    int v = c->victim < 0 ? N - 1 : c->victim;
    if ((dir = mkdtemp(tmpl)) == NULL) {
        failf(c, "mkdtemp: %s", strerror(errno));
        return;
    }
    memset(sh, 0, sizeof(*sh));
    pid_t pid[MAXN];
    fflush(stdout);
    for (int r = 0; r < N; r++) {
        pid[r] = fork();
        if (pid[r] == 0) {
            R = r;
            _exit(child(c, v));
        }
    }
    int reaped[MAXN] = {0}, gone = 0;
    double t0 = now();
    for (int r = 0; r < N; r++)
        while (!atomic_load(&sh->r[r].ready) && now() - t0 < 60 && !gone) {
            int status;
            pid_t p = waitpid(-1, &status, WNOHANG);
            for (int q = 0; p > 0 && q < N; q++)
                if (pid[q] == p) { /* none leaves before it is ready */
                    reaped[q] = 1;
                    gone |= !atomic_load(&sh->r[q].ready);
                }
            usleep(1000);
        }
    if (gone || now() - t0 >= 60) {
        failf(c, "the ranks did not start");
    } else if (c->action != A_LEFT) {
        usleep(300000);
        sh->t_kill = now();
        kill(pid[v], c->action == A_STOP ? SIGSTOP : SIGKILL);
        if (c->action == A_KILL) {
            waitpid(pid[v], NULL, 0);
            reaped[v] = 1;
        }
    }
    /* the survivors; a hang is a failure, not a hung test */
    double bound = (c->action == A_STOP ? c->timeout : 0) + (c->action == A_LEFT ? 10 : 0) + 20;
    t0 = now();
    for (int r = 0; r < N; r++)
        while (r != v && !reaped[r] && !atomic_load(&sh->r[r].done) && now() - t0 < bound)
            usleep(2000);
    for (int r = 0; r < N; r++)
        if (!reaped[r]) {
            if (r == v || !atomic_load(&sh->r[r].done))
                kill(pid[r], SIGKILL);
            waitpid(pid[r], NULL, 0);
        }
    check(c, v);
    char p[512];
    for (int k = 0; k < 8; k++)
        for (int r = 0; r < N; r++) {
            snprintf(p, sizeof(p), "%s/r%d_%d", dir, k, r);
            unlink(p);
        }
    rmdir(dir);
}

int main(int argc, char **argv)
{
    N = 3;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "-n"))
            N = atoi(argv[++i]);
    if (N < 2 || N > MAXN) {
        fprintf(stderr, "gcl_lost: -n 2..%d\n", MAXN);
        return 2;
    }
    unsetenv("GCL_NO_SHM"); /* the shared-memory path is the point */
    const char *ppn = getenv("GCL_TOPO_PPN");
    hosts = ppn && atoi(ppn) > 0 && atoi(ppn) < N;
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return 2;
    const case_t cases[] = {
        {"kill: allreduce 4 MiB, no timeout", C_ALLREDUCE, 1 << 20, -1, A_KILL, 0},
        {"kill: allreduce 16 B (inline), rank 0, no timeout", C_ALLREDUCE, 4, 0, A_KILL, 0},
        {"zombie: broadcast 1 MiB from the victim, rank 1, no timeout", C_BROADCAST, 1 << 18, 1, A_ZOMBIE, 0},
        {"zombie: barrier, no timeout", C_BARRIER, 0, -1, A_ZOMBIE, 0},
        {"kill: allgather 1 MiB, rank 0, timeout 30 s", C_ALLGATHER, 1 << 18, 0, A_KILL, 30},
        {"kill: reduce_scatter 1 MiB, no timeout", C_REDUCE_SCATTER, 1 << 18, -1, A_KILL, 0},
        {"kill: iallreduce 4 MiB + iallgather + ibarrier in flight, rank 0, no timeout", C_NB, 1 << 20, 0,
         A_KILL, 0},
        {"stop: allreduce 4 MiB, timeout 1.5 s", C_ALLREDUCE, 1 << 20, -1, A_STOP, 1.5},
        {"left: the victim finished its part of a reduce and exited", C_REDUCE, 1, -1, A_LEFT, 10},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (cases[i].action == A_LEFT && N < 3)
            continue;
        int before = fails;
        run_case(&cases[i]);
        if (fails == before)
            printf("ok: %d ranks: %s\n", N, cases[i].name);
    }
    if (fails == 0)
        printf("gcl_lost: ok (%d ranks%s)\n", N, hosts ? ", pretended hosts" : "");
    return fails != 0;
}
