/*
 * h_comments.h - handlers of the comments.* methods and the comments
 * service's per-worker set-up (its backend, comments_backend.h, opened
 * after fork).
 */
#ifndef FOLIO_H_COMMENTS_H
#define FOLIO_H_COMMENTS_H

struct folio_call;
struct folio_worker;

/* comments.list [path] -> [comment...] */
int folio_h_comments_list(struct folio_call *call);
/* comments.post [{"path", "author", "body"}] -> comment */
int folio_h_comments_post(struct folio_call *call);
/* comments.delete [id] -> true (admin socket only) */
int folio_h_comments_delete(struct folio_call *call);

/*
 * folio_h_comments_cache - this worker's cache of encoded pages, valid
 * now (comments_backend.h), or NULL: the HTTP face's GET /v1/comments
 * answers from the JSON it attaches to them.
 */
struct folio_ccache;
struct folio_ccache *folio_h_comments_cache(void);

/* Service hooks: open the configured backend in this worker; close it. */
int folio_h_comments_init(struct folio_worker *w);
void folio_h_comments_fini(struct folio_worker *w);

#endif
