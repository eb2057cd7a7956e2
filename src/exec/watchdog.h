/* A bound on the MPI collectives a pipelined run still makes (the
 * transport's bootstrap, the report gathered at the end, MPI_Finalize):
 * MPI 4.0 without ULFM has no way to leave a collective whose peer died or
 * stopped, so a thread ends this process if one does not return in time.
 * The agreements (exec/agree.h) name a lost rank; this only bounds the
 * short windows between them. */
#ifndef IPU_EXEC_WATCHDOG_H
#define IPU_EXEC_WATCHDOG_H

/* From now on, if ipu_watchdog_disarm is not called within seconds (> 0),
 * print "ipu-exec (rank RANK): WHAT did not finish within S s: a rank died
 * or hangs (see the other ranks' messages)" on stderr and _exit(3)
 * (IPU_ERR_TIMED_OUT's exit code). what is copied. Re-arming replaces the
 * previous bound. The first call starts the thread; if it cannot, nothing
 * is bounded. */
void ipu_watchdog_arm(double seconds, int rank, const char *what);
void ipu_watchdog_disarm(void);

#endif
