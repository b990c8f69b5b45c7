/*
 * methods.c - every RPC method foliod serves, sorted by name (the
 * position is the method's stats row; dispatch.c indexes the names by a
 * perfect hash), and every service's per-worker set-up.  A new method is
 * one line here.
 */
#include "config.h"

#include "shm/stats.h"
#include "worker/dispatch.h"
#include "worker/h_comments.h"
#include "worker/h_corpus.h"
#include "worker/h_freight.h"
#include "worker/h_server.h"
#include "worker/h_stats.h"

const struct folio_method folio_methods[] = {
    {"comments.delete", "id:int -> true (admin)", folio_h_comments_delete, 1,
     1, FOLIO_METHOD_ADMIN, NULL},
    {"comments.list", "path:str -> [comment]", folio_h_comments_list, 1, 1, 0,
     NULL},
    {"comments.post",
     "{path:str, author:str, body:str, reply_to?:int} -> comment",
     folio_h_comments_post, 1, 1, 0, NULL},
    {"corpus.info", "-> {files, lines, bytes, works: [str], ...}",
     folio_h_corpus_info, 0, 0, 0, NULL},
    {"corpus.match_count", "query:str -> int", folio_h_corpus_match_count, 1,
     1, 0, NULL},
    {"corpus.search",
     "query:str, opts?:{limit, offset} -> {count, lines: [{work, line, text}]}",
     folio_h_corpus_search, 1, 2, 0, folio_h_corpus_search_size},
    {"freight.info", "-> map: carriers, bands, skus", folio_h_freight_info,
     0, 0, 0, NULL},
    {"freight.quote", "cep:str|int, items:[map] -> map: weights, options",
     folio_h_freight_quote, 2, 2, 0, NULL},
    {"server.methods", "-> map: method name -> signature",
     folio_h_server_methods, 0, 0, 0, NULL},
    {"server.ping", "-> \"pong\"", folio_h_server_ping, 0, 0, 0,
     NULL},
    {"server.stats", "-> map: server, totals, workers (admin)",
     folio_h_server_stats, 0, 0, FOLIO_METHOD_ADMIN, NULL},
};

const unsigned folio_nmethods = sizeof(folio_methods) / sizeof(folio_methods[0]);

const struct folio_service folio_services[] = {
    {"corpus", folio_corpus_service_init, folio_corpus_service_fini},
    {"server", NULL, NULL},
    {"comments", folio_h_comments_init, folio_h_comments_fini},
    {"freight", folio_h_freight_init, folio_h_freight_fini},
};

const unsigned folio_nservices =
    sizeof(folio_services) / sizeof(folio_services[0]);

_Static_assert(sizeof(folio_methods) / sizeof(folio_methods[0]) <=
                   FOLIO_MAX_METHODS,
               "raise FOLIO_MAX_METHODS in shm/stats.h");
