/*
 * profile.c - a worker's part of /debug/pprof/: the master asks for a
 * profile over the channel (FOLIO_CHAN_PROFILE), the worker takes it with
 * src/prof/prof.h (a CPU profile over the seconds asked, on its own timer; a
 * heap profile at once), writes it into a memfd and passes that back
 * (FOLIO_CHAN_PROFILE_DONE).  A worker that stops while a CPU profile runs
 * sends what it has, so a reload loses no samples.
 *
 * The profile holds addresses, not names: the master names them.  Taking
 * one is a copy of the sampler's tables into profile.proto (not gzipped:
 * the master reads it), well under a millisecond of the worker's loop;
 * the worker's symbol lookups (server.stats profile_symbol_lookups) stay
 * 0, which the tests check.
 *
 * Called from worker.c: folio_worker_profile_init after fork, _msg from
 * the channel handler, _fini on the way out.  The profiler's own
 * allocations (symbols, encoding) are counted apart from the requests':
 * allocs/req stays a property of the request paths.
 */
#include "config.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "src/alloc.h"
#include "src/buf.h"
#include "src/chan.h"
#include "src/clock.h"
#include "src/err.h"
#include "src/log.h"
#include "src/prof/pprof.h"
#include "src/prof/prof.h"
#include "worker/worker_int.h"

static struct {
    struct event *ev_stop; /* the end of the CPU profile running */
    uint32_t id;           /* its request */
    int running;
    uint64_t start_ms;
    unsigned seconds;
    struct folio_alloc_counters counters; /* the profiler's allocations */
} prof;

/* A file for the profile: a memfd, else an unlinked file in data_dir. */
static int
profile_file(const struct folio_worker *w)
{
    int fd;

#ifdef MFD_CLOEXEC
    if ((fd = memfd_create("folio-profile", MFD_CLOEXEC)) != -1)
        return fd;
#endif
    return open(w->cfg->data_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
}

/*
 * Send the answer to request `id`: the profile, or why there is none,
 * and how long the worker's loop spent on it since `t0` (monotonic ns;
 * 0: nothing to say).
 */
static void
answer(struct folio_worker *w, uint32_t id, int rc, struct folio_pprof *p,
       const char *why, uint64_t t0)
{
    struct folio_chan_profile_done d;
    struct folio_buf b;
    size_t off = 0, len;
    ssize_t n;
    int fd = -1;

    memset(&d, 0, sizeof(d));
    memset(&b, 0, sizeof(b));
    folio_prof_self_begin();
    if (rc == 0 && (rc = folio_pprof_encode(p, &b)) == 0) {
        if ((fd = profile_file(w)) == -1) {
            why = "memfd_create and O_TMPFILE both failed";
            rc = FOLIO_ESYS;
        }
        len = folio_buf_pending(&b);
        while (rc == 0 && off < len) {
            n = write(fd, folio_buf_at(&b, off), len - off);
            if (n == -1 && errno == EINTR)
                continue;
            if (n <= 0) {
                why = "writing the profile";
                rc = FOLIO_ESYS;
                break;
            }
            off += (size_t)n;
        }
        if (rc == 0 && lseek(fd, 0, SEEK_SET) != 0) {
            why = "lseek";
            rc = FOLIO_ESYS;
        }
        if (rc != 0)
            folio_log_warn("profile: %s", why);
    }
    d.cd_status = rc;
    if (rc != 0) {
        snprintf(d.cd_error, sizeof(d.cd_error), "%s%s%s",
                 why != NULL ? why : "", why != NULL ? ": " : "",
                 rc == FOLIO_ESYS ? strerror(errno) : folio_strerror(rc));
        if (fd != -1) {
            close(fd);
            fd = -1;
        }
    }
    d.cd_loop_ns = t0 != 0 ? folio_mono_ns() - t0 : 0;
    if (folio_chan_send(w->args->chan_fd, FOLIO_CHAN_PROFILE_DONE, 0, id, &d,
                        sizeof(d), fd) != 0)
        folio_log_warn("sending a profile to the master");
    if (fd != -1)
        close(fd);
    folio_buf_free(&b);
    folio_prof_self_end();
    folio_stat_set(&w->slot->ws_profile_symbol_lookups,
                   folio_prof_sym_lookups());
}

/* Take the CPU profile of the last start..now and send it. */
static void
cpu_finish(struct folio_worker *w, const char *note)
{
    struct folio_alloc_counters *was = folio_alloc_current();
    struct folio_pprof p;
    uint64_t t0 = folio_mono_ns();
    int rc;

    if (!prof.running)
        return;
    prof.running = 0;
    if (prof.ev_stop != NULL)
        evtimer_del(prof.ev_stop);
    folio_prof_cpu_stop();
    folio_alloc_use(&prof.counters);
    rc = folio_prof_cpu_profile(&p);
    if (rc == 0 && note != NULL && folio_pprof_add_comment(&p, "%s", note) < 0)
        rc = FOLIO_ENOMEM;
    answer(w, prof.id, rc, &p, rc != 0 ? "CPU profile" : NULL, t0);
    folio_pprof_free(&p);
    folio_alloc_use(was);
}

static void
on_stop(evutil_socket_t fd, short what, void *arg)
{
    cpu_finish(arg, NULL);
}

static void
cpu_start(struct folio_worker *w, uint32_t id,
          const struct folio_chan_profile *cp)
{
    struct timeval tv;
    int rc;

    if (prof.running) {
        answer(w, id, FOLIO_EAGAIN, NULL, "a CPU profile is already running",
               0);
        return;
    }
    if (prof.ev_stop == NULL &&
        (prof.ev_stop = evtimer_new(w->base, on_stop, w)) == NULL) {
        answer(w, id, FOLIO_ENOMEM, NULL, "evtimer_new", 0);
        return;
    }
    if ((rc = folio_prof_cpu_start(cp->cp_hz)) != 0) {
        answer(w, id, rc, NULL,
               rc == FOLIO_ESYS ? "setitimer(ITIMER_PROF)"
                                : "starting the CPU profile",
               0);
        return;
    }
    prof.running = 1;
    prof.id = id;
    prof.seconds = cp->cp_seconds;
    prof.start_ms = folio_mono_ms();
    tv.tv_sec = (time_t)cp->cp_seconds;
    tv.tv_usec = 0;
    if (evtimer_add(prof.ev_stop, &tv) != 0)
        cpu_finish(w, "the worker could not set its timer: stopped at once");
}

static void
heap(struct folio_worker *w, uint32_t id, const struct folio_chan_profile *cp)
{
    struct folio_alloc_counters *was = folio_alloc_current();
    struct folio_pprof p;
    uint64_t t0 = folio_mono_ns();
    int rc;

    folio_alloc_use(&prof.counters);
    rc = folio_prof_heap_profile(&p, cp->cp_kind == FOLIO_PROFILE_ALLOCS);
    if (rc == 0 && (cp->cp_flags & FOLIO_CHAN_PROFILE_RESET))
        folio_prof_heap_reset();
    answer(w, id, rc, &p, rc != 0 ? "heap profile" : NULL, t0);
    folio_pprof_free(&p);
    folio_alloc_use(was);
}

void
folio_worker_profile_init(struct folio_worker *w)
{
    memset(&prof, 0, sizeof(prof));
    folio_stat_set(&w->slot->ws_profile_symbol_lookups,
                   folio_prof_sym_lookups());
    folio_prof_heap_rate(w->cfg->profiling == FOLIO_PROFILING_OFF
                             ? 0
                             : w->cfg->profile_heap_rate);
}

void
folio_worker_profile_msg(struct folio_worker *w, const struct folio_chan_hdr *h,
                         const void *data)
{
    struct folio_chan_profile cp;

    if (h->ch_len != sizeof(cp)) {
        folio_log_warnx("malformed profile request from the master");
        return;
    }
    memcpy(&cp, data, sizeof(cp));
    switch (cp.cp_kind) {
    case FOLIO_PROFILE_CPU:
        cpu_start(w, h->ch_arg, &cp);
        break;
    case FOLIO_PROFILE_HEAP:
    case FOLIO_PROFILE_ALLOCS:
        heap(w, h->ch_arg, &cp);
        break;
    default:
        answer(w, h->ch_arg, FOLIO_EINVAL, NULL, "unknown kind of profile", 0);
    }
}

void
folio_worker_profile_fini(struct folio_worker *w)
{
    char note[128];

    if (prof.running) {
        snprintf(note, sizeof(note),
                 "worker %d stopped %.1f s into a %u s profile", w->args->index,
                 (double)(folio_mono_ms() - prof.start_ms) / 1000.0,
                 prof.seconds);
        cpu_finish(w, note);
    }
    if (prof.ev_stop != NULL)
        event_free(prof.ev_stop);
    prof.ev_stop = NULL;
}
