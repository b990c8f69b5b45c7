/*
 * comments_writer.c - the LMDB backend's writer thread (see
 * comments_writer.h).  LMDB serializes its writers with a mutex in the
 * lock file, shared by every process of the store: a write transaction
 * begins by taking it (mdb_txn_begin), and a process stopped while it
 * holds it (SIGSTOP, a debugger, a disk that does not answer its fsync)
 * keeps every other writer waiting there.  A worker that began its
 * transactions in its loop froze whole, pings included, until the
 * watchdog killed it for a stall that was not its own.  Here that wait is
 * this thread's: the loop goes on serving, gives up on a job past its
 * deadline (comments_timeout: the posts are answered 14, nothing stored)
 * and the thread, once it has the lock, writes nothing for a job given up
 * on.
 *
 * LMDB's rules for the threads (lmdb.h): a write transaction is used by
 * the thread that began it (this one); the loop's read transaction may
 * run meanwhile (the environment is opened MDB_NOTLS); remaps and
 * reopens happen only in this thread, between its transactions, under
 * the store's lock that the reads take (shm/comments.c).  The thread
 * allocates (LMDB's dirty pages): it counts into its own block of
 * src/alloc.c, not the worker's slot, whose counters the loop writes.
 *
 * Called by comments_lmdb.c; calls shm/comments.c.
 */
#include "config.h"

#include <sys/eventfd.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shm/comments.h"
#include "shm/stats.h"
#include "src/alloc.h"
#include "src/buf.h"
#include "src/clock.h"
#include "src/err.h"
#include "src/log.h"
#include "worker/comments_writer.h"

#define STOP_WAIT_MS 200       /* at exit: a wait for the thread, in steps */
#define STOP_WAIT_MAX_MS 30000 /* and in all, while it is not stuck */
#define SLOW_HOLD_MS 1000 /* a write that held the lock this long: logged */

struct folio_writer {
    struct folio_comments *cs;
    struct folio_worker_slot *slot; /* NULL: nothing published */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct folio_wjob *todo, *todo_tail; /* under mu */
    struct folio_wjob *done, *done_tail; /* under mu */
    struct folio_wjob *cur;              /* the thread's job; under mu */
    _Atomic uint64_t waiting_since;      /* cur waits for the lock since */
    uint64_t holding_since;              /* the thread's: 0, or since */
    int quit;                            /* under mu */
    int efd;
};

/* ---- the thread's side ---------------------------------------------- */

/* The slot's view of the lock: waiting, holding, or neither, since now. */
static void
publish(struct folio_writer *wr, int waiting, int holding)
{
    if (wr->slot == NULL)
        return;
    folio_stat_set(&wr->slot->ws_writer_since_ms, folio_mono_ms());
    folio_stat_set(&wr->slot->ws_comments_writer_waiting, (uint64_t)waiting);
    folio_stat_set(&wr->slot->ws_comments_writer_holding, (uint64_t)holding);
}

static void
hook_waiting(void *arg)
{
    struct folio_writer *wr = arg;

    atomic_store(&wr->waiting_since, folio_mono_ms());
    publish(wr, 1, 0);
}

/* The lock is ours: write, unless the loop gave the job up meanwhile. */
static int
hook_holding(void *arg)
{
    struct folio_writer *wr = arg;
    struct folio_wjob *j = wr->cur;
    int st = FOLIO_WJ_WAITING;

    atomic_store(&wr->waiting_since, 0);
    if (j != NULL &&
        !atomic_compare_exchange_strong(&j->state, &st, FOLIO_WJ_WRITING) &&
        st == FOLIO_WJ_CANCELLED)
        return 1; /* given up on: nothing is written */
    wr->holding_since = folio_mono_ms();
    publish(wr, 0, 1);
    return 0;
}

/*
 * The lock is given back.  A write that held it long (its commit's sync,
 * on a disk that answers slowly) kept this worker's other posts waiting,
 * and every other worker's: said in the log, so that posts answered 14
 * "the writer is busy" can be told from a lock held elsewhere.
 */
static void
hook_released(void *arg)
{
    struct folio_writer *wr = arg;
    uint64_t held = 0;

    if (wr->holding_since != 0)
        held = folio_mono_ms() - wr->holding_since;
    wr->holding_since = 0;
    atomic_store(&wr->waiting_since, 0);
    publish(wr, 0, 0);
    if (held >= SLOW_HOLD_MS)
        folio_log_notice("comments: a write held the store's writer lock "
                         "for %.1f s (its commit's sync: a slow disk)",
                         held / 1e3);
}

/* Do job j (the thread's, in cur). */
static void
run(struct folio_writer *wr, struct folio_wjob *j)
{
    int st = FOLIO_WJ_QUEUED;

    j->err[0] = '\0';
    if (!atomic_compare_exchange_strong(&j->state, &st, FOLIO_WJ_WAITING)) {
        j->rc = FOLIO_ECANCELED; /* given up on before it started */
        return;
    }
    switch (j->kind) {
    case FOLIO_WJ_POSTS:
        j->rc = folio_comments_post_batch(wr->cs, j->in, j->n, j->results,
                                          j->ends, j->codes, NULL, j->err,
                                          sizeof(j->err));
        if (j->rc == FOLIO_EFULL && j->n > 1 &&
            atomic_load(&j->state) == FOLIO_WJ_WRITING) {
            size_t i;

            /* Not all fit: one by one, so that the ones that fit get in. */
            folio_buf_reset(j->results);
            for (i = 0; i < j->n; i++) {
                j->codes[i] =
                    folio_comments_post(wr->cs, &j->in[i], j->results, NULL,
                                        j->err, sizeof(j->err));
                j->ends[i] = folio_buf_mark(j->results);
            }
            j->rc = 0;
        }
        break;
    case FOLIO_WJ_DELETE:
        j->rc = folio_comments_delete(wr->cs, j->id, j->err, sizeof(j->err));
        break;
    default:
        atomic_store(&j->state, FOLIO_WJ_WRITING);
        j->rc = folio_comments_maintain(wr->cs, j->err, sizeof(j->err));
    }
}

static void *
thread_main(void *arg)
{
    struct folio_writer *wr = arg;
    struct folio_wjob *j;
    uint64_t one = 1;

    for (;;) {
        pthread_mutex_lock(&wr->mu);
        while (wr->todo == NULL && !wr->quit)
            pthread_cond_wait(&wr->cv, &wr->mu);
        if ((j = wr->todo) == NULL) {
            pthread_mutex_unlock(&wr->mu);
            break; /* quit, with nothing left to do */
        }
        if ((wr->todo = j->next) == NULL)
            wr->todo_tail = NULL;
        j->next = NULL;
        wr->cur = j;
        pthread_mutex_unlock(&wr->mu);
        run(wr, j);
        pthread_mutex_lock(&wr->mu);
        wr->cur = NULL;
        if (wr->done_tail != NULL)
            wr->done_tail->next = j;
        else
            wr->done = j;
        wr->done_tail = j;
        pthread_mutex_unlock(&wr->mu);
        while (write(wr->efd, &one, sizeof(one)) == -1 && errno == EINTR)
            ;
    }
    return NULL;
}

/* ---- the loop's side ------------------------------------------------ */

static void
writer_free(struct folio_writer *wr)
{
    if (wr->efd >= 0)
        close(wr->efd);
    pthread_cond_destroy(&wr->cv);
    pthread_mutex_destroy(&wr->mu);
    folio_free(wr);
}

int
folio_writer_start(struct folio_comments *cs, struct folio_worker_slot *slot,
                   struct folio_writer **out, int *fd)
{
    struct folio_comments_hooks h;
    struct folio_writer *wr;
    sigset_t all, old;
    int rc;

    *out = NULL;
    if ((wr = folio_calloc(1, sizeof(*wr))) == NULL)
        return FOLIO_ENOMEM;
    wr->cs = cs;
    wr->slot = slot;
    wr->efd = -1;
    if (pthread_mutex_init(&wr->mu, NULL) != 0) {
        folio_free(wr);
        return FOLIO_ESYS;
    }
    if (pthread_cond_init(&wr->cv, NULL) != 0) {
        pthread_mutex_destroy(&wr->mu);
        folio_free(wr);
        return FOLIO_ESYS;
    }
    if ((wr->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1) {
        folio_log_error("comments: eventfd for the writer thread");
        writer_free(wr);
        return FOLIO_ESYS;
    }
    h.waiting = hook_waiting;
    h.holding = hook_holding;
    h.released = hook_released;
    h.arg = wr;
    folio_comments_set_hooks(cs, &h);
    publish(wr, 0, 0);
    /* Signals are the loop's (libevent's): none for this thread. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&wr->th, NULL, thread_main, wr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        folio_log_errorx("comments: cannot start the writer thread: %s",
                         strerror(rc));
        folio_comments_set_hooks(cs, NULL);
        writer_free(wr);
        return FOLIO_ESYS;
    }
    *fd = wr->efd;
    *out = wr;
    return 0;
}

void
folio_writer_submit(struct folio_writer *wr, struct folio_wjob *j)
{
    atomic_store(&j->state, FOLIO_WJ_QUEUED);
    j->next = NULL;
    pthread_mutex_lock(&wr->mu);
    if (wr->todo_tail != NULL)
        wr->todo_tail->next = j;
    else
        wr->todo = j;
    wr->todo_tail = j;
    pthread_cond_signal(&wr->cv);
    pthread_mutex_unlock(&wr->mu);
}

struct folio_wjob *
folio_writer_done(struct folio_writer *wr)
{
    struct folio_wjob *j;
    uint64_t n;

    while (read(wr->efd, &n, sizeof(n)) == -1 && errno == EINTR)
        ;
    pthread_mutex_lock(&wr->mu);
    j = wr->done;
    wr->done = wr->done_tail = NULL;
    pthread_mutex_unlock(&wr->mu);
    return j;
}

int
folio_writer_cancel(struct folio_writer *wr, struct folio_wjob *j)
{
    struct folio_wjob **pp;
    int st = FOLIO_WJ_WAITING, r = 0;

    pthread_mutex_lock(&wr->mu);
    for (pp = &wr->todo; *pp != NULL; pp = &(*pp)->next)
        if (*pp == j)
            break;
    if (*pp == j) {
        /* Not started: the loop's again. */
        *pp = j->next;
        if (wr->todo_tail == j) {
            struct folio_wjob *t = wr->todo;

            while (t != NULL && t->next != NULL)
                t = t->next;
            wr->todo_tail = t;
        }
        j->next = NULL;
        atomic_store(&j->state, FOLIO_WJ_CANCELLED);
        r = 1;
    } else if (wr->cur == j &&
               atomic_compare_exchange_strong(&j->state, &st,
                                              FOLIO_WJ_CANCELLED)) {
        r = 2; /* it writes nothing once it has the lock */
    }
    pthread_mutex_unlock(&wr->mu);
    return r;
}

uint64_t
folio_writer_waiting_since(struct folio_writer *wr)
{
    return atomic_load(&wr->waiting_since);
}

int
folio_writer_stop(struct folio_writer *wr)
{
    struct timespec until;
    int waited = 0, rc;

    if (wr == NULL)
        return 0;
    pthread_mutex_lock(&wr->mu);
    wr->quit = 1;
    pthread_cond_signal(&wr->cv);
    pthread_mutex_unlock(&wr->mu);
    /*
     * The job in progress is finished (a write, a commit: it ends, however
     * slow the machine); one that waits for the lock is given a moment.
     */
    do {
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += (long)STOP_WAIT_MS * 1000000;
        until.tv_sec += until.tv_nsec / 1000000000;
        until.tv_nsec %= 1000000000;
        rc = pthread_timedjoin_np(wr->th, NULL, &until);
        waited += STOP_WAIT_MS;
    } while (rc != 0 && folio_writer_waiting_since(wr) == 0 &&
             waited < STOP_WAIT_MAX_MS);
    if (rc != 0) {
        folio_log_notice("comments: the writer thread still waits for the "
                         "store's writer lock: left to the exit");
        return -1;
    }
    folio_comments_set_hooks(wr->cs, NULL);
    writer_free(wr);
    return 0;
}
