/*
 * h_server.c - the server.* methods: ping and methods.  (server.stats is
 * in h_stats.c.)
 */
#include "config.h"

#include "src/rpc.h"
#include "worker/dispatch.h"
#include "worker/h_server.h"

int
folio_h_server_ping(struct folio_call *call)
{
    /* "pong" encoded once: one write of its five bytes, not two. */
    static const char pong[] = {(char)0xa4, 'p', 'o', 'n', 'g'};

    return call->pk->callback(call->pk->data, pong, sizeof(pong));
}

int
folio_h_server_methods(struct folio_call *call)
{
    unsigned i;

    if (msgpack_pack_map(call->pk, folio_nmethods) != 0)
        return -1;
    for (i = 0; i < folio_nmethods; i++)
        if (folio_pack_cstr(call->pk, folio_methods[i].name) != 0 ||
            folio_pack_cstr(call->pk, folio_methods[i].signature) != 0)
            return -1;
    return 0;
}
