/* The watchdog of the MPI collectives a pipelined run still makes: one
 * detached thread that ends the process past a deadline (fault.h). */
#include "pipeline/fault.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int started, armed;
static struct timespec deadline;
static char line[512];

static void *watch(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (!armed)
            pthread_cond_wait(&cv, &mu);
        int rc = pthread_cond_timedwait(&cv, &mu, &deadline);
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        int past = now.tv_sec > deadline.tv_sec ||
                   (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec);
        if (rc == ETIMEDOUT && armed && past) { /* not re-armed meanwhile */
            size_t n = strlen(line);
            if (write(STDERR_FILENO, line, n) < 0) { /* nothing more to do */
            }
            _exit(3);
        }
    }
    return NULL;
}

void ipu_watchdog_arm(double seconds, int rank, const char *what)
{
    pthread_mutex_lock(&mu);
    if (!started) {
        pthread_t th;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        started = pthread_create(&th, &a, watch, NULL) == 0;
        pthread_attr_destroy(&a);
    }
    snprintf(line, sizeof line, "ipu-exec (rank %d): %s did not finish within %g s: a rank died "
             "or hangs (see the other ranks' messages)\n", rank, what, seconds);
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += (time_t)seconds;
    deadline.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    armed = started && seconds > 0;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

void ipu_watchdog_disarm(void)
{
    pthread_mutex_lock(&mu);
    armed = 0;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}
