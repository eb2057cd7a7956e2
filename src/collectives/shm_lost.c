/* libgcl's shared-memory loss detection: a member whose process is gone
 * mid-collective (shm.h, gcl_shm_lost). */
#include "collectives/shm_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* -------------------------------------------------------- lost members */

/* A member killed mid-collective never publishes again, and the others
 * would wait for it until their timeout (for ever without one). So a member
 * whose head op has made no progress for LOST_IDLE_S looks at the others'
 * processes, again every LOST_RECHECK_S while that lasts. A member whose
 * process is gone (kill(pid, 0) says ESRCH, or /proc says it is a zombie or
 * its pid is now another process's) and whose counters show it had not
 * done its part of the op is lost: the finder writes it into the header,
 * so that every member waiting (perhaps on the finder, which stops) takes
 * it at its next look, and every op of the segment, pending or later,
 * fails with GCL_ERR_TRANSPORT naming it. A member that finished its part
 * before it exited is not lost for this op (a broadcast's root, a reduce's
 * other members may leave first). A member stopped (SIGSTOP), slow or
 * descheduled is alive: its peers wait until their timeout. Members whose
 * pid means nothing here (another pid namespace, or either side could not
 * tell its namespace) are never looked at: they end in the timeout, as
 * before. Nothing of this runs while data moves: a poll that finds nothing
 * ready counts, and every LOST_POLLS-th reads the clock. */

/* Fields 1 (pid), 3 (state) and 22 (start time) of a /proc/<pid>/stat; 0 ok. */
static int read_stat(const char *path, long *pid, char *state, uint64_t *start)
{
    char b[1024];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, b, sizeof(b) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    b[n] = 0;
    char *e, *p = strrchr(b, ')'); /* the end of field 2, (comm) */
    *pid = strtol(b, &e, 10);
    if (p == NULL || e == b || p[1] != ' ' || p[2] == 0)
        return -1;
    p += 2;
    *state = *p;
    for (int f = 3; f < 22; f++)
        if ((p = strchr(p, ' ')) == NULL)
            return -1;
        else
            p++;
    unsigned long long v = strtoull(p, &e, 10);
    if (e == p)
        return -1;
    *start = v;
    return 0;
}

/* Write who this member is into its red line (at open). */
void shm_publish_identity(gcl_shm_t *s)
{
    red_line_t *me = red_line(s, s->rank);
    long pid = (long)getpid(), spid = 0;
    char state;
    uint64_t start = 0;
    struct stat ns;
    me->start = 0;
    me->ns_dev = me->ns_ino = 0;
    /* /proc shows this process under its own pid: /proc is of this pid
     * namespace, and its entries and the namespace link can be trusted */
    if (read_stat("/proc/self/stat", &spid, &state, &start) == 0 && spid == pid &&
        stat("/proc/self/ns/pid", &ns) == 0 && ns.st_ino != 0) {
        me->start = start;
        me->ns_dev = (uint64_t)ns.st_dev;
        me->ns_ino = (uint64_t)ns.st_ino;
    }
    atomic_store_explicit(&me->pid, (int32_t)pid, memory_order_release);
}

/* 1 if member j's process is gone; 0 if it lives, or cannot be told. */
static int peer_gone(const gcl_shm_t *s, int j)
{
    red_line_t *me = red_line(s, s->rank), *p = red_line(s, j);
    long pid = atomic_load_explicit(&p->pid, memory_order_acquire);
    /* its pid means something here only in this pid namespace */
    if (pid <= 0 || pid == (long)getpid() || me->ns_ino == 0 || p->ns_ino != me->ns_ino ||
        p->ns_dev != me->ns_dev)
        return 0;
    if (kill((pid_t)pid, 0) != 0)
        return errno == ESRCH; /* EPERM: it exists */
    /* it exists: not yet reaped, or its pid given to another process */
    char path[48], state;
    long spid;
    uint64_t start;
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    if (me->start == 0 || p->start == 0 || read_stat(path, &spid, &state, &start) != 0 ||
        spid != pid)
        return 0; /* (gone since, or hidden: kill says so next time) */
    return start != p->start || state == 'Z' || state == 'X';
}

/* Does op h still need something from member j (its counters are final
 * once its process is gone)? */
/* The first segment a broadcast reader j keeps its root from writing
 * (can_write's rule, from the counters as they are now). */
static uint64_t root_stop(const gcl_shm_t *s, int j)
{
    uint64_t in = atomic_load_explicit(&in_line(s, j)->in, memory_order_acquire);
    uint64_t rd = atomic_load_explicit(&in_line(s, j)->rd, memory_order_acquire);
    return in + 2 > rd + s->nbuf + 1 ? in + 2 : rd + s->nbuf + 1;
}

static int needs(const gcl_shm_t *s, const gcl_shm_op_t *h, int j)
{
    if (!h->checked && !shm_call_seen(h, j)) /* its call word ("call check") */
        return 1;
    uint64_t last = h->g0 + h->nseg - 1;
    uint64_t in = atomic_load_explicit(&in_line(s, j)->in, memory_order_acquire);
    if (h->kind == K_BROADCAST && s->rank != h->root) /* a reader: the root's data */
        return j == h->root && in < last;
    if (h->kind == K_BROADCAST) /* the root: a reader that may hold a buffer */
        return root_stop(s, j) <= last;
    if (in < last)
        return 1;
    int red = !h->oneshot &&
              (h->kind == K_ALLREDUCE || (h->kind == K_REDUCE && s->rank == h->root));
    return red && atomic_load_explicit(red_ctr(s, j), memory_order_acquire) < last;
}

/* The head op h found nothing to do, again: 1 when a member is now known
 * lost (s->broken = 2), else 0. */
__attribute__((noinline)) int shm_lost_check(gcl_shm_t *s, const gcl_shm_op_t *h)
{
    uint64_t mark[5] = {h->g0, h->k_in, h->k_red, h->k_out, (uint64_t)h->sub};
    double now = gcl_now();
    if (memcmp(mark, s->idle_mark, sizeof(mark)) != 0) { /* it moved since */
        memcpy(s->idle_mark, mark, sizeof(mark));
        s->idle_next = now + LOST_IDLE_S;
        return 0;
    }
    if (now < s->idle_next)
        return 0;
    s->idle_next = now + LOST_RECHECK_S;
    header_t *hd = (header_t *)(void *)s->base;
    int gave_up = atomic_load_explicit(&hd->gave_up, memory_order_acquire) - 1;
    if (gave_up >= 0 && gave_up < s->size && gave_up != s->rank) {
        s->broken = 3;
        s->lost_rank = gave_up;
        s->lost_pid = atomic_load_explicit(&red_line(s, gave_up)->pid, memory_order_acquire);
        return 1;
    }
    int lost = atomic_load_explicit(&hd->lost, memory_order_acquire) - 1;
    for (int j = 0; lost < 0 && j < s->size; j++)
        /* (needs again once it is gone: it may have done its part just
         * before it exited) */
        if (j != s->rank && needs(s, h, j) && peer_gone(s, j) && needs(s, h, j)) {
            int32_t none = 0;
            lost = atomic_compare_exchange_strong(&hd->lost, &none, j + 1) ? j : none - 1;
        }
    if (lost < 0 || lost >= s->size)
        return 0;
    s->broken = 2;
    s->lost_rank = lost;
    s->lost_pid = atomic_load_explicit(&red_line(s, lost)->pid, memory_order_acquire);
    return 1;
}

int gcl_shm_lost(const gcl_shm_t *s, int *pid)
{
    if (s == NULL || (s->broken != 2 && s->broken != 3))
        return -1;
    if (pid)
        *pid = s->lost_pid;
    return s->lost_rank;
}

/* The member the head op waits for: of those it still needs something
 * from, the one furthest behind, or -1. Behind: the lowest in counter; for
 * a broadcast root, the lowest root_stop (readers raise rd, not in, while
 * they read). */
int gcl_shm_waited(const gcl_shm_t *s)
{
    const gcl_shm_op_t *h = s ? s->head : NULL;
    if (h == NULL || h->nseg == 0)
        return -1;
    int who = -1, root = h->kind == K_BROADCAST && s->rank == h->root;
    uint64_t low = UINT64_MAX;
    for (int j = 0; j < s->size; j++) {
        uint64_t v = root ? root_stop(s, j) : atomic_load_explicit(&in_line(s, j)->in, memory_order_acquire);
        if (j != s->rank && needs(s, h, j) && v < low) {
            low = v;
            who = j;
        }
    }
    return who;
}

/* The error of every op of a broken segment. */
gcl_status_t shm_broken_error(const gcl_shm_t *s, const char *what)
{
    if (s->broken == 2)
        return gcl_set_error(GCL_ERR_TRANSPORT, "gcl_shm_%s: lost rank %d of %d on this host (pid %d): its process is gone; "
                    "the job cannot continue", what, s->lost_rank, s->size, s->lost_pid);
    if (s->broken == 4)
        return gcl_set_error(GCL_ERR_MISMATCH, "gcl_shm_%s: %s", what, s->mismatch);
    if (s->broken == 3)
        return gcl_set_error(GCL_ERR_TRANSPORT, "gcl_shm_%s: rank %d of %d on this host gave up on the segment after an error "
                    "of its own (its message says which); the job cannot continue", what,
                    s->lost_rank, s->size);
    return gcl_set_error(GCL_ERR_TRANSPORT, "gcl_shm_%s: the shared-memory segment was abandoned after a cancelled operation",
                what);
}

