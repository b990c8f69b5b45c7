/*
 * methods.c - every RPC method foliod serves, sorted by name (binary
 * search; the position is the method's stats row), and every service's
 * per-worker set-up.  A new method is one line here.
 */
#include "config.h"

#include "shm/stats.h"
#include "worker/dispatch.h"
#include "worker/h_comments.h"
#include "worker/h_server.h"

const struct folio_method folio_methods[] = {
    {"comments.delete", "id:int -> true (admin)", folio_h_comments_delete, 1,
     1, FOLIO_METHOD_ADMIN},
    {"comments.list", "path:str -> [comment]", folio_h_comments_list, 1, 1, 0},
    {"comments.post", "{path:str, author:str, body:str} -> comment",
     folio_h_comments_post, 1, 1, 0},
    {"server.methods", "-> map: method name -> signature",
     folio_h_server_methods, 0, 0, 0},
    {"server.ping", "-> \"pong\"", folio_h_server_ping, 0, 0, 0},
};

const unsigned folio_nmethods = sizeof(folio_methods) / sizeof(folio_methods[0]);

const struct folio_service folio_services[] = {
    {"server", NULL, NULL},
    {"comments", folio_h_comments_init, folio_h_comments_fini},
};

const unsigned folio_nservices =
    sizeof(folio_services) / sizeof(folio_services[0]);

_Static_assert(sizeof(folio_methods) / sizeof(folio_methods[0]) <=
                   FOLIO_MAX_METHODS,
               "raise FOLIO_MAX_METHODS in shm/stats.h");
