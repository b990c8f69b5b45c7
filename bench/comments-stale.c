/*
 * comments-stale - how stale can a comments.list be on another host?
 * Used by bench/hosts.sh beside folio-bench: posts a comment on one host
 * (--post), then lists the page on every connection to the others
 * (--list, --conns per address, so that each worker is asked) until each
 * one lists it, and reports the delays from the post's acknowledgement to
 * each connection's first list that has it: with comments_backend =
 * postgres that is PostgreSQL's NOTIFY reaching every worker's cache.
 *
 *   comments-stale --post HOST:PORT --list HOST:PORT [--list ...]
 *                  [-n POSTS] [--conns K] [--path PATH] [--json]
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <msgpack.h>

#include "src/client.h"
#include "src/clock.h"
#include "src/mp.h"
#include "src/rpc.h"

#define MAX_LIST 16
#define MAX_CONNS 256
#define GIVE_UP_NS 10000000000ull /* a post not seen in 10 s: failed */

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static void
usage(void)
{
    fprintf(stderr, "usage: comments-stale --post HOST:PORT --list HOST:PORT "
                    "[--list ...] [-n POSTS] [--conns K] [--path PATH] "
                    "[--json]\n");
    exit(2);
}

/* The id of the comment a post's reply holds, or 0. */
static uint64_t
reply_id(struct folio_reply *r)
{
    struct folio_mp_cur c = r->result;
    const char *k;
    uint32_t n, len;
    uint64_t id;

    if (r->code != 0 || folio_mp_read_map(&c, &n) != 0 ||
        folio_mp_read_str(&c, &k, &len) != 0 ||
        !folio_mp_str_eq(k, len, "id") || folio_mp_read_uint(&c, &id) != 0)
        return 0;
    return id;
}

/* 1 if the list reply holds comment `id`, 0 if not, -1 on error. */
static int
lists_id(struct folio_reply *r, uint64_t id)
{
    struct folio_mp_cur c = r->result, e;
    const char *k;
    uint32_t n, i, m, len;
    uint64_t v;

    if (r->code != 0 || folio_mp_read_array(&c, &n) != 0)
        return -1;
    for (i = 0; i < n; i++) {
        e = c;
        if (folio_mp_read_map(&e, &m) != 0 ||
            folio_mp_read_str(&e, &k, &len) != 0 ||
            folio_mp_read_uint(&e, &v) != 0)
            return -1;
        if (v == id)
            return 1;
        if (folio_mp_skip(&c) != 0)
            return -1;
    }
    return 0;
}

int
main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"post", required_argument, NULL, 'p'},
        {"list", required_argument, NULL, 'l'},
        {"conns", required_argument, NULL, 'k'},
        {"path", required_argument, NULL, 'P'},
        {"json", no_argument, NULL, 'j'},
        {NULL, 0, NULL, 0}};
    const char *post = NULL, *list[MAX_LIST], *path = "/bench/stale/";
    struct folio_client *pc, *lc[MAX_CONNS];
    struct folio_reply r;
    msgpack_packer *pk;
    char err[256], body[64];
    uint64_t *d, t_ack, id;
    int nlist = 0, conns = 4, posts = 100, json = 0, ch, i, k, nl, left,
        nd = 0, seen[MAX_CONNS];

    while ((ch = getopt_long(argc, argv, "n:", lo, NULL)) != -1) {
        switch (ch) {
        case 'p':
            post = optarg;
            break;
        case 'l':
            if (nlist == MAX_LIST)
                usage();
            list[nlist++] = optarg;
            break;
        case 'k':
            conns = atoi(optarg);
            break;
        case 'n':
            posts = atoi(optarg);
            break;
        case 'P':
            path = optarg;
            break;
        case 'j':
            json = 1;
            break;
        default:
            usage();
        }
    }
    nl = nlist * conns;
    if (post == NULL || nlist == 0 || conns < 1 || nl > MAX_CONNS ||
        posts < 1)
        usage();
    if (folio_client_open(post, 10000, &pc, err, sizeof(err)) != 0) {
        fprintf(stderr, "comments-stale: %s\n", err);
        return 3;
    }
    for (i = 0; i < nl; i++) {
        if (folio_client_open(list[i % nlist], 10000, &lc[i], err,
                              sizeof(err)) != 0) {
            fprintf(stderr, "comments-stale: %s\n", err);
            return 3;
        }
        /* cached everywhere before the first post */
        if (folio_client_call_str(lc[i], "comments.list", path, &r) != 1 ||
            folio_client_call_str(lc[i], "comments.list", path, &r) != 1 ||
            r.code != 0) {
            fprintf(stderr, "comments-stale: list on %s failed\n",
                    list[i % nlist]);
            return 3;
        }
    }
    d = calloc((size_t)posts * (size_t)nl, sizeof(*d));
    for (k = 0; k < posts; k++) {
        snprintf(body, sizeof(body), "stale probe %d", k);
        pk = folio_client_request(pc, 0, "comments.post", 1, NULL);
        msgpack_pack_map(pk, 3);
        folio_pack_cstr(pk, "path");
        folio_pack_cstr(pk, path);
        folio_pack_cstr(pk, "author");
        folio_pack_cstr(pk, "comments-stale");
        folio_pack_cstr(pk, "body");
        folio_pack_cstr(pk, body);
        if (folio_client_flush(pc) != 0 || folio_client_reply(pc, &r) != 1 ||
            (id = reply_id(&r)) == 0) {
            fprintf(stderr, "comments-stale: post %d failed\n", k);
            return 1;
        }
        t_ack = folio_mono_ns();
        memset(seen, 0, sizeof(seen));
        for (left = nl; left > 0;) {
            for (i = 0; i < nl; i++) {
                if (seen[i])
                    continue;
                if (folio_client_call_str(lc[i], "comments.list", path, &r) !=
                    1) {
                    fprintf(stderr, "comments-stale: list failed\n");
                    return 1;
                }
                if (lists_id(&r, id) == 1) {
                    seen[i] = 1;
                    d[nd++] = folio_mono_ns() - t_ack;
                    left--;
                }
            }
            if (left > 0 && folio_mono_ns() - t_ack > GIVE_UP_NS) {
                fprintf(stderr,
                        "comments-stale: comment %llu not listed on %d "
                        "connections after 10 s\n",
                        (unsigned long long)id, left);
                return 1;
            }
        }
    }
    qsort(d, (size_t)nd, sizeof(*d), cmp_u64);
    if (json)
        printf("{\"posts\": %d, \"lists\": %d, \"p50_us\": %.0f, "
               "\"p99_us\": %.0f, \"max_us\": %.0f}\n",
               posts, nd, d[nd / 2] / 1e3, d[(size_t)nd * 99 / 100] / 1e3,
               d[nd - 1] / 1e3);
    else
        printf("%d posts, %d lists: delay p50 %.0f us, p99 %.0f us, max "
               "%.0f us\n",
               posts, nd, d[nd / 2] / 1e3, d[(size_t)nd * 99 / 100] / 1e3,
               d[nd - 1] / 1e3);
    free(d);
    for (i = 0; i < nl; i++)
        folio_client_close(lc[i]);
    folio_client_close(pc);
    return 0;
}
