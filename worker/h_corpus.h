/*
 * h_corpus.h - handlers of the corpus.* methods, and the corpus service's
 * per-worker set-up (the search scratch area).
 */
#ifndef FOLIO_H_CORPUS_H
#define FOLIO_H_CORPUS_H

#include <stddef.h>

struct folio_call;
struct folio_worker;

int folio_h_corpus_info(struct folio_call *call);
int folio_h_corpus_match_count(struct folio_call *call);
int folio_h_corpus_search(struct folio_call *call);

/* folio_h_corpus_search_size - corpus.search's reply size, at most. */
size_t folio_h_corpus_search_size(struct folio_call *call);

/* folio_corpus_service_init/fini - the worker's search scratch area. */
int folio_corpus_service_init(struct folio_worker *w);
void folio_corpus_service_fini(struct folio_worker *w);

#endif
