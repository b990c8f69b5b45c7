/*
 * dispatch.c - from a parsed msgpack-RPC request to its reply: method
 * lookup, admin and arity checks, the handler, error replies, and the
 * per-method counters and latency histogram.  Called by face_rpc.c (and
 * the tests), and by conn.c for the record of a held call; calls the
 * handlers through the method table (methods.c), and slowlog.c.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "shm/stats.h"
#include "src/buf.h"
#include "src/clock.h"
#include "src/rpc.h"
#include "src/utf8.h"
#include "worker/dispatch.h"
#include "worker/worker_int.h"

/* The methods' name lengths, measured once (no strlen per probe). */
static uint8_t name_len[FOLIO_MAX_METHODS];
static int name_len_ready;
/* Bit n: a method of name length n (< 64) has a reply_size. */
static uint64_t sized_lens;

static void
measure_names(void)
{
    unsigned i;

    for (i = 0; i < folio_nmethods; i++) {
        name_len[i] = (uint8_t)strlen(folio_methods[i].name);
        if (folio_methods[i].reply_size != NULL && name_len[i] < 64)
            sized_lens |= (uint64_t)1 << name_len[i];
    }
    name_len_ready = 1;
}

/* memcmp order of span name/len against method i's name, shorter first. */
static int
cmp_span(const char *name, uint32_t len, unsigned i)
{
    uint32_t ll = name_len[i];
    int r = memcmp(name, folio_methods[i].name, len < ll ? len : ll);

    if (r != 0)
        return r;
    return len < ll ? -1 : len > ll ? 1 : 0;
}

const struct folio_method *
folio_method_find(const char *name, uint32_t len, unsigned *row)
{
    unsigned lo = 0, hi = folio_nmethods, mid;
    int r;

    if (!name_len_ready)
        measure_names();
    while (lo < hi) {
        mid = (lo + hi) / 2;
        r = cmp_span(name, len, mid);
        if (r == 0) {
            *row = mid;
            return &folio_methods[mid];
        }
        if (r < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    *row = FOLIO_MAX_METHODS;
    return NULL;
}

int
folio_call_error(struct folio_call *call, int code, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(call->err_msg, sizeof(call->err_msg), fmt, ap);
    va_end(ap);
    call->err_code = code;
    call->err_len = n < 0                                 ? 0
                    : (size_t)n >= sizeof(call->err_msg) ? sizeof(call->err_msg) - 1
                                                          : (size_t)n;
    return -1;
}

const char *
folio_call_printable(const char *s, uint32_t len, char *out, size_t cap)
{
    return folio_utf8_quote(s, len, out, cap);
}

size_t
folio_dispatch_reply_size(struct folio_worker *w, const struct folio_rpc_msg *m,
                          int admin)
{
    const struct folio_method *method;
    struct folio_call call;
    unsigned row;

    /* Most calls (a ping) are told apart by their name's length alone. */
    if (!name_len_ready)
        measure_names();
    if (m->method_len >= 64 || !(sized_lens & ((uint64_t)1 << m->method_len)))
        return FOLIO_REPLY_SMALL;
    method = folio_method_find(m->method, m->method_len, &row);
    if (method == NULL || method->reply_size == NULL ||
        ((method->flags & FOLIO_METHOD_ADMIN) && !admin) ||
        m->nparams < method->min_params || m->nparams > method->max_params)
        return FOLIO_REPLY_SMALL;
    memset(&call, 0, sizeof(call));
    call.params = m->params;
    call.nparams = m->nparams;
    call.admin = admin;
    call.notify = m->type == FOLIO_RPC_NOTIFY;
    call.msgid = m->msgid;
    call.w = w;
    return method->reply_size(&call);
}

/* Count a call that took dt ns (see folio_dispatch_record). */
static inline void
record(struct folio_worker *w, unsigned row, int notify, int code,
       uint64_t dt)
{
    struct folio_worker_slot *slot = w->slot;
    struct folio_method_stats *ms = &slot->ws_methods[row];

    if (notify)
        folio_stat_add(&slot->ws_notifications, 1);
    else
        folio_stat_add(&slot->ws_requests, 1);
    if (code != 0)
        folio_stat_add(&slot->ws_errors, 1);
    folio_stat_add(&ms->ms_codes[code < FOLIO_ST_MAX ? code : FOLIO_ST_INTERNAL],
                   1);
    folio_stat_add(&ms->ms_ns, dt);
    folio_stat_add(&ms->ms_hist[folio_lat_bucket(dt)], 1);
}

void
folio_dispatch_record(struct folio_worker *w, unsigned row, int notify,
                      int code, uint64_t t0, const uint64_t peer[3])
{
    uint64_t dt;

    if (t0 == 0)
        return;
    dt = folio_mono_ns() - t0;
    if (w->cfg->stats)
        record(w, row, notify, code, dt);
    /* Its whole time, the hold included; its params are gone by now. */
    if (w->cfg->slow_request_ms != 0 &&
        dt >= (uint64_t)w->cfg->slow_request_ms * 1000000)
        folio_slowlog_note(w,
                           row < folio_nmethods ? folio_methods[row].name
                                                : "an unknown method",
                           dt, peer, NULL, 0);
}

/*
 * The request in progress, for the watchdog: its method and start, and
 * the peer of its connection when that changed (three stores per
 * request, and three more per change of connection).
 */
static void
publish_start(struct folio_worker *w, const struct folio_conn *c,
              unsigned row, uint64_t start_ms)
{
    struct folio_worker_slot *slot = w->slot;
    int i;

    if (c != w->published) {
        for (i = 0; i < 3; i++)
            folio_stat_set(&slot->ws_req_peer[i], c != NULL ? c->peer[i] : 0);
        w->published = c;
    }
    atomic_store_explicit(&slot->ws_req_row, row, memory_order_relaxed);
    folio_stat_set(&slot->ws_req_start_ms, start_ms);
    atomic_store_explicit(&slot->ws_req_busy, 1, memory_order_relaxed);
}

uint64_t
folio_dispatch(struct folio_worker *w, struct folio_conn *c,
               const struct folio_rpc_msg *m, int admin, struct folio_buf *out)
{
    struct folio_worker_slot *slot = w->slot;
    const struct folio_method *method;
    struct folio_call call;
    msgpack_packer pk;
    char name[72];
    /*
     * Where this reply starts, counted from the first pending byte: packing
     * may move the pending bytes to the front of the buffer (when the
     * client has read part of the earlier replies), so an offset from the
     * buffer's start would go stale and a dropped reply would stay.
     */
    size_t mark = folio_buf_pending(out);
    int notify = m->type == FOLIO_RPC_NOTIFY;
    unsigned row;
    uint64_t dt, t0 = folio_dispatch_times(w->cfg) ? folio_mono_ns() : 0;
    /* Timed from when its bytes were read (conn_io.c), the wait included. */
    uint64_t read_ns =
        c != NULL && c->read_ns != 0 && c->read_ns <= t0 ? c->read_ns : t0;

    if (t0 != 0 && w->cfg->stats)
        folio_stat_add(&slot->ws_in_flight, 1);

    msgpack_packer_init(&pk, out, folio_buf_pack_write);
    call.pk = &pk;
    call.out = out;
    call.params = m->params;
    call.nparams = m->nparams;
    call.admin = admin;
    call.notify = notify;
    call.msgid = m->msgid;
    call.head = mark;
    call.w = w;
    call.conn = c;
    call.err_code = 0;
    call.err_len = 0;
    call.t0 = read_ns; /* a held call's latency: the wait, the hold */
    call.held = 0;
    out->b_failed = 0;

    method = folio_method_find(m->method, m->method_len, &row);
    call.row = row;
    publish_start(w, c, row, t0 != 0 ? t0 / 1000000 : w->now_ms);
    if (!notify)
        folio_rpc_pack_result_head(&pk, m->msgid);
    if (method == NULL) {
        folio_call_printable(m->method, m->method_len, name, 68);
        folio_call_error(&call, FOLIO_ST_UNIMPLEMENTED, "unknown method '%s'",
                         name);
    } else if ((method->flags & FOLIO_METHOD_ADMIN) && !admin) {
        folio_call_error(&call, FOLIO_ST_PERMISSION_DENIED,
                         "%s is allowed on the admin socket only",
                         method->name);
    } else if (m->nparams < method->min_params ||
               m->nparams > method->max_params) {
        if (method->min_params == method->max_params)
            folio_call_error(&call, FOLIO_ST_INVALID_ARGUMENT,
                             "%s takes %u param%s, got %u", method->name,
                             method->min_params,
                             method->min_params == 1 ? "" : "s", m->nparams);
        else
            folio_call_error(&call, FOLIO_ST_INVALID_ARGUMENT,
                             "%s takes %u to %u params, got %u", method->name,
                             method->min_params, method->max_params,
                             m->nparams);
    } else if (method->fn(&call) != 0 && call.err_code == 0) {
        folio_call_error(&call, FOLIO_ST_INTERNAL, "%s failed", method->name);
    }
    if (call.err_code == 0 && out->b_failed == FOLIO_ETOOBIG)
        folio_call_error(&call, FOLIO_ST_RESOURCE_EXHAUSTED,
                         "reply too large: over the connection's output "
                         "limit (max_output_hard_bytes)");
    else if (call.err_code == 0 && out->b_failed)
        folio_call_error(&call, FOLIO_ST_RESOURCE_EXHAUSTED,
                         "reply too large for memory");
    if (call.err_code != 0 || notify)
        folio_buf_truncate(out, mark);
    if (call.err_code != 0 && !notify) {
        out->b_failed = 0;
        folio_rpc_pack_error(&pk, m->msgid, call.err_code, call.err_msg,
                             call.err_len);
    }

    atomic_store_explicit(&slot->ws_req_busy, 0, memory_order_relaxed);
    dt = t0 != 0 ? folio_mono_ns() - t0 : 0;
    if (w->cfg->slow_request_ms != 0 &&
        dt >= (uint64_t)w->cfg->slow_request_ms * 1000000)
        folio_slowlog_note(w, method != NULL ? method->name : name, dt,
                           c != NULL ? c->peer : NULL, &m->params,
                           m->nparams);
    if (t0 != 0 && w->cfg->stats) {
        /* A held reply stays in flight until its release (conn.c). */
        folio_stat_set(&slot->ws_in_flight,
                       folio_stat_get(&slot->ws_in_flight) - 1);
        folio_stat_add(&slot->ws_queue_ns, t0 - read_ns);
        folio_stat_add(&slot->ws_queue_hist[folio_lat_bucket(t0 - read_ns)], 1);
        /* A held call is counted when it is released, with its outcome. */
        if (!call.held)
            record(w, row, notify, call.err_code, dt + (t0 - read_ns));
    }
    /* Reported to the loop, which asks the master for a replacement. */
    if (++w->served == w->recycle_at && w->ev_recycle != NULL)
        event_active(w->ev_recycle, EV_TIMEOUT, 1);
    return dt; /* the connection's work: conn.c shares turns by it */
}
