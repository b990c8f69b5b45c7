/*
 * h_corpus.c - corpus.match_count, corpus.search and corpus.info over the
 * image the master built (shm/corpus.h).  No allocation per request: a
 * search uses the scratch area made when the worker starts.
 */
#include "config.h"

#include <stdio.h>

#include "shm/corpus.h"
#include "src/rpc.h"
#include "worker/dispatch.h"
#include "worker/h_corpus.h"
#include "worker/worker_int.h"

/* The packed size of a search reply around its lines, and per line. */
#define SEARCH_HEAD 48
#define SEARCH_PER_LINE 32

static struct folio_corpus_scratch *scratch;
static uint32_t ids[FOLIO_CORPUS_MAX_LIMIT];
static uint32_t lines;    /* in the corpus */
static size_t line_max;   /* the largest line's work and text, packed */

static const struct folio_corpus *
corpus_of(const struct folio_call *call)
{
    const struct folio_worker_data *d = call->w->args->data;

    return d != NULL ? d->corpus : NULL;
}

static int
no_corpus(struct folio_call *call)
{
    return folio_call_error(call, FOLIO_ST_UNAVAILABLE,
                            "no corpus loaded: fetch one with `make corpus` "
                            "or start foliod with --corpus DIR");
}

/* The query param: a str of 1..FOLIO_CORPUS_MAX_QUERY bytes. */
static int
read_query(struct folio_call *call, const char **q, uint32_t *len)
{
    enum folio_mp_type t = folio_mp_type(&call->params);

    if (folio_mp_read_str(&call->params, q, len) != 0)
        return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                "query must be a str, not %s",
                                folio_mp_type_name(t));
    if (*len == 0)
        return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                "query must not be empty");
    if (*len > FOLIO_CORPUS_MAX_QUERY)
        return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                "query is %u bytes, over the limit of %d",
                                *len, FOLIO_CORPUS_MAX_QUERY);
    return 0;
}

int
folio_h_corpus_match_count(struct folio_call *call)
{
    const struct folio_corpus *c;
    const char *q;
    uint32_t len;
    uint64_t n;

    if (read_query(call, &q, &len) != 0)
        return -1;
    if ((c = corpus_of(call)) == NULL)
        return no_corpus(call);
    if (folio_corpus_count(c, q, len, &n) != 0)
        return folio_call_error(call, FOLIO_ST_INTERNAL, "count failed");
    return msgpack_pack_uint64(call->pk, n);
}

/* opts: nil or {"limit": 0..1000, "offset": >= 0}, each key once. */
static int
read_opts(struct folio_call *call, uint64_t *offset, uint32_t *limit)
{
    enum folio_mp_type t;
    const char *k;
    uint32_t n, klen, i;
    uint64_t v;
    unsigned seen = 0, key;
    char b[72];

    *offset = 0;
    *limit = FOLIO_CORPUS_DEFAULT_LIMIT;
    if (call->nparams < 2 || folio_mp_read_nil(&call->params) == 0)
        return 0;
    t = folio_mp_type(&call->params);
    if (folio_mp_read_map(&call->params, &n) != 0)
        return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                "opts must be a map, not %s",
                                folio_mp_type_name(t));
    for (i = 0; i < n; i++) {
        if (folio_mp_read_str(&call->params, &k, &klen) != 0)
            return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                    "opts keys must be str");
        if (folio_mp_str_eq(k, klen, "limit"))
            key = 1;
        else if (folio_mp_str_eq(k, klen, "offset"))
            key = 2;
        else
            return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                    "unknown option '%s' (limit, offset)",
                                    folio_call_printable(k, klen, b,
                                                         sizeof(b)));
        if (seen & key)
            return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                    "duplicate option \"%.*s\"", (int)klen,
                                    k);
        seen |= key;
        if (folio_mp_read_uint(&call->params, &v) != 0)
            return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                    "%.*s must be a non-negative int",
                                    (int)klen, k);
        if (klen == 5) {
            if (v > FOLIO_CORPUS_MAX_LIMIT)
                return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                        "limit must be 0..%d",
                                        FOLIO_CORPUS_MAX_LIMIT);
            *limit = (uint32_t)v;
        } else {
            *offset = v;
        }
    }
    return 0;
}

int
folio_h_corpus_search(struct folio_call *call)
{
    const struct folio_corpus *c;
    struct folio_corpus_line ln;
    const char *q;
    uint32_t len, limit, n, i;
    uint64_t offset, count;
    msgpack_packer *pk = call->pk;

    if (read_query(call, &q, &len) != 0 ||
        read_opts(call, &offset, &limit) != 0)
        return -1;
    if ((c = corpus_of(call)) == NULL || scratch == NULL)
        return no_corpus(call);
    if (folio_corpus_search(c, scratch, q, len, offset, limit, &count, ids,
                            &n) != 0)
        return folio_call_error(call, FOLIO_ST_INTERNAL, "search failed");
    if (msgpack_pack_map(pk, 2) != 0 || folio_pack_cstr(pk, "count") != 0 ||
        msgpack_pack_uint64(pk, count) != 0 ||
        folio_pack_cstr(pk, "lines") != 0 || msgpack_pack_array(pk, n) != 0)
        return -1;
    for (i = 0; i < n; i++) {
        folio_corpus_line(c, ids[i], &ln);
        if (msgpack_pack_map(pk, 3) != 0 || folio_pack_cstr(pk, "work") != 0 ||
            folio_pack_str(pk, ln.work, ln.work_len) != 0 ||
            folio_pack_cstr(pk, "line") != 0 ||
            msgpack_pack_uint32(pk, ln.line) != 0 ||
            folio_pack_cstr(pk, "text") != 0 ||
            folio_pack_str(pk, ln.text, ln.len) != 0)
            return -1;
    }
    return 0;
}

size_t
folio_h_corpus_search_size(struct folio_call *call)
{
    const char *q;
    uint32_t len, limit;
    uint64_t offset;

    if (corpus_of(call) == NULL || read_query(call, &q, &len) != 0 ||
        read_opts(call, &offset, &limit) != 0)
        return FOLIO_REPLY_SMALL; /* an error reply */
    if (limit > lines)
        limit = lines;
    return SEARCH_HEAD + (size_t)limit * line_max;
}

int
folio_h_corpus_info(struct folio_call *call)
{
    const struct folio_corpus *c;
    struct folio_corpus_info in;
    msgpack_packer *pk = call->pk;
    const char *w;
    char sum[24];
    uint32_t i, wlen;

    if ((c = corpus_of(call)) == NULL)
        return no_corpus(call);
    folio_corpus_info(c, &in);
    snprintf(sum, sizeof(sum), "%016llx", (unsigned long long)in.checksum);
    if (msgpack_pack_map(pk, 10) != 0 || folio_pack_cstr(pk, "files") != 0 ||
        msgpack_pack_uint32(pk, in.files) != 0 ||
        folio_pack_cstr(pk, "lines") != 0 ||
        msgpack_pack_uint32(pk, in.lines) != 0 ||
        folio_pack_cstr(pk, "bytes") != 0 ||
        msgpack_pack_uint64(pk, in.bytes) != 0 ||
        folio_pack_cstr(pk, "works") != 0 ||
        msgpack_pack_array(pk, in.files) != 0)
        return -1;
    for (i = 0; i < in.files; i++) {
        w = folio_corpus_work(c, i, &wlen);
        if (folio_pack_str(pk, w, wlen) != 0)
            return -1;
    }
    if (folio_pack_cstr(pk, "index_bytes") != 0 ||
        msgpack_pack_uint64(pk, in.index_bytes) != 0 ||
        folio_pack_cstr(pk, "build_ms") != 0 ||
        msgpack_pack_uint64(pk, in.build_ms) != 0 ||
        folio_pack_cstr(pk, "load_ms") != 0 ||
        msgpack_pack_uint64(pk, in.load_ms) != 0 ||
        folio_pack_cstr(pk, "cached") != 0 ||
        (in.from_cache ? msgpack_pack_true(pk) : msgpack_pack_false(pk)) != 0 ||
        folio_pack_cstr(pk, "checksum") != 0 || folio_pack_cstr(pk, sum) != 0 ||
        folio_pack_cstr(pk, "dir") != 0 || folio_pack_cstr(pk, in.dir) != 0)
        return -1;
    return 0;
}

int
folio_corpus_service_init(struct folio_worker *w)
{
    const struct folio_corpus *c;
    struct folio_corpus_info in;
    struct folio_corpus_line ln;
    uint32_t id;

    if (w->args->data == NULL || (c = w->args->data->corpus) == NULL)
        return 0;
    /* No page faults in the first queries: about 10 ms here, once. */
    folio_corpus_prefault(c);
    /* What a search reply can take, for the output's room (a few ms). */
    folio_corpus_info(c, &in);
    lines = in.lines;
    line_max = 0;
    for (id = 0; id < lines; id++) {
        folio_corpus_line(c, id, &ln);
        if (SEARCH_PER_LINE + ln.work_len + ln.len > line_max)
            line_max = SEARCH_PER_LINE + ln.work_len + ln.len;
    }
    return folio_corpus_scratch_new(&scratch);
}

void
folio_corpus_service_fini(struct folio_worker *w)
{
    folio_corpus_scratch_free(scratch);
    scratch = NULL;
}
