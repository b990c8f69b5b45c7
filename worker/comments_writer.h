/*
 * comments_writer.h - the LMDB backend's writer thread (comments_writer.c):
 * one per worker, the only one that begins write transactions on the
 * worker's comments store, so that waiting for LMDB's writer lock (which
 * another process may hold as long as it likes: a worker stopped in the
 * middle of its commit) never stops the worker's loop.  The loop hands it
 * jobs (a batch of posts, a delete, a reopen) and takes them back, done or
 * given up on, when the eventfd it watches says so.  The thread publishes
 * in the worker's stats slot whether it waits for the lock or holds it,
 * for the master's watchdog.  Called by comments_lmdb.c only; calls
 * shm/comments.c.
 */
#ifndef FOLIO_COMMENTS_WRITER_H
#define FOLIO_COMMENTS_WRITER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct folio_buf;
struct folio_comment_in;
struct folio_comments;
struct folio_worker_slot;
struct folio_writer;

enum folio_wjob_kind {
    FOLIO_WJ_POSTS = 0, /* folio_comments_post_batch of in[0..n) */
    FOLIO_WJ_DELETE,    /* folio_comments_delete of id */
    FOLIO_WJ_MAINT      /* folio_comments_maintain: reopen, adopt */
};

enum folio_wjob_state {
    FOLIO_WJ_QUEUED = 0, /* handed over, not started */
    FOLIO_WJ_WAITING,    /* waiting for LMDB's writer lock */
    FOLIO_WJ_WRITING,    /* holding it: it will be done, whatever comes */
    FOLIO_WJ_CANCELLED   /* given up on by the loop: nothing written */
};

/*
 * A job: the loop's, lent to the thread from folio_writer_submit until
 * folio_writer_done gives it back (its memory untouched by the loop
 * meanwhile, the results it will write included).
 */
struct folio_wjob {
    struct folio_wjob *next;
    int kind;             /* enum folio_wjob_kind */
    _Atomic int state;    /* enum folio_wjob_state */
    uint64_t deadline_ms; /* the loop gives up then (monotonic) */
    /* what to do */
    const struct folio_comment_in *in;
    size_t n;
    uint64_t id;
    /* what it did: folio_comments_post_batch's or _delete's */
    struct folio_buf *results;
    size_t *ends;
    int *codes;
    int rc;
    char err[256];
};

/*
 * folio_writer_start - start the thread on store cs (opened threaded; the
 * thread sets its hooks), publishing its state in `slot` (NULL: not).
 * Returns 0 with *out and *fd (an eventfd, readable when jobs are done:
 * folio_writer_done), or a FOLIO_E*.
 */
int folio_writer_start(struct folio_comments *cs,
                       struct folio_worker_slot *slot,
                       struct folio_writer **out, int *fd);

/* folio_writer_submit - hand job j over (QUEUED), last in line. */
void folio_writer_submit(struct folio_writer *wr, struct folio_wjob *j);

/*
 * folio_writer_done - the jobs the thread has given back since the last
 * call, in the order it did them (a list through ->next); clears the
 * eventfd.  A job given back CANCELLED wrote nothing.
 */
struct folio_wjob *folio_writer_done(struct folio_writer *wr);

/*
 * folio_writer_cancel - give up on job j (its deadline passed): a queued
 * one is taken back at once (returns 1: it is the caller's again), one
 * waiting for the lock is marked so that it writes nothing once it has
 * it (returns 2: it comes back through folio_writer_done), one already
 * writing cannot be (returns 0: wait for it).
 */
int folio_writer_cancel(struct folio_writer *wr, struct folio_wjob *j);

/*
 * folio_writer_waiting_since - when the job in progress started waiting for
 * the lock, if it still does (monotonic ms); 0 otherwise.
 */
uint64_t folio_writer_waiting_since(struct folio_writer *wr);

/*
 * folio_writer_stop - let the thread end once its queue is done, and
 * wait for it (30 s at most while it writes; a moment once it waits for
 * LMDB's lock): 0 when it ended (wr is freed), -1 when it is stuck
 * waiting for the lock (left to the process's exit, with what it uses:
 * the store must then not be closed).
 */
int folio_writer_stop(struct folio_writer *wr);

#endif
