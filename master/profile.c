/*
 * profile.c - /debug/pprof/ on the metrics listener (PROTOCOL.md section
 * 6): the master asks every worker (or one, or itself) for a profile over
 * the channel, collects the files they pass back, merges them into one
 * profile whose samples are labelled worker=K and pid=P, and answers
 * with it, gzipped profile.proto as Go's net/http/pprof serves it (or its
 * top functions as text for ?debug=1).
 *
 * A request lives until every worker asked has answered, died (its pid
 * left the slot: the profile says so in a comment, the others' samples
 * still come back) or missed the deadline.  One CPU profile at a time
 * (a second is 409: a process has one profiling timer); heap profiles
 * are taken at once, several may be in flight.
 *
 * A request goes through three phases, each a function of its own:
 * parse (what its path and query ask for), decide (whether it is served,
 * and by which processes), send_asks (ask them).  The answers come back
 * through folio_profile_on_done and on_poll, and finish merges them,
 * names their addresses and encodes the reply.  The processes send
 * addresses only (src/prof/prof.h): a worker's loop stops for the time
 * it takes to copy its tables, and the naming is the master's, which is
 * idle and keeps what it looked up for the next profile (`syms`).
 *
 * Called from metrics.c (the route) and proc.c (a worker's answer); the
 * state is this file's, for the one master of the process.
 */
#include "config.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <netinet/in.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "master/master_int.h"
#include "src/alloc.h"
#include "src/buf.h"
#include "src/chan.h"
#include "src/clock.h"
#include "src/err.h"
#include "src/log.h"
#include "src/prof/pprof.h"
#include "src/prof/prof.h"

#define MAX_INFLIGHT 8
#define SECONDS_DEFAULT 30
#define SECONDS_MAX 300
#define POLL_MS 100
#define ANSWER_GRACE_MS 60000 /* after the profile's end: symbols, under load */
#define MAX_FILE (64u << 20)

enum part_state { PART_WAIT = 0, PART_DONE, PART_FAILED };

/* What one process (a worker, or the master: slot -1) contributes. */
struct part {
    int slot;
    int index;
    pid_t pid;
    uint64_t seq; /* the worker's spawn number: a slot is reused */
    int state;
    uint64_t loop_ns; /* the worker's loop spent taking and sending it */
    uint64_t cpu_us[2]; /* CPU: its user and system time at the start */
    struct folio_pprof prof;
    char why[320]; /* PART_FAILED: the comment the profile carries */
};

struct preq {
    struct folio_master *m;
    struct evhttp_request *req; /* NULL once the client is gone */
    int at;                     /* its place in inflight[] */
    uint32_t id;
    int kind;    /* enum folio_chan_profile_kind */
    int debug;   /* ?debug=1: the top as text */
    int legacy;  /* ?format=legacy: gperftools' formats, for google-pprof */
    int reset;   /* allocs ?reset=1 */
    unsigned seconds;
    uint64_t start_ms, end_ms, deadline_ms;
    struct event *ev_poll;
    struct part parts[FOLIO_MAX_SLOTS + 1];
    int nparts;
};

/*
 * A part's CPU time so far, user and system, us: the worker's from its
 * stats slot (refreshed ten times a second), the master's from
 * getrusage.  0 when its slot is another process's by now.
 */
static void
part_cpu(const struct folio_master *m, const struct part *pt, uint64_t us[2])
{
    struct folio_worker_slot *s;
    struct rusage ru;

    us[0] = us[1] = 0;
    if (pt->slot < 0) {
        if (getrusage(RUSAGE_SELF, &ru) == 0) {
            us[0] = (uint64_t)ru.ru_utime.tv_sec * 1000000u +
                    (uint64_t)ru.ru_utime.tv_usec;
            us[1] = (uint64_t)ru.ru_stime.tv_sec * 1000000u +
                    (uint64_t)ru.ru_stime.tv_usec;
        }
        return;
    }
    s = folio_stats_slot(m->stats, (unsigned)pt->slot);
    if (folio_stat_get(&s->ws_seq) != pt->seq)
        return;
    us[0] = folio_stat_get(&s->ws_cpu_user_us);
    us[1] = folio_stat_get(&s->ws_cpu_sys_us);
}

static struct preq *inflight[MAX_INFLIGHT];
static uint32_t next_id = 1;
static struct folio_prof_syms *syms; /* kept between profiles */
static const char *const kind_path[] = {"profile", "heap", "allocs"};

static void finish(struct preq *r);

/* ------------------------------------------------------------------ */
/* Replies                                                             */

static void reply_text(struct evhttp_request *req, int code, const char *fmt,
                       ...) __attribute__((format(printf, 3, 4)));

static void
reply_text(struct evhttp_request *req, int code, const char *fmt, ...)
{
    static const struct {
        int code;
        const char *reason;
    } reasons[] = {
        {200, "OK"},          {400, "Bad Request"},
        {403, "Forbidden"},   {404, "Not Found"},
        {405, "Method Not Allowed"}, {409, "Conflict"},
        {500, "Internal Server Error"}, {503, "Service Unavailable"},
    };
    const char *reason = "Error";
    struct evbuffer *b;
    va_list ap;
    size_t i;

    for (i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
        if (reasons[i].code == code)
            reason = reasons[i].reason;
    if ((b = evbuffer_new()) == NULL) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    va_start(ap, fmt);
    evbuffer_add_vprintf(b, fmt, ap);
    va_end(ap);
    evbuffer_add(b, "\n", 1);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; charset=utf-8");
    evhttp_add_header(evhttp_request_get_output_headers(req),
                      "X-Content-Type-Options", "nosniff");
    evhttp_send_reply(req, code, reason, b);
    evbuffer_free(b);
}

/* ------------------------------------------------------------------ */
/* Requests in flight                                                  */

static void
preq_free(struct preq *r)
{
    int i;

    if (r == NULL)
        return;
    for (i = 0; i < MAX_INFLIGHT; i++)
        if (inflight[i] == r)
            inflight[i] = NULL;
    if (r->req != NULL)
        folio_mconn_on_close(r->m, r->req, NULL, NULL);
    if (r->ev_poll != NULL)
        event_free(r->ev_poll);
    for (i = 0; i < r->nparts; i++)
        folio_pprof_free(&r->parts[i].prof);
    if (r->kind == FOLIO_PROFILE_CPU && r->nparts > 0 &&
        r->parts[0].slot < 0 && r->parts[0].state == PART_WAIT)
        folio_prof_cpu_stop(); /* the master's own, cut short */
    folio_free(r);
}

/* The client went away: finish quietly, answer nobody. */
static void
on_close(struct evhttp_connection *evcon, void *arg)
{
    struct preq *r = arg;

    r->req = NULL;
}

static struct preq *
cpu_running(void)
{
    int i;

    for (i = 0; i < MAX_INFLIGHT; i++)
        if (inflight[i] != NULL && inflight[i]->kind == FOLIO_PROFILE_CPU)
            return inflight[i];
    return NULL;
}

/* The master's own profile, as a part. */
static void
master_part(struct part *pt, int kind)
{
    int rc;

    rc = kind == FOLIO_PROFILE_CPU ? folio_prof_cpu_profile(&pt->prof)
                                   : folio_prof_heap_profile(
                                         &pt->prof, kind == FOLIO_PROFILE_ALLOCS);
    if (rc == 0) {
        pt->state = PART_DONE;
        return;
    }
    pt->state = PART_FAILED;
    snprintf(pt->why, sizeof(pt->why), "master (pid %ld): no profile: %s",
             (long)pt->pid, folio_strerror(rc));
}

static int
all_answered(const struct preq *r)
{
    int i;

    for (i = 0; i < r->nparts; i++)
        if (r->parts[i].state == PART_WAIT)
            return 0;
    return 1;
}

/* Every POLL_MS: workers that died, the master's own end, the deadline. */
static void
on_poll(evutil_socket_t fd, short what, void *arg)
{
    struct preq *r = arg;
    struct folio_master *m = r->m;
    uint64_t now = folio_mono_ms();
    int i;

    for (i = 0; i < r->nparts; i++) {
        struct part *pt = &r->parts[i];

        if (pt->state != PART_WAIT)
            continue;
        if (pt->slot < 0) {
            if (r->kind != FOLIO_PROFILE_CPU || now >= r->end_ms)
                master_part(pt, r->kind);
            continue;
        }
        if (!folio_dec_live(&m->dec, pt->slot) ||
            m->procs[pt->slot].seq != pt->seq) {
            pt->state = PART_FAILED;
            snprintf(pt->why, sizeof(pt->why),
                     "worker %d (pid %ld) exited during the profile: its "
                     "samples are missing",
                     pt->index, (long)pt->pid);
            folio_log_warnx("profile: %s", pt->why);
        } else if (now >= r->deadline_ms) {
            pt->state = PART_FAILED;
            snprintf(pt->why, sizeof(pt->why),
                     "worker %d (pid %ld) did not answer within %u s: its "
                     "samples are missing",
                     pt->index, (long)pt->pid,
                     (unsigned)((r->deadline_ms - r->start_ms) / 1000));
            folio_log_warnx("profile: %s", pt->why);
        }
    }
    if (all_answered(r))
        finish(r);
}

/* ------------------------------------------------------------------ */
/* Merging and answering                                               */

static int
empty_profile(struct folio_pprof *p, int kind)
{
    int rc = folio_pprof_init(p);

    if (rc != 0)
        return rc;
    if (kind == FOLIO_PROFILE_CPU) {
        if (folio_pprof_add_type(p, "samples", "count") < 0 ||
            folio_pprof_add_type(p, "cpu", "nanoseconds") < 0)
            return FOLIO_ENOMEM;
        p->period_type = p->types[1];
        p->period = 1000000000 / FOLIO_PROF_HZ;
    } else {
        if (folio_pprof_add_type(p, "alloc_objects", "count") < 0 ||
            folio_pprof_add_type(p, "alloc_space", "bytes") < 0 ||
            folio_pprof_add_type(p, "inuse_objects", "count") < 0 ||
            folio_pprof_add_type(p, "inuse_space", "bytes") < 0)
            return FOLIO_ENOMEM;
        p->period_type = p->types[1];
        p->default_type =
            kind == FOLIO_PROFILE_ALLOCS ? p->types[1].type : p->types[3].type;
    }
    return 0;
}

/*
 * What a CPU profile's stacks cannot show: they are user space's, so the
 * time the processes spent in the kernel is charged to the functions that
 * entered it.  Said once, with its share of their CPU time meanwhile.
 */
static int
kernel_share(const struct preq *r, struct folio_pprof *out)
{
    uint64_t now[2], user = 0, sys = 0;
    int i;

    for (i = 0; i < r->nparts; i++) {
        const struct part *pt = &r->parts[i];

        if (pt->state != PART_DONE)
            continue;
        part_cpu(r->m, pt, now);
        if (now[0] >= pt->cpu_us[0] && now[1] >= pt->cpu_us[1] &&
            (now[0] != 0 || now[1] != 0)) {
            user += now[0] - pt->cpu_us[0];
            sys += now[1] - pt->cpu_us[1];
        }
    }
    if (user + sys == 0)
        return 0;
    return folio_pprof_add_comment(
               out,
               "user-space stacks only: %.0f%% of the CPU time was in the "
               "kernel, charged to the function that entered it (a system "
               "call's libc wrapper: send, recv, epoll_wait)",
               100.0 * (double)sys / (double)(user + sys)) < 0
               ? FOLIO_ENOMEM
               : 0;
}

/*
 * Each sample gets the labels process=worker|master, pid=P and worker:
 * K, a number with the unit "index" for a worker's (pprof drops a
 * numeric label of 0 that has no unit, and reads -tagfocus worker=0 as a
 * number, never matching a string), the string "master" for the
 * master's (-tagfocus worker=master).
 */
static int
merge(struct preq *r, struct folio_pprof *out)
{
    struct folio_pprof_tag tags[3];
    char index[16], pid[16];
    int i, rc, merged = 0;

    memset(tags, 0, sizeof(tags));
    if ((rc = empty_profile(out, r->kind)) != 0)
        return rc;
    for (i = 0; i < r->nparts; i++) {
        struct part *pt = &r->parts[i];

        if (pt->state != PART_DONE)
            continue;
        if (pt->slot < 0)
            snprintf(index, sizeof(index), "master");
        else
            snprintf(index, sizeof(index), "%d", pt->index);
        snprintf(pid, sizeof(pid), "%ld", (long)pt->pid);
        tags[0].key = "process";
        tags[0].str = pt->slot < 0 ? "master" : "worker";
        tags[1].key = "pid";
        tags[1].str = NULL;
        tags[1].num = pt->pid;
        tags[2].key = "worker";
        tags[2].str = pt->slot < 0 ? "master" : NULL;
        tags[2].num = pt->index;
        tags[2].unit = "index";
        if (merged == 0 && out->ntypes > 0)
            out->period = pt->prof.period; /* the heap rate of the first */
        if ((rc = folio_pprof_merge(out, &pt->prof, tags, 3)) != 0) {
            if (rc != FOLIO_EINVAL)
                return rc;
            snprintf(pt->why, sizeof(pt->why),
                     "%s %s (pid %s): its profile has other sample types: "
                     "left out",
                     pt->slot < 0 ? "master" : "worker", index, pid);
            pt->state = PART_FAILED;
            continue;
        }
        merged++;
    }
    if (r->kind == FOLIO_PROFILE_CPU && (rc = kernel_share(r, out)) != 0)
        return rc;
    for (i = 0; i < r->nparts; i++) {
        const struct part *pt = &r->parts[i];

        if (pt->state == PART_FAILED &&
            folio_pprof_add_comment(out, "%s", pt->why) < 0)
            return FOLIO_ENOMEM;
        /* What the profile cost the worker's service: '#', pprof -comments. */
        if (pt->state == PART_DONE && pt->slot >= 0 && pt->loop_ns != 0 &&
            folio_pprof_add_comment(out,
                                    "# worker %d (pid %ld): %.3f ms of its "
                                    "loop to take and send this profile",
                                    pt->index, (long)pt->pid,
                                    (double)pt->loop_ns / 1e6) < 0)
            return FOLIO_ENOMEM;
    }
    if (r->kind == FOLIO_PROFILE_CPU && out->duration_nanos == 0)
        out->duration_nanos = (int64_t)r->seconds * 1000000000;
    return 0;
}

static void
finish(struct preq *r)
{
    struct folio_pprof out;
    struct folio_buf b;
    struct evbuffer *eb = NULL;
    int rc;

    if (r->req == NULL) {
        preq_free(r);
        return;
    }
    folio_prof_self_begin();
    memset(&b, 0, sizeof(b));
    if ((rc = merge(r, &out)) != 0) {
        reply_text(r->req, 500, "merging the profiles: %s", folio_strerror(rc));
        goto done;
    }
    if ((syms == NULL && (rc = folio_prof_syms_new(&syms)) != 0) ||
        (rc = folio_prof_symbolize(syms, &out,
                                   r->kind != FOLIO_PROFILE_CPU
                                       ? FOLIO_PROF_SYM_HEAP
                                       : 0)) != 0) {
        reply_text(r->req, 500, "naming the profile's addresses: %s",
                   folio_strerror(rc));
        goto done;
    }
    if (r->debug) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        if (f == NULL) {
            reply_text(r->req, 500, "open_memstream: %s", strerror(errno));
            goto done;
        }
        rc = folio_pprof_top_print(f, &out, folio_pprof_type_index(&out, NULL),
                                   0);
        fclose(f);
        if (rc != 0)
            reply_text(r->req, 500, "top: %s", folio_strerror(rc));
        else
            reply_text(r->req, 200, "%s", text);
        free(text);
        goto done;
    }
    if ((rc = r->legacy ? folio_pprof_encode_legacy(
                              &out, folio_pprof_type_index(&out, NULL), &b)
                        : folio_pprof_encode_gz(&out, &b)) != 0 ||
        (eb = evbuffer_new()) == NULL ||
        evbuffer_add(eb, folio_buf_at(&b, 0), folio_buf_pending(&b)) != 0) {
        reply_text(r->req, 500, "encoding the profile: %s",
                   folio_strerror(rc != 0 ? rc : FOLIO_ENOMEM));
        goto done;
    }
    evhttp_add_header(evhttp_request_get_output_headers(r->req),
                      "Content-Type", "application/octet-stream");
    evhttp_add_header(evhttp_request_get_output_headers(r->req),
                      "Content-Disposition",
                      r->kind == FOLIO_PROFILE_CPU
                          ? "attachment; filename=\"profile\""
                          : r->kind == FOLIO_PROFILE_HEAP
                                ? "attachment; filename=\"heap\""
                                : "attachment; filename=\"allocs\"");
    evhttp_add_header(evhttp_request_get_output_headers(r->req),
                      "X-Content-Type-Options", "nosniff");
    evhttp_send_reply(r->req, 200, "OK", eb);
done:
    if (eb != NULL)
        evbuffer_free(eb);
    folio_buf_free(&b);
    folio_pprof_free(&out);
    preq_free(r);
    folio_prof_self_end();
}

/* A worker's answer (proc.c's channel reader): its file, or why not. */
void
folio_profile_on_done(struct folio_master *m, struct folio_proc *p,
                      const struct folio_chan_hdr *h, const void *data, int fd)
{
    struct folio_chan_profile_done d;
    struct preq *r = NULL;
    struct part *pt = NULL;
    struct stat st;
    char *buf = NULL, err[256];
    size_t off = 0;
    ssize_t n;
    int i, rc;

    for (i = 0; i < MAX_INFLIGHT && r == NULL; i++)
        if (inflight[i] != NULL && inflight[i]->id == h->ch_arg)
            r = inflight[i];
    for (i = 0; r != NULL && i < r->nparts && pt == NULL; i++)
        if (r->parts[i].slot == p->slot && r->parts[i].seq == p->seq &&
            r->parts[i].state == PART_WAIT)
            pt = &r->parts[i];
    if (pt == NULL || h->ch_len != sizeof(d)) {
        /* Late (past the deadline) or for a request already answered. */
        if (fd >= 0)
            close(fd);
        return;
    }
    memcpy(&d, data, sizeof(d));
    d.cd_error[sizeof(d.cd_error) - 1] = '\0';
    pt->state = PART_FAILED;
    pt->loop_ns = d.cd_loop_ns;
    folio_prof_self_begin(); /* the profile read: the profiler's memory */
    if (d.cd_status != 0 || fd < 0) {
        snprintf(pt->why, sizeof(pt->why), "worker %d (pid %ld): %s",
                 pt->index, (long)pt->pid,
                 d.cd_error[0] != '\0' ? d.cd_error : "no profile");
        goto out;
    }
    if (fstat(fd, &st) != 0 || st.st_size <= 0 ||
        (uint64_t)st.st_size > MAX_FILE ||
        (buf = folio_malloc((size_t)st.st_size)) == NULL) {
        snprintf(pt->why, sizeof(pt->why),
                 "worker %d (pid %ld): its profile file cannot be read",
                 pt->index, (long)pt->pid);
        goto out;
    }
    while (off < (size_t)st.st_size) {
        n = pread(fd, buf + off, (size_t)st.st_size - off, (off_t)off);
        if (n == -1 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    if (off != (size_t)st.st_size) {
        snprintf(pt->why, sizeof(pt->why),
                 "worker %d (pid %ld): reading its profile: %s", pt->index,
                 (long)pt->pid, strerror(errno));
        goto out;
    }
    if ((rc = folio_pprof_decode(buf, off, &pt->prof, err, sizeof(err))) != 0) {
        snprintf(pt->why, sizeof(pt->why), "worker %d (pid %ld): %s",
                 pt->index, (long)pt->pid, err);
        goto out;
    }
    pt->state = PART_DONE;
out:
    if (pt->state == PART_FAILED)
        folio_log_warnx("profile: %s", pt->why);
    folio_free(buf);
    folio_prof_self_end();
    if (fd >= 0)
        close(fd);
    if (all_answered(r))
        finish(r);
}

void
folio_profile_abort(struct folio_master *m)
{
    int i;

    /* No answer: the connections go with evhttp, after this. */
    for (i = 0; i < MAX_INFLIGHT; i++)
        preq_free(inflight[i]);
    folio_prof_syms_free(syms);
    syms = NULL;
}

/* ------------------------------------------------------------------ */
/* The route                                                           */

/* Whether the listener is a loopback address (127/8, ::1). */
static int
listener_is_loopback(const struct folio_master *m)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);

    if (m->metrics_fd < 0 ||
        getsockname(m->metrics_fd, (struct sockaddr *)&ss, &sl) != 0)
        return 0;
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;

        return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    }
    if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;

        if (IN6_IS_ADDR_LOOPBACK(&a->sin6_addr))
            return 1;
        return IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) &&
               a->sin6_addr.s6_addr[12] == 127;
    }
    return 0;
}

/* A whole number in lo..hi, or -1. */
static long
parse_num(const char *s, long lo, long hi)
{
    char *end;
    long v;

    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi)
        return -1;
    return v;
}

/*
 * A request, in three phases: parse (what it asks for, from its path and
 * query alone), decide (whether it is served, and by which processes),
 * send (ask them).  Parse and decide answer nothing themselves: a request
 * that ends at once (an error, the index) carries its answer out of them,
 * and folio_profile_http replies.
 */

#define KIND_INDEX (-1) /* /debug/pprof/ itself */

/* An answer given at once. */
struct now {
    int code;             /* 0: none */
    unsigned retry_after; /* seconds, for a 409; 0: no header */
    char text[1024];
};

static void say_now(struct now *n, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
say_now(struct now *n, int code, const char *fmt, ...)
{
    va_list ap;

    n->code = code;
    va_start(ap, fmt);
    vsnprintf(n->text, sizeof(n->text), fmt, ap);
    va_end(ap);
}

/* What a request asks for (parse). */
struct ask {
    int kind;         /* enum folio_chan_profile_kind, or KIND_INDEX */
    const char *name; /* its path's last part, for the log */
    unsigned seconds; /* CPU: how long; 0 for a snapshot */
    long worker;      /* worker=K; -1: every one */
    int master;       /* worker=master */
    int debug;        /* debug=1: the top as text */
    int legacy;       /* format=legacy */
    int reset;        /* allocs reset=1 */
    struct now bad;   /* bad.code: malformed (404, 405, 400) */
};

/* The path's and the query's parameters into *a; nworkers bounds worker. */
static void
parse(struct evhttp_request *req, const char *path, const char *query,
      int nworkers, struct ask *a)
{
    struct evkeyvalq q;
    const char *v;
    long seconds = SECONDS_DEFAULT, debug = 0, reset = 0;

    memset(a, 0, sizeof(*a));
    a->worker = -1;
    a->name = path[12] == '/' ? path + 13 : "";
    if (*a->name == '\0') {
        a->kind = KIND_INDEX;
        return;
    }
    for (a->kind = 0; a->kind < 3 && strcmp(a->name, kind_path[a->kind]) != 0;
         a->kind++)
        ;
    if (a->kind == 3) {
        say_now(&a->bad, 404,
                "no profile %s: foliod serves profile, heap and allocs (see "
                "/debug/pprof/)",
                a->name);
        return;
    }
    if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
        say_now(&a->bad, 405, "profiles are taken with GET");
        return;
    }
    memset(&q, 0, sizeof(q));
    if (query != NULL && evhttp_parse_query_str(query, &q) != 0) {
        say_now(&a->bad, 400, "malformed query string");
        return;
    }
    if ((v = evhttp_find_header(&q, "seconds")) != NULL) {
        if (a->kind != FOLIO_PROFILE_CPU)
            say_now(&a->bad, 400,
                    "seconds=%s: only /debug/pprof/profile takes seconds (%s "
                    "is a snapshot)",
                    v, a->name);
        else if ((seconds = parse_num(v, 1, SECONDS_MAX)) < 0)
            say_now(&a->bad, 400, "seconds=%s: expected 1 to %d", v,
                    SECONDS_MAX);
    }
    if (a->bad.code == 0 && (v = evhttp_find_header(&q, "worker")) != NULL) {
        if (strcmp(v, "master") == 0)
            a->master = 1;
        else if ((a->worker = parse_num(v, 0, nworkers - 1)) < 0)
            say_now(&a->bad, 400, "worker=%s: expected 0 to %d, or master", v,
                    nworkers - 1);
    }
    if (a->bad.code == 0 && (v = evhttp_find_header(&q, "debug")) != NULL &&
        (debug = parse_num(v, 0, 1)) < 0)
        say_now(&a->bad, 400, "debug=%s: expected 0 or 1", v);
    if (a->bad.code == 0 && (v = evhttp_find_header(&q, "reset")) != NULL &&
        (a->kind != FOLIO_PROFILE_ALLOCS || (reset = parse_num(v, 0, 1)) < 0))
        say_now(&a->bad, 400,
                "reset=%s: /debug/pprof/allocs takes reset=0 or 1", v);
    if (a->bad.code == 0 && (v = evhttp_find_header(&q, "format")) != NULL) {
        if (strcmp(v, "legacy") == 0)
            a->legacy = 1;
        else if (strcmp(v, "proto") != 0)
            say_now(&a->bad, 400,
                    "format=%s: expected proto (pprof's profile.proto) or "
                    "legacy (gperftools', for google-pprof)",
                    v);
    }
    evhttp_clear_headers(&q);
    a->seconds = a->kind == FOLIO_PROFILE_CPU ? (unsigned)seconds : 0;
    a->debug = (int)debug;
    a->reset = (int)reset;
}

static void
index_page(const struct folio_master *m, struct now *n)
{
    say_now(n, 200,
            "foliod %s profiles (pprof format; go tool pprof "
            "http://%s/debug/pprof/profile):\n"
            "/debug/pprof/profile?seconds=N  CPU profile of every worker "
            "for N seconds (default %d, 1..%d)\n"
            "/debug/pprof/heap               sampled live heap of every "
            "worker\n"
            "/debug/pprof/allocs             sampled allocations since "
            "start (&reset=1: since then)\n"
            "parameters: worker=K|master (one process), debug=1 (the top "
            "functions as text),\n"
            "            format=legacy (gperftools' format: google-pprof "
            "--text FILE)",
            PACKAGE_VERSION, m->metrics_name, SECONDS_DEFAULT, SECONDS_MAX);
}

/*
 * Whether a is served, and by whom: 0 with *out, a request in flight with
 * its parts chosen (the master, or the serving generation's workers that
 * accept, decide.h) and nothing asked yet; or -1 with the answer in n.
 */
static int
decide(struct folio_master *m, const struct ask *a, struct now *n,
       struct preq **out)
{
    const struct folio_config *cfg = &m->cur->cfg;
    struct preq *r, *busy;
    int i, free_at = -1;

#ifndef FOLIO_PROFILING
    say_now(n, 404,
            "profiling is not built into this foliod (configured "
            "--disable-profiling)");
    return -1;
#endif
    if (cfg->profiling == FOLIO_PROFILING_OFF) {
        say_now(n, 404, "profiling is off (profiling = off)");
        return -1;
    }
    if (cfg->profiling == FOLIO_PROFILING_AUTO && !listener_is_loopback(m)) {
        say_now(n, 403,
                "profiles reveal the server's internals: they are served on "
                "a loopback metrics_listen only, unless profiling = on "
                "(metrics_listen is %s)",
                m->metrics_name);
        return -1;
    }
    if (a->kind == KIND_INDEX) {
        index_page(m, n);
        return -1;
    }
    if (a->bad.code != 0) {
        *n = a->bad;
        return -1;
    }
    if (a->kind == FOLIO_PROFILE_CPU && (busy = cpu_running()) != NULL) {
        uint64_t now = folio_mono_ms();

        n->retry_after = busy->end_ms > now
                             ? (unsigned)((busy->end_ms - now + 999) / 1000)
                             : 1;
        say_now(n, 409,
                "a CPU profile is already running (%u s left): one at a time",
                n->retry_after);
        return -1;
    }
    for (i = 0; i < MAX_INFLIGHT && free_at < 0; i++)
        if (inflight[i] == NULL)
            free_at = i;
    if (free_at < 0) {
        say_now(n, 503, "%d profiles are being taken: try again later",
                MAX_INFLIGHT);
        return -1;
    }
    if ((r = folio_calloc(1, sizeof(*r))) == NULL) {
        say_now(n, 500, "out of memory");
        return -1;
    }
    r->m = m;
    r->at = free_at;
    r->kind = a->kind;
    r->debug = a->debug;
    r->legacy = a->legacy;
    r->reset = a->reset;
    r->seconds = a->seconds;
    if (a->master) {
        struct part *pt = &r->parts[r->nparts++];

        pt->slot = -1;
        pt->index = -1;
        pt->pid = getpid();
    }
    for (i = 0; i < FOLIO_MAX_SLOTS && !a->master; i++) {
        const struct folio_dec_proc *d = &m->dec.procs[i];
        struct part *pt;

        if (d->state != FOLIO_WS_READY || d->gen != m->dec.cur.id ||
            m->procs[i].chan < 0 || (a->worker >= 0 && d->index != a->worker))
            continue;
        pt = &r->parts[r->nparts++];
        pt->slot = i;
        pt->index = d->index;
        pt->pid = (pid_t)d->pid;
        pt->seq = m->procs[i].seq;
    }
    if (r->nparts == 0) {
        say_now(n, 503, "no worker is serving%s",
                a->worker >= 0 ? " as that index" : "");
        folio_free(r);
        return -1;
    }
    *out = r;
    return 0;
}

/*
 * Ask r's parts for their profiles (the master's own is started or
 * taken here), and keep r in flight until they answered: 0, or -1 with
 * the answer in n (r freed).
 */
static int
send_asks(struct folio_master *m, struct evhttp_request *req, struct preq *r,
          struct now *n)
{
    struct timeval tv = {0, POLL_MS * 1000};
    struct folio_chan_profile cp;
    int i, rc;

    r->req = req;
    r->id = next_id++;
    r->start_ms = folio_mono_ms();
    for (i = 0; r->kind == FOLIO_PROFILE_CPU && i < r->nparts; i++)
        part_cpu(m, &r->parts[i], r->parts[i].cpu_us);
    r->end_ms = r->start_ms + (uint64_t)r->seconds * 1000;
    r->deadline_ms = r->end_ms + ANSWER_GRACE_MS;
    if (r->parts[0].slot < 0) {
        if (r->kind == FOLIO_PROFILE_CPU &&
            (rc = folio_prof_cpu_start(FOLIO_PROF_HZ)) != 0) {
            say_now(n, 500, "cannot profile the master: %s%s%s",
                    folio_strerror(rc), rc == FOLIO_ESYS ? ": " : "",
                    rc == FOLIO_ESYS ? strerror(errno) : "");
            folio_free(r);
            return -1;
        }
        if (r->reset && r->kind == FOLIO_PROFILE_ALLOCS) {
            master_part(&r->parts[0], r->kind);
            folio_prof_heap_reset();
        }
    }
    memset(&cp, 0, sizeof(cp));
    cp.cp_kind = (uint32_t)r->kind;
    cp.cp_seconds = r->seconds;
    cp.cp_hz = FOLIO_PROF_HZ;
    cp.cp_flags = r->reset ? FOLIO_CHAN_PROFILE_RESET : 0;
    for (i = 0; i < r->nparts; i++) {
        struct part *pt = &r->parts[i];

        if (pt->slot < 0 ||
            folio_chan_send(m->procs[pt->slot].chan, FOLIO_CHAN_PROFILE, 0,
                            r->id, &cp, sizeof(cp), -1) == 0)
            continue;
        pt->state = PART_FAILED;
        snprintf(pt->why, sizeof(pt->why),
                 "worker %d (pid %ld) could not be asked: %s", pt->index,
                 (long)pt->pid, strerror(errno));
    }
    inflight[r->at] = r;
    folio_mconn_on_close(m, req, on_close, r);
    if ((r->ev_poll = event_new(m->base, -1, EV_PERSIST, on_poll, r)) == NULL ||
        event_add(r->ev_poll, &tv) != 0) {
        say_now(n, 500, "cannot set a timer");
        r->req = NULL;
        preq_free(r);
        return -1;
    }
    folio_log_info("profile: %s%s for %u s from %d process%s",
                   kind_path[r->kind], r->debug ? " (text)" : "", r->seconds,
                   r->nparts, r->nparts == 1 ? "" : "es");
    if (r->kind != FOLIO_PROFILE_CPU && r->parts[0].slot < 0 &&
        r->parts[0].state == PART_WAIT)
        master_part(&r->parts[0], r->kind);
    if (all_answered(r))
        finish(r);
    return 0;
}

int
folio_profile_http(struct folio_master *m, struct evhttp_request *req)
{
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
    struct preq *r = NULL;
    struct ask a;
    struct now n;

    if (path == NULL || strncmp(path, "/debug/pprof", 12) != 0 ||
        (path[12] != '\0' && path[12] != '/'))
        return 0;
    memset(&n, 0, sizeof(n));
    parse(req, path, evhttp_uri_get_query(uri), m->cur->nworkers, &a);
    if (decide(m, &a, &n, &r) == 0 && send_asks(m, req, r, &n) == 0)
        return 1;
    if (n.retry_after != 0) {
        char ra[16];

        snprintf(ra, sizeof(ra), "%u", n.retry_after);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After",
                          ra);
    }
    reply_text(req, n.code, "%s", n.text);
    return 1;
}
