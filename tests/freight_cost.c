/*
 * freight_cost.c - what one quote costs, without a load generator:
 *
 *   freight_cost [-n N] [-s SEED] DATA          the data layer alone
 *   freight_cost [-n N] -w HOST:PORT [-P DEPTH] DATA   over the wire
 *
 * DATA holds freight/ and catalog.csv (the source tree's data/).  The
 * load is the freight case study's: carts of 1 to 10 catalog SKUs (one
 * of each), 7.5% of CEPs in 00000-000..00999-999, which no band covers.
 * The first form imports DATA into a temporary LMDB environment and times
 * N quotes through shm/freight.h (begin, SKU lookups, quote, end), as a
 * worker runs them, and counts their allocations; under
 *   valgrind --tool=callgrind --collect-atstart=no --toggle-collect=run
 * the instructions of run() divided by N are the cost per quote.  The
 * second sends N freight.quote requests to a running foliod, DEPTH in
 * flight.  Built by `make check', not installed.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <msgpack.h>

#include "shm/freight.h"
#include "src/alloc.h"
#include "src/client.h"
#include "src/clock.h"
#include "src/err.h"
#include "src/rpc.h"

#define NREQ 4096 /* distinct requests, prepared before timing */
#define MAX_CART 10

struct request {
    uint32_t cep;
    unsigned n;
    unsigned sku[MAX_CART];
};

static struct folio_freight_catalog *catalog;
static struct request reqs[NREQ];
static unsigned long codes[16];

static uint64_t rng = 88172645463325252ull;

static uint32_t
rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

static void
load_catalog(const char *path)
{
    struct folio_freight_diag d = {NULL, NULL, 0};
    FILE *f = fopen(path, "r");
    static char buf[1 << 20];
    size_t len;

    if (f == NULL) {
        perror(path);
        exit(1);
    }
    len = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    if (folio_freight_catalog_parse(path, buf, len, &d, &catalog) != 0 ||
        catalog->fc_nskus == 0) {
        fprintf(stderr, "%s: bad catalog\n", path);
        exit(1);
    }
}

static void
prepare(void)
{
    unsigned i, k;

    for (i = 0; i < NREQ; i++) {
        struct request *r = &reqs[i];

        /* 7.5% uncovered: 75 in 1000 */
        r->cep = rnd(1000) < 75 ? rnd(1000000)
                                : 1000000 + rnd(99999999 - 1000000 + 1);
        r->n = 1 + rnd(MAX_CART);
        for (k = 0; k < r->n; k++)
            r->sku[k] = rnd((uint32_t)catalog->fc_nskus);
    }
}

/* The measured loop: what a worker does per freight.quote. */
__attribute__((noinline)) static void
run(struct folio_freight *fr, unsigned long n)
{
    unsigned long i;

    for (i = 0; i < n; i++) {
        const struct request *r = &reqs[i % NREQ];
        struct folio_freight_cart cart = {0, 0, 0};
        struct folio_freight_quote q;
        struct folio_freight_item it;
        unsigned k;
        int rc = 0;

        if (folio_freight_begin(fr) != 0) {
            codes[13]++;
            folio_freight_end(fr);
            continue;
        }
        for (k = 0; k < r->n && rc == 0; k++) {
            const char *sku = catalog->fc_skus[r->sku[k]].fs_sku;

            rc = folio_freight_sku_get(fr, sku, strlen(sku), &it);
            if (rc == 0)
                folio_freight_cart_add(&cart, &it, 1);
        }
        if (rc == 0)
            rc = folio_freight_quote(fr, r->cep, &cart, 5000, &q);
        codes[rc == 0 ? 0 : rc == FOLIO_ENOTFOUND ? 5
                        : rc == FOLIO_ETOOBIG     ? 11
                                                  : 13]++;
        folio_freight_end(fr);
    }
}

static int
direct(const char *data, unsigned long n)
{
    struct folio_freight_summary sum;
    struct folio_freight_diag d = {NULL, NULL, 0};
    struct folio_freight *fr;
    char tmp[] = "/tmp/folio-cost.XXXXXX", env[64], dir[1024], cat[1024];
    char err[1024], cmd[128];
    int present, changed;
    uint64_t t0, t1, a0, a1;

    if (mkdtemp(tmp) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(env, sizeof(env), "%s/freight", tmp);
    snprintf(dir, sizeof(dir), "%s/freight", data);
    snprintf(cat, sizeof(cat), "%s/catalog.csv", data);
    if (folio_freight_import(env, dir, cat, 0, &d, &sum, &present, &changed,
                             err, sizeof(err)) != 0 ||
        folio_freight_open(env, &fr) != 0) {
        fprintf(stderr, "import: %s\n", err);
        return 1;
    }
    run(fr, NREQ); /* warm up */
    memset(codes, 0, sizeof(codes));
    a0 = atomic_load(&folio_alloc_current()->ac_calls);
    t0 = folio_mono_ns();
    run(fr, n);
    t1 = folio_mono_ns();
    a1 = atomic_load(&folio_alloc_current()->ac_calls);
    printf("quotes %lu: %.0f ns each (wall clock), %llu allocations%s\n", n,
           (double)(t1 - t0) / (double)n, (unsigned long long)(a1 - a0),
           folio_alloc_interposed() ? "" : " (not interposed)");
    printf("ok %.1f%%, uncovered (5) %.1f%%, too heavy (11) %.1f%%, "
           "other %.1f%%\n",
           100.0 * codes[0] / n, 100.0 * codes[5] / n, 100.0 * codes[11] / n,
           100.0 * codes[13] / n);
    folio_freight_close(fr);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    return system(cmd) == 0 ? 0 : 1;
}

static void
pack_request(struct folio_client *c, const struct request *r)
{
    msgpack_packer *pk;
    uint32_t id;
    unsigned k;

    pk = folio_client_request(c, 0, "freight.quote", 2, &id);
    msgpack_pack_uint32(pk, r->cep);
    msgpack_pack_array(pk, r->n);
    for (k = 0; k < r->n; k++) {
        msgpack_pack_map(pk, 2);
        folio_pack_cstr(pk, "sku");
        folio_pack_cstr(pk, catalog->fc_skus[r->sku[k]].fs_sku);
        folio_pack_cstr(pk, "qty");
        msgpack_pack_uint32(pk, 1);
    }
}

static int
wire(const char *addr, unsigned long n, unsigned depth)
{
    struct folio_client *c;
    struct folio_reply r;
    char err[256];
    unsigned long sent = 0, got = 0;
    uint64_t t0, t1;

    if (folio_client_open(addr, 10000, &c, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    t0 = folio_mono_ns();
    while (got < n) {
        while (sent < n && sent - got < depth)
            pack_request(c, &reqs[sent++ % NREQ]);
        if (folio_client_flush(c) != 0 || folio_client_reply(c, &r) != 1) {
            fprintf(stderr, "connection lost after %lu replies\n", got);
            return 1;
        }
        codes[r.code < 16 ? r.code : 15]++;
        got++;
    }
    t1 = folio_mono_ns();
    printf("quotes %lu over the wire, %u in flight: %.0f/s\n", n, depth,
           (double)n * 1e9 / (double)(t1 - t0));
    printf("ok %.1f%%, 5 %.1f%%, 11 %.1f%%, other %.1f%%\n",
           100.0 * codes[0] / n, 100.0 * codes[5] / n, 100.0 * codes[11] / n,
           100.0 * (n - codes[0] - codes[5] - codes[11]) / n);
    folio_client_close(c);
    return codes[0] + codes[5] + codes[11] == n ? 0 : 1;
}

int
main(int argc, char **argv)
{
    const char *addr = NULL;
    unsigned long n = 1000000;
    unsigned depth = 1;
    char cat[1024];
    int ch;

    while ((ch = getopt(argc, argv, "n:s:w:P:")) != -1) {
        switch (ch) {
        case 'n':
            n = strtoul(optarg, NULL, 10);
            break;
        case 's':
            rng = strtoull(optarg, NULL, 10) | 1;
            break;
        case 'w':
            addr = optarg;
            break;
        case 'P':
            depth = (unsigned)strtoul(optarg, NULL, 10);
            break;
        default:
            fprintf(stderr, "usage: freight_cost [-n N] [-s SEED] "
                            "[-w HOST:PORT [-P DEPTH]] DATA\n");
            return 2;
        }
    }
    if (optind != argc - 1 || n == 0 || depth == 0) {
        fprintf(stderr, "usage: freight_cost [-n N] [-s SEED] "
                        "[-w HOST:PORT [-P DEPTH]] DATA\n");
        return 2;
    }
    snprintf(cat, sizeof(cat), "%s/catalog.csv", argv[optind]);
    load_catalog(cat);
    prepare();
    return addr != NULL ? wire(addr, n, depth) : direct(argv[optind], n);
}
