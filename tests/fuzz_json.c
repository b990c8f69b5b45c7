/*
 * fuzz_json.c - libFuzzer target: JSON -> msgpack (src/json.c) on request
 * bodies, and what the HTTP face reads from the result: mouthful's POST
 * body (worker/http_comments.c) and the JSON-RPC envelope
 * (worker/http_jsonrpc.c); then msgpack -> JSON back.
 *
 * Oracle:
 *   - a text refused leaves the output as it was, with a reason and a
 *     position inside the text;
 *   - a text accepted becomes exactly one msgpack object, nested no
 *     deeper than the limit, within the output's bound;
 *   - written back as JSON and transcoded again, it is the same msgpack
 *     byte for byte (nothing lost or changed either way);
 *   - written HTML-safe, the text has no '<', '>' or '\'' at all: a
 *     comment body can never reach a page as markup;
 *   - the readers of the HTTP face read it or refuse it with a message.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/buf.h"
#include "src/err.h"
#include "src/json.h"
#include "src/mp.h"
#include "tests/fuzz_harness.h"
#include "worker/http_comments.h"
#include "worker/http_jsonrpc.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DEPTH 16
#define OUT_MAX (64u << 10)

static struct folio_buf mp1, mp2, text, params;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (mp1.b_data == NULL && (folio_buf_init(&mp1, 4096, OUT_MAX) != 0 ||
                               folio_buf_init(&mp2, 4096, 0) != 0 ||
                               folio_buf_init(&text, 4096, 0) != 0 ||
                               folio_buf_init(&params, 4096, 0) != 0))
        fuzz_fail("no memory");
    return 0;
}

static void
readers(void)
{
    struct folio_http_comment_post post;
    struct folio_jsonrpc_call call;
    struct folio_mp_cur c;
    const char *why;
    char err[256];
    uint32_t n, i;

    err[0] = '\0';
    if (folio_http_comment_post_read(mp1.b_data, mp1.b_len, &post, err,
                                     sizeof(err)) == 0) {
        folio_buf_reset(&params);
        if (folio_http_comment_post_params(&params, &post, "k", 1) != 0)
            fuzz_fail("comment params not packed");
    } else if (err[0] == '\0') {
        fuzz_fail("comment body refused without a message");
    }
    /* A request, or a batch of them, as POST /rpc reads it. */
    folio_mp_cur_init(&c, mp1.b_data, mp1.b_len);
    n = 1;
    if (folio_mp_read_array(&c, &n) != 0)
        n = 1;
    for (i = 0; i < n && c.p < c.end; i++) {
        const unsigned char *at = c.p;
        int rc = folio_jsonrpc_read(&c, &call, &why);

        if (rc != 0 && (why == NULL || rc != FOLIO_JSONRPC_INVALID_REQUEST))
            fuzz_fail("bad request without a reason");
        if (c.p <= at)
            fuzz_fail("the envelope reader did not move");
        folio_buf_reset(&text);
        if (rc == 0 && call.has_id &&
            folio_jsonrpc_put_error(&text, &call.id, -32601, "m", 1, 12) != 0)
            fuzz_fail("error response not written");
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    struct folio_json_err e;
    struct folio_mp_scan st;
    struct folio_mp_cur c;
    size_t i;
    int rc;

    LLVMFuzzerInitialize(NULL, NULL);
    folio_buf_reset(&mp1);
    folio_buf_append(&mp1, "x", 1);
    folio_buf_consume(&mp1, 1);
    rc = folio_json_to_mp(p, size, DEPTH, &mp1, &e);
    if (rc != 0) {
        if (folio_buf_pending(&mp1) != 0)
            fuzz_fail("refused, but %zu bytes written",
                      folio_buf_pending(&mp1));
        if (e.msg[0] == '\0' || (rc == FOLIO_EINVAL && e.at > size))
            fuzz_fail("refused at %zu of %zu: '%s'", e.at, size, e.msg);
        return 0;
    }
    /* Work on the pending bytes from their start. */
    memmove(mp1.b_data, mp1.b_data + mp1.b_off, folio_buf_pending(&mp1));
    mp1.b_len -= mp1.b_off;
    mp1.b_off = 0;
    folio_mp_scan_init(&st, OUT_MAX, DEPTH + 1);
    if (folio_mp_scan(&st, mp1.b_data, mp1.b_len) != FOLIO_MP_DONE ||
        st.pos != mp1.b_len)
        fuzz_fail("not one msgpack object (%zu bytes)", mp1.b_len);
    /* Back to JSON, and again to msgpack: the same bytes. */
    folio_buf_reset(&text);
    folio_mp_cur_init(&c, mp1.b_data, mp1.b_len);
    if (folio_json_put_mp(&text, &c, size % 3 == 0 ? 1 : -1, 0) != 0 ||
        c.p != c.end)
        fuzz_fail("not written back");
    folio_buf_reset(&mp2);
    if (folio_json_to_mp(text.b_data, text.b_len, DEPTH, &mp2, &e) != 0)
        fuzz_fail("our own JSON refused: %s: %.*s", e.msg, (int)text.b_len,
                  text.b_data);
    if (mp2.b_len != mp1.b_len || memcmp(mp1.b_data, mp2.b_data, mp1.b_len))
        fuzz_fail("round trip changed the value: %.*s", (int)text.b_len,
                  text.b_data);
    /* HTML-safe: no markup can come out of any string. */
    folio_buf_reset(&text);
    folio_mp_cur_init(&c, mp1.b_data, mp1.b_len);
    if (folio_json_put_mp(&text, &c, -1, FOLIO_JSON_HTML) != 0)
        fuzz_fail("not written back HTML-safe");
    for (i = 0; i < text.b_len; i++)
        if (text.b_data[i] == '<' || text.b_data[i] == '>' ||
            text.b_data[i] == '\'')
            fuzz_fail("'%c' in HTML-safe JSON: %.*s", text.b_data[i],
                      (int)text.b_len, text.b_data);
    readers();
    return 0;
}
