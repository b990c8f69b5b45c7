/*
 * dispatch.h - the method table and what a handler sees.
 *
 * Each service's handlers live in worker/h_<service>.c and are listed in
 * worker/methods.c, sorted by name; the index of a method in that table is
 * its row in the stats slot.  A handler reads its params with the mp
 * cursor and packs its result with msgpack-c into the connection's output
 * buffer; on error it calls folio_call_error() and whatever it packed is
 * discarded; a call answered later holds its reply (folio_call_hold,
 * worker/conn.h).  Handlers must not allocate on read paths.
 */
#ifndef FOLIO_DISPATCH_H
#define FOLIO_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "src/conf.h"
#include "src/err.h"
#include "src/mp.h"
#include "src/rpc.h"

struct folio_worker;

struct folio_buf;

struct folio_bytes;

struct folio_conn;

struct folio_call {
    msgpack_packer *pk;          /* pack exactly one value: the result */
    struct folio_buf *out;       /* what pk writes into: the connection's
                                    output, for handlers that copy stored
                                    bytes or patch a header they packed */
    struct folio_mp_cur params;  /* positioned at the first param */
    uint32_t nparams;
    int admin;                   /* came over the admin socket */
    int notify;                  /* a notification: no reply is sent */
    uint32_t msgid;
    size_t head;                 /* where the reply begins in *out,
                                    from its first pending byte (packing
                                    may move the pending bytes) */
    struct folio_worker *w;
    struct folio_conn *conn;     /* whose request this is; NULL outside a
                                    connection (tests, fuzzers) */
    unsigned row;                /* its stats row */
    uint64_t t0;                 /* when its bytes were read (ns): its
                                    latency's start; 0: not timed */
    int held;                    /* set by folio_call_hold (conn.h) */
    struct folio_bytes *page;    /* the cached page its method's reply_size
                                    found for these very params, handed to
                                    the handler (struct folio_sized):
                                    borrowed; NULL: none */
    int err_code;                /* set by folio_call_error */
    size_t err_len;
    char err_msg[512];
};

typedef int (*folio_handler_fn)(struct folio_call *call);

/*
 * A method's reply size, at most, for a call not yet run (params as the
 * handler would see them; nothing is packed).  For methods whose replies
 * can be large: the connection makes room for that much, or waits for
 * it, before the handler runs.  Bad params: FOLIO_REPLY_SMALL (the call
 * will fail).  A reply that will be a shared page sent by reference
 * (folio_call_page) returns the budget it needs, with FOLIO_REPLY_BYREF
 * set: its size, or 0 when the page counts already (another output sends
 * it).  A reply_size that found the reply ready (a cached page) may set
 * call->page to it: the handler is then handed that page rather than
 * looking it up again.
 */
typedef size_t (*folio_size_fn)(struct folio_call *call);

/* What any reply is taken to need unless its method says more. */
#define FOLIO_REPLY_SMALL 1024
/*
 * A reply_size's flag: the reply goes by reference (a shared page), so
 * the size with it is budget (out.c), not room in the output buffer.
 */
#define FOLIO_REPLY_BYREF ((size_t)1 << (sizeof(size_t) * 8 - 1))

#define FOLIO_METHOD_ADMIN 0x01 /* admin socket only */

struct folio_method {
    const char *name;
    const char *signature; /* one line, "query:str -> int" */
    folio_handler_fn fn;
    uint8_t min_params;
    uint8_t max_params;
    uint8_t flags;
    folio_size_fn reply_size; /* NULL: FOLIO_REPLY_SMALL */
};

/* Per-process service set-up, after fork, before the loop starts. */
struct folio_service {
    const char *name;
    /* Returns 0, or a FOLIO_E* that makes the worker exit FATAL. */
    int (*init)(struct folio_worker *w);
    void (*fini)(struct folio_worker *w);
};

/* worker/methods.c: every method, sorted by name, and every service. */
extern const struct folio_method folio_methods[];
extern const unsigned folio_nmethods;
extern const struct folio_service folio_services[];
extern const unsigned folio_nservices;

/*
 * folio_method_find - the method named by span name/len, or NULL.
 * *row is its stats row (FOLIO_MAX_METHODS for an unknown method).
 */
const struct folio_method *folio_method_find(const char *name, uint32_t len,
                                             unsigned *row);

/*
 * folio_call_error - set the call's error; returns -1 so a handler can
 * `return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT, "...")`.
 */
int folio_call_error(struct folio_call *call, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * folio_call_printable - bytes of a request fit for an error message, as
 * folio_utf8_quote() makes them: valid UTF-8 whatever the bytes, control
 * characters and stray bytes escaped \xNN, cut at a character boundary
 * to at most cap - 1 bytes ("..." when cut).  Every handler that quotes
 * what it was sent goes through here.  cap >= 8.  Returns out.
 */
const char *folio_call_printable(const char *s, uint32_t len, char *out,
                                 size_t cap);

/*
 * folio_dispatch_record - count one answered call in the stats slot:
 * requests or notifications, errors, its method row's code, latency
 * since t0 (ns; 0, or stats off: nothing is counted); and, when that
 * is over slow_request, the slow-request line (peer: its connection's,
 * folio_addr_pack; its params are not kept while a call is held).
 * Called at the release of a held call.
 */
void folio_dispatch_record(struct folio_worker *w, unsigned row, int notify,
                           int code, uint64_t t0, const uint64_t peer[3]);

/*
 * folio_dispatch_reply_size - the room the reply to request (or
 * notification) m needs in its connection's output before it is run:
 * its method's reply_size, FOLIO_REPLY_SMALL for other methods, for an
 * unknown one and for calls that will be refused; with
 * FOLIO_REPLY_BYREF when that room is budget for a page sent by
 * reference (see folio_size_fn).  Runs nothing.  *sz: what it learned
 * (the method, when it looked it up; the cached page the reply will be,
 * when reply_size found one), for folio_dispatch of the same m if
 * nothing runs in between (nothing is held: drop it when the call waits
 * instead).
 */
struct folio_sized {
    const struct folio_method *method; /* looked up by name (NULL: none) */
    unsigned row;                      /* its row; FOLIO_SIZED_NONE: not
                                          looked up (the rest unset) */
    struct folio_bytes *page;          /* its reply_size's page (borrowed,
                                          see folio_size_fn), or NULL */
};
#define FOLIO_SIZED_NONE (~0u)

size_t folio_dispatch_reply_size_slow(struct folio_worker *w,
                                      const struct folio_rpc_msg *m,
                                      int admin, struct folio_sized *sz);

/* Bit n: a method of name length n (< 64) has a reply_size; all until
 * the method index is built (dispatch.c). */
extern uint64_t folio_dispatch_sized_lens;

static inline size_t
folio_dispatch_reply_size(struct folio_worker *w,
                          const struct folio_rpc_msg *m, int admin,
                          struct folio_sized *sz)
{
    sz->row = FOLIO_SIZED_NONE; /* the rest is read only when looked up */
    /* Most calls (a ping) are told apart by their name's length alone. */
    if (m->method_len >= 64 ||
        !(folio_dispatch_sized_lens & ((uint64_t)1 << m->method_len)))
        return FOLIO_REPLY_SMALL;
    return folio_dispatch_reply_size_slow(w, m, admin, sz);
}

/*
 * folio_dispatch_times - whether folio_dispatch measures each call under
 * configuration cfg (stats or slow_request on): then it returns each
 * one's time.  Inline: conn.c asks at every turn.
 */
static inline int
folio_dispatch_times(const struct folio_config *cfg)
{
    return cfg->stats || cfg->slow_request_ms != 0;
}

/*
 * folio_dispatch - run one parsed request or notification of connection
 * c (NULL outside a connection) and pack its reply (if any) into `out`.
 * Counts it in the stats slot, where it is also the request in progress
 * while its handler runs (the watchdog's view); logs it when slower than
 * slow_request.  Returns the call's time in ns when folio_dispatch_times
 * (its handler's, a held call's hold not included), else 0.  sz: what
 * folio_dispatch_reply_size just gave for m, or NULL.  Called by the
 * faces (and tests).
 */
uint64_t folio_dispatch(struct folio_worker *w, struct folio_conn *c,
                        const struct folio_rpc_msg *m, int admin,
                        const struct folio_sized *sz, struct folio_buf *out);

#endif
