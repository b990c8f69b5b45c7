/*
 * comments_backend.h - where the comments service keeps its comments
 * (comments_backend in foliod.conf(5)): the interface the handlers of
 * h_comments.c call once they have read a request's params, and its two
 * implementations: LMDB on this host (h_comments.c, over shm/comments.c)
 * and PostgreSQL, shared by every host (comments_pg.c).  A worker uses
 * one backend, chosen at its start.
 *
 * Each function answers like a handler (worker/dispatch.h): 0 with the
 * result packed, or held (folio_call_hold) and released later; or -1
 * after folio_call_error().
 */
#ifndef FOLIO_COMMENTS_BACKEND_H
#define FOLIO_COMMENTS_BACKEND_H

#include <stdint.h>

struct folio_call;
struct folio_comment_in;
struct folio_worker;

struct folio_comments_backend {
    const char *name;
    /* After fork, before the loop: 0, or a FOLIO_E* (the worker exits). */
    int (*init)(struct folio_worker *w);
    void (*fini)(struct folio_worker *w);
    /* comments.list: `path` as the client sent it, not yet checked. */
    int (*list)(struct folio_call *call, const char *path, uint32_t len);
    /* comments.post: `in` validated (folio_comments_validate). */
    int (*post)(struct folio_call *call, const struct folio_comment_in *in);
    /* comments.delete */
    int (*del)(struct folio_call *call, uint64_t id);
};

/* comments_pg.c */
extern const struct folio_comments_backend folio_comments_pg;

#endif
