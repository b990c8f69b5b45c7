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

/*
 * The method table's index by name: a perfect hash of a name's first and
 * last 8 bytes and its length, into HASH_SLOTS slots, its multiplier
 * searched for once (the first that gives every method a slot of its
 * own); a lookup is one hash, one slot and two 8-byte compares (three or
 * more for names over 16 bytes), where a binary search of memcmp()s took
 * about 195 instructions for a ping.  A row is the method's position in
 * the sorted table (its stats row).
 */
#define HASH_BITS 7
#define HASH_SLOTS (1u << HASH_BITS)
#define HASH_TRIES 100000

struct name_key {
    uint64_t head, tail; /* the first and last 8 bytes (zero-padded) */
    uint32_t len;
};

static struct name_key keys[FOLIO_MAX_METHODS];
static uint8_t slots[HASH_SLOTS]; /* row + 1; 0: none */
static uint64_t hash_mul;
static int index_ready;
uint64_t folio_dispatch_sized_lens = ~(uint64_t)0;

static inline void
name_key(const char *name, uint32_t len, struct name_key *k)
{
    k->len = len;
    if (len >= 8) {
        memcpy(&k->head, name, 8);
        memcpy(&k->tail, name + len - 8, 8);
    } else {
        k->head = 0;
        memcpy(&k->head, name, len);
        k->tail = k->head;
    }
}

static inline unsigned
name_hash(const struct name_key *k, uint64_t mul)
{
    uint64_t x = (k->head * mul) ^ (k->tail * 0x9e3779b97f4a7c15ULL) ^
                 ((uint64_t)k->len * 0xff51afd7ed558ccdULL);

    return (unsigned)((x * mul) >> (64 - HASH_BITS));
}

/* Whether every method has a slot of its own under multiplier mul. */
static int
try_index(uint64_t mul)
{
    unsigned i, h;

    memset(slots, 0, sizeof(slots));
    for (i = 0; i < folio_nmethods; i++) {
        h = name_hash(&keys[i], mul);
        if (slots[h] != 0)
            return -1;
        slots[h] = (uint8_t)(i + 1);
    }
    return 0;
}

static void
build_index(void)
{
    uint64_t mul = 0x2545f4914f6cdd1dULL;
    unsigned i;
    int t;

    folio_dispatch_sized_lens = 0;
    for (i = 0; i < folio_nmethods; i++) {
        name_key(folio_methods[i].name, (uint32_t)strlen(folio_methods[i].name),
                 &keys[i]);
        if (folio_methods[i].reply_size != NULL && keys[i].len < 64)
            folio_dispatch_sized_lens |= (uint64_t)1 << keys[i].len;
    }
    /* Odd multipliers in a fixed sequence: the same index every run. */
    for (t = 0; t < HASH_TRIES;
         t++, mul = mul * 6364136223846793005ULL + 1442695040888963407ULL) {
        if (try_index(mul | 1) == 0) {
            hash_mul = mul | 1;
            index_ready = 1;
            return;
        }
    }
    folio_fatalx("no perfect hash of the %u method names in %u slots: "
                 "raise HASH_BITS",
                 folio_nmethods, HASH_SLOTS);
}

const struct folio_method *
folio_method_find(const char *name, uint32_t len, unsigned *row)
{
    const struct name_key *m;
    struct name_key k;
    unsigned i;
    uint32_t off;
    uint64_t a, b;

    if (!index_ready)
        build_index();
    *row = FOLIO_MAX_METHODS;
    name_key(name, len, &k);
    if ((i = slots[name_hash(&k, hash_mul)]) == 0)
        return NULL;
    m = &keys[--i];
    if (m->len != len || m->head != k.head || m->tail != k.tail)
        return NULL;
    /* Over 16 bytes: the middle, 8 at a time (the last chunk overlaps). */
    for (off = 8; off + 8 < len; off += 8) {
        memcpy(&a, name + off, 8);
        memcpy(&b, folio_methods[i].name + off, 8);
        if (a != b)
            return NULL;
    }
    *row = i;
    return &folio_methods[i];
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
folio_dispatch_reply_size_slow(struct folio_worker *w,
                               const struct folio_rpc_msg *m, int admin,
                               struct folio_sized *sz)
{
    const struct folio_method *method;
    struct folio_call call;
    size_t size;

    sz->method = method = folio_method_find(m->method, m->method_len,
                                            &sz->row);
    sz->page = NULL;
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
    size = method->reply_size(&call);
    sz->page = call.page;
    return size;
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
               const struct folio_rpc_msg *m, int admin,
               const struct folio_sized *sz, struct folio_buf *out)
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
    uint64_t dt = 0, end, t0 = 0;
    uint64_t read_ns;

    /* One clock reading per call when chained (worker_int.h). */
    if (folio_dispatch_times(w->cfg))
        t0 = w->clock_chain && w->clock_ns != 0 ? w->clock_ns : folio_mono_ns();
    /* Timed from when its bytes were read (conn_io.c), the wait included. */
    read_ns =
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

    if (sz != NULL && sz->row != FOLIO_SIZED_NONE) { /* looked up already */
        method = sz->method;
        row = sz->row;
        call.page = sz->page;
    } else {
        method = folio_method_find(m->method, m->method_len, &row);
        call.page = NULL;
    }
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
    if (t0 != 0) {
        end = folio_mono_ns();
        dt = end - t0;
        if (w->clock_chain)
            w->clock_ns = end;
    }
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
