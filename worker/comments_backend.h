/*
 * comments_backend.h - where the comments service keeps its comments
 * (comments_backend in foliod.conf(5)): the interface the handlers of
 * h_comments.c call once they have read a request's params, and its two
 * implementations: LMDB on this host (comments_lmdb.c, over
 * shm/comments.c) and PostgreSQL, shared by every host (comments_pg.c).
 * A worker opens one backend at its start; each function is given the
 * state it opened, as every function of the worker is given what it works
 * on.
 *
 * Each request function answers like a handler (worker/dispatch.h): 0
 * with the result packed, or held (folio_call_hold) and released later;
 * or -1 after folio_call_error().
 */
#ifndef FOLIO_COMMENTS_BACKEND_H
#define FOLIO_COMMENTS_BACKEND_H

#include <stddef.h>
#include <stdint.h>

struct folio_call;
struct folio_ccache;
struct folio_comment_in;
struct folio_worker;

/*
 * A backend in use: each backend's own state (struct folio_lmdb, struct
 * folio_pg) begins with it, and its functions take it back.
 */
struct folio_comments_be {
    const struct folio_comments_backend *ops;
};

struct folio_comments_backend {
    const char *name;
    /*
     * After fork, before the loop: 0 with *out, owned by the caller until
     * close; or a FOLIO_E* (the worker exits).
     */
    int (*open)(struct folio_worker *w, struct folio_comments_be **out);
    /* Close and free; calls still held are dropped (the worker exits). */
    void (*close)(struct folio_comments_be *be);
    /* comments.list: `path` as the client sent it, not yet checked. */
    int (*list)(struct folio_comments_be *be, struct folio_call *call,
                const char *path, uint32_t len);
    /*
     * comments.list's reply size before it runs (folio_size_fn of
     * dispatch.h): a page of the cache to be sent by reference sets
     * FOLIO_REPLY_BYREF; FOLIO_REPLY_SMALL when nothing can be told.
     * A page found sets call->page: list answers with it, not looking
     * it up again.
     */
    size_t (*list_size)(struct folio_comments_be *be, struct folio_call *call,
                        const char *path, uint32_t len);
    /* comments.post: `in` validated (folio_comments_validate). */
    int (*post)(struct folio_comments_be *be, struct folio_call *call,
                const struct folio_comment_in *in);
    /* comments.delete */
    int (*del)(struct folio_comments_be *be, struct folio_call *call,
               uint64_t id);
    /*
     * The page cache (comments_cache.h) as valid now, NULL when there is
     * none: what lists are answered from, and what the HTTP face attaches
     * its JSON to.
     */
    struct folio_ccache *(*cache)(struct folio_comments_be *be);
};

/* comments_lmdb.c */
extern const struct folio_comments_backend folio_comments_lmdb;
/* comments_pg.c */
extern const struct folio_comments_backend folio_comments_pg;

#endif
