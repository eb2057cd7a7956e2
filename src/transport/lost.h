/* Lost-rank notices of a pipelined run (used through pipeline/fault.h) and
 * of a libgcl context (collectives/notice.c). When a rank loses a peer (the transport
 * reports it failed) it tells every other rank which rank was lost before
 * it stops. A rank that then loses the messenger (it stopped
 * answering, or the launcher ended it) names the rank that was lost first,
 * and a rank with no link to either hears of it without waiting for its own
 * timeout: every survivor's message names the same rank.
 *
 * Notices are 4-byte messages on one reserved tag (IPU_LOST_TAG, above the
 * pipeline's data and credit tags); a receive from every other rank is
 * posted at the start.
 *
 * Liveness: a rank that waits on a peer with nothing happening pings it
 * (ipu_lost_alive; 4 bytes on IPU_PING_TAG, answered on IPU_PONG_TAG by
 * ipu_lost_poll, which every waiting loop calls). A peer that does not
 * answer within IPU_LOST_PING_S is lost: this finds a dead rank on either
 * back end (MPI has no peer failure of its own) without waiting for the
 * --timeout that a rank that is alive but stuck still gets. The three
 * tags are the transport's reserved control tags (transport.h). */
#ifndef IPU_TRANSPORT_LOST_H
#define IPU_TRANSPORT_LOST_H

#include "transport/transport.h"

#define IPU_LOST_TAG IPU_TRANSPORT_TAG_MAX
#define IPU_PING_TAG (IPU_TRANSPORT_TAG_MAX - 1)
#define IPU_PONG_TAG (IPU_TRANSPORT_TAG_MAX - 2)
/* a ping unanswered this long: the peer is lost (seconds; ipu_lost_open's
 * ping_s where the caller gives one: the pipeline's ipu_fault_ping_s) */
#define IPU_LOST_PING_S 3.0
/* a peer that answered is not pinged again for this long (seconds) */
#define IPU_LOST_PING_EVERY_S 1.0
/* seconds a rank that tells of a loss stays reachable before it closes */
#define IPU_LOST_LINGER_S 0.5

typedef struct ipu_lost ipu_lost_t;

/* Post the receives (notices and pings from every peer); a ping unanswered
 * for ping_s seconds (0: IPU_LOST_PING_S) loses its peer. ping_s < 0:
 * notices only (no ping receives; ipu_lost_alive says 1: libgcl). Errors:
 * IPU_ERR_NO_MEMORY, the transport's. */
ipu_status_t ipu_lost_open(ipu_transport_t *t, double ping_s, ipu_lost_t **out);
/* A notice arrived (8 of the receives tested at most every 10 ms, in turn,
 * so a notice is seen within size / 8 x 10 ms; receives that fail with
 * their peer are dropped): returns IPU_ERR_TRANSPORT with "lost rank X on
 * host H (reported by rank F); the job cannot continue", else IPU_OK. */
ipu_status_t ipu_lost_poll(ipu_lost_t *l);
/* After the run failed with st: when a peer failed and a notice names the
 * rank lost before it, the message names that rank instead; then every
 * other rank not known failed is told, and this rank keeps progressing for
 * IPU_LOST_LINGER_S so that they read it. Returns st. */
ipu_status_t ipu_lost_tell(ipu_lost_t *l, ipu_status_t st);
/* The same for a loss the transport does not know of (a member found gone
 * on shared memory): tells every other rank that rank (or the rank a
 * notice named before) was lost, and lingers as ipu_lost_tell does. */
void ipu_lost_tell_of(ipu_lost_t *l, int rank);
/* Is peer alive? 1: it answered a ping within the last
 * IPU_LOST_PING_EVERY_S; 0: a ping is on its way (one is sent if none is);
 * -1: its transport failed or it left a ping unanswered for ping_s
 * (it is then the rank ipu_lost_tell names and tells of). Call it as often
 * as wanted while waiting on that peer; l NULL: 1. */
int ipu_lost_alive(ipu_lost_t *l, int peer);
/* Cancel what is left and free (accepts NULL). */
void ipu_lost_close(ipu_lost_t *l);

#endif
