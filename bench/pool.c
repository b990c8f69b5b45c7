/*
 * pool.c - folio-bench's pool of requests (bench.h): the container the
 * workloads (workload.c) and the other protocols (peer.c) fill before
 * the run, and the engine copies requests from: the bytes of every
 * request, each one's kind and expected answer, and what describes one
 * in a message.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "src/mp.h"
#include "src/rpc.h"

const char *const folio_bench_kind_method[BENCH_NKINDS] = {
    "server.ping",   "corpus.match_count", "freight.quote",
    "comments.list", "comments.post",      "peer",
    "corpus.search",
};

int
folio_bench_pool_push(struct bench_pool *p, uint32_t start,
                      enum bench_kind kind, enum bench_expect expect,
                      int64_t x_int, const char *x_str, uint32_t ok_codes)
{
    struct bench_req *r, *nr;
    uint32_t len;

    if (p->bytes.b_failed)
        return -1;
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 64;
        if ((nr = realloc(p->reqs, p->cap * sizeof(*nr))) == NULL)
            return -1;
        p->reqs = nr;
    }
    len = (uint32_t)p->bytes.b_len - start;
    r = &p->reqs[p->n++];
    memset(r, 0, sizeof(*r));
    r->off = start;
    r->len = len;
    r->kind = (uint8_t)kind;
    r->expect = (uint8_t)expect;
    r->x_int = x_int;
    r->x_str = x_str;
    r->ok_codes = ok_codes;
    p->ok_codes |= ok_codes;
    if (len > p->maxlen)
        p->maxlen = len;
    return 0;
}

void
folio_bench_pool_free(struct bench_pool *p)
{
    folio_buf_free(&p->bytes);
    free(p->reqs);
    p->reqs = NULL;
    p->n = p->cap = 0;
}

void
folio_bench_req_label(const struct bench_pool *p, const struct bench_req *r,
                      char *buf, size_t len)
{
    struct folio_rpc_msg m;
    const char *why, *s;
    uint32_t slen;

    if (r->kind == BENCH_K_PEER) {
        snprintf(buf, len, "%s", p->desc);
        return;
    }
    if (folio_rpc_parse(p->bytes.b_data + r->off, r->len, &m, &why) != 0) {
        snprintf(buf, len, "%s", folio_bench_kind_method[r->kind]);
        return;
    }
    if (m.nparams > 0 && folio_mp_read_str(&m.params, &s, &slen) == 0)
        snprintf(buf, len, "%.*s \"%.*s\"", (int)m.method_len, m.method,
                 (int)(slen < 100 ? slen : 100), s);
    else
        snprintf(buf, len, "%.*s", (int)m.method_len, m.method);
}
