/*
 * check_pprof.c - profiles: the profile.proto codec (a round trip, gzip,
 * and hostile bytes: truncations, bad ids, flipped bytes), merging
 * (shared elements kept once, labels, other sample types refused), the
 * top table (flat, cum once per sample, pprof's units), and the sampler
 * of src/prof/prof.h in this very process: a CPU profile names the busy
 * function, heap sampling estimates what was allocated and what is still
 * in use.
 */
#include "config.h"

#include <sys/wait.h>

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/alloc.h"
#include "src/buf.h"
#include "src/clock.h"
#include "src/err.h"
#include "src/prof/pprof.h"
#include "src/prof/prof.h"
#include "tests/check_run.h"

/* A profile of two stacks: main > work > leaf (inlined into work), and
 * main > work > work (recursion), with labels and a comment. */
static void
build(struct folio_pprof *p)
{
    struct folio_pprof_line l[2];
    struct folio_pprof_label lab;
    uint32_t st[3];
    int64_t v[2];
    int m, f_main, f_work, f_leaf, loc_main, loc_work, loc_leaf;

    ck_assert_int_eq(folio_pprof_init(p), 0);
    ck_assert_int_ge(folio_pprof_add_type(p, "samples", "count"), 0);
    ck_assert_int_ge(folio_pprof_add_type(p, "cpu", "nanoseconds"), 0);
    p->period_type = p->types[1];
    p->period = 10000000;
    p->duration_nanos = 2000000000;
    p->time_nanos = 1700000000000000000;
    m = folio_pprof_add_mapping(p, 0x400000, 0x500000, 0x1000, "/usr/sbin/foliod",
                                "abcdef");
    ck_assert_int_eq(m, 0);
    f_main = folio_pprof_add_function(p, "main", "main.c", 10);
    f_work = folio_pprof_add_function(p, "work", "work.c", 20);
    f_leaf = folio_pprof_add_function(p, "leaf", "work.c", 5);
    l[0].fn = (uint32_t)f_main;
    l[0].line = 12;
    loc_main = folio_pprof_add_location(p, 1, 0x401000, l, 1);
    l[0].fn = (uint32_t)f_work;
    l[0].line = 22;
    loc_work = folio_pprof_add_location(p, 1, 0x402000, l, 1);
    l[0].fn = (uint32_t)f_leaf;
    l[0].line = 6;
    l[1].fn = (uint32_t)f_work;
    l[1].line = 25;
    loc_leaf = folio_pprof_add_location(p, 1, 0x402100, l, 2);
    ck_assert_int_ge(loc_leaf, 0);
    lab.key = (uint32_t)folio_pprof_cstr(p, "worker");
    lab.str = (uint32_t)folio_pprof_cstr(p, "1");
    lab.num = 0;
    lab.unit = 0;
    st[0] = (uint32_t)loc_leaf;
    st[1] = (uint32_t)loc_work;
    st[2] = (uint32_t)loc_main;
    v[0] = 3;
    v[1] = 30000000;
    ck_assert_int_eq(folio_pprof_add_sample(p, st, 3, v, &lab, 1), 0);
    st[0] = (uint32_t)loc_work;
    st[1] = (uint32_t)loc_work;
    v[0] = 1;
    v[1] = 10000000;
    ck_assert_int_eq(folio_pprof_add_sample(p, st, 3, v, NULL, 0), 1);
    ck_assert_int_ge(folio_pprof_add_comment(p, "built by %s", "check_pprof"),
                     0);
}

static void
encode(const struct folio_pprof *p, struct folio_buf *b, int gz)
{
    memset(b, 0, sizeof(*b));
    ck_assert_int_eq(gz ? folio_pprof_encode_gz(p, b) : folio_pprof_encode(p, b),
                     0);
}

START_TEST(test_round_trip)
{
    struct folio_pprof p, q;
    struct folio_buf b;
    char err[256];

    build(&p);
    encode(&p, &b, _i);
    if (_i)
        ck_assert_int_eq((unsigned char)b.b_data[0], 0x1f);
    ck_assert_int_eq(folio_pprof_decode(folio_buf_at(&b, 0),
                                        folio_buf_pending(&b), &q, err,
                                        sizeof(err)),
                     0);
    ck_assert_uint_eq(q.ntypes, 2);
    ck_assert_str_eq(folio_pprof_text(&q, q.types[1].type), "cpu");
    ck_assert_str_eq(folio_pprof_text(&q, q.types[1].unit), "nanoseconds");
    ck_assert_uint_eq(q.nsamples, 2);
    ck_assert_uint_eq(q.nlocations, 3);
    ck_assert_uint_eq(q.nfunctions, 3);
    ck_assert_uint_eq(q.nmappings, 1);
    ck_assert_int_eq(q.period, 10000000);
    ck_assert_int_eq(q.duration_nanos, 2000000000);
    ck_assert_int_eq(q.time_nanos, 1700000000000000000);
    ck_assert_str_eq(folio_pprof_text(&q, q.mappings[0].file),
                     "/usr/sbin/foliod");
    ck_assert_str_eq(folio_pprof_text(&q, q.mappings[0].build_id), "abcdef");
    ck_assert_uint_eq(q.mappings[0].start, 0x400000);
    ck_assert(q.mappings[0].has_functions && q.mappings[0].has_lines);
    /* The inlined location: leaf at line 6, in work at line 25. */
    ck_assert_uint_eq(q.locations[2].nline, 2);
    ck_assert_str_eq(
        folio_pprof_text(&q, q.functions[q.lines[q.locations[2].line].fn].name),
        "leaf");
    ck_assert_int_eq(q.lines[q.locations[2].line + 1].line, 25);
    ck_assert_uint_eq(q.locations[2].mapping, 1);
    ck_assert_uint_eq(q.samples[0].nstack, 3);
    ck_assert_uint_eq(q.stack[q.samples[0].stack], 2);
    ck_assert_int_eq(q.values[q.samples[0].value + 1], 30000000);
    ck_assert_uint_eq(q.samples[0].nlabel, 1);
    ck_assert_str_eq(folio_pprof_text(&q, q.labels[q.samples[0].label].str),
                     "1");
    ck_assert_uint_eq(q.ncomments, 1);
    ck_assert_str_eq(folio_pprof_text(&q, q.comments[0]), "built by check_pprof");
    folio_pprof_free(&q);
    folio_pprof_free(&p);
    folio_buf_free(&b);
}
END_TEST

/* Hand-made protobuf: what the decoder must refuse, with a reason. */
START_TEST(test_decode_refuses)
{
    static const struct {
        const char *what;
        const char *bytes;
        size_t len;
    } bad[] = {
        /* string_table without "" first */
        {"no empty first string", "\x32\x01x", 3},
        /* a sample naming location 7, with no such location */
        {"unknown location", "\x32\x00\x12\x02\x08\x07", 6},
        /* a location naming mapping 3 */
        {"unknown mapping", "\x32\x00\x22\x04\x08\x01\x10\x03", 8},
        /* a function name past the string table */
        {"string out of table", "\x32\x00\x2a\x04\x08\x01\x10\x09", 8},
        /* a length running past the end */
        {"truncated", "\x32\x00\x12\x09\x08", 5},
        /* a varint that never ends */
        {"endless varint", "\x48\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
         12},
        /* a group (wire type 3) */
        {"group", "\x0b", 1},
        /* two locations with id 1 */
        {"same id", "\x32\x00\x22\x02\x08\x01\x22\x02\x08\x01", 10},
        /* a value count that is not the number of sample types */
        {"values", "\x32\x00\x0a\x00\x12\x04\x12\x02\x01\x02", 10},
        /* gzip of garbage */
        {"gzip", "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage", 17},
    };
    struct folio_pprof q;
    char err[256];
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        ck_assert_msg(folio_pprof_decode(bad[i].bytes, bad[i].len, &q, err,
                                         sizeof(err)) == FOLIO_EINVAL,
                      "%s: accepted", bad[i].what);
        ck_assert_msg(err[0] != '\0', "%s: no reason", bad[i].what);
        ck_assert_uint_eq(q.nstrings, 0); /* left empty */
        folio_pprof_free(&q);
    }
    /* Empty input is an empty profile, as pprof reads it... with no "". */
    ck_assert_int_eq(folio_pprof_decode("", 0, &q, err, sizeof(err)),
                     FOLIO_EINVAL);
    folio_pprof_free(&q);
}
END_TEST

/* Every truncation and many flipped bytes: an error or a profile whose
 * references all hold, never a crash (the sanitizers watch). */
START_TEST(test_decode_mutations)
{
    struct folio_pprof p, q;
    struct folio_buf b;
    char err[256], *copy;
    size_t len, i, k;
    uint64_t x = 88172645463325252ull;
    uint32_t j;

    build(&p);
    encode(&p, &b, 0);
    len = folio_buf_pending(&b);
    copy = malloc(len);
    for (i = 0; i < len; i++) {
        if (folio_pprof_decode(folio_buf_at(&b, 0), i, &q, err,
                               sizeof(err)) == 0) {
            for (j = 0; j < q.nstack; j++)
                ck_assert_uint_lt(q.stack[j], q.nlocations);
        }
        folio_pprof_free(&q);
    }
    for (k = 0; k < 3000; k++) {
        memcpy(copy, folio_buf_at(&b, 0), len);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        copy[x % len] ^= (char)(1u << (x >> 32) % 8);
        if (folio_pprof_decode(copy, len, &q, err, sizeof(err)) == 0) {
            struct folio_pprof_top_row *rows;
            uint32_t n;
            int64_t total;

            for (j = 0; j < q.nlocations; j++)
                ck_assert_uint_le(q.locations[j].line + q.locations[j].nline,
                                  q.nlines);
            if (q.ntypes > 0 &&
                folio_pprof_top(&q, 0, &rows, &n, &total) == 0)
                free(rows);
        }
        folio_pprof_free(&q);
    }
    free(copy);
    folio_buf_free(&b);
    folio_pprof_free(&p);
}
END_TEST

START_TEST(test_merge)
{
    const struct folio_pprof_tag t0[] = {{"worker", "0", 0, NULL}, {"pid", NULL, 100, "pid"}};
    const struct folio_pprof_tag t1[] = {{"worker", "1", 0, NULL}, {"pid", NULL, 101, "pid"}};
    struct folio_pprof a, b, out, other;
    uint32_t i, workers = 0;

    build(&a);
    build(&b);
    ck_assert_int_eq(folio_pprof_init(&out), 0);
    ck_assert_int_eq(folio_pprof_merge(&out, &a, t0, 2), 0);
    ck_assert_int_eq(folio_pprof_merge(&out, &b, t1, 2), 0);
    /* Both processes' samples; their functions, locations, mapping once. */
    ck_assert_uint_eq(out.nsamples, 4);
    ck_assert_uint_eq(out.nfunctions, 3);
    ck_assert_uint_eq(out.nlocations, 3);
    ck_assert_uint_eq(out.nmappings, 1);
    ck_assert_uint_eq(out.ncomments, 1); /* the same comment, once */
    ck_assert_uint_eq(out.ntypes, 2);
    ck_assert_int_eq(out.period, 10000000);
    for (i = 0; i < out.nsamples; i++) {
        const struct folio_pprof_sample *s = &out.samples[i];
        uint32_t k;

        /* The worker label replaced the sample's own; pid added. */
        ck_assert_uint_eq(s->nlabel, 2);
        for (k = 0; k < s->nlabel; k++) {
            const struct folio_pprof_label *l = &out.labels[s->label + k];

            if (strcmp(folio_pprof_text(&out, l->key), "worker") == 0)
                workers |= 1u << atoi(folio_pprof_text(&out, l->str));
            else
                ck_assert_int_eq(l->num, i < 2 ? 100 : 101);
        }
    }
    ck_assert_uint_eq(workers, 3);
    /* A heap profile does not merge into a CPU one. */
    ck_assert_int_eq(folio_pprof_init(&other), 0);
    folio_pprof_add_type(&other, "inuse_space", "bytes");
    ck_assert_int_eq(folio_pprof_merge(&out, &other, t0, 2),
                     FOLIO_EINVAL);
    folio_pprof_free(&other);
    folio_pprof_free(&a);
    folio_pprof_free(&b);
    folio_pprof_free(&out);
}
END_TEST

START_TEST(test_top)
{
    struct folio_pprof p;
    struct folio_pprof_top_row *r;
    uint32_t n, i;
    int64_t total;
    char *text = NULL;
    size_t len = 0;
    FILE *f;

    build(&p);
    ck_assert_int_eq(folio_pprof_type_index(&p, NULL), 1);
    ck_assert_int_eq(folio_pprof_type_index(&p, "samples"), 0);
    ck_assert_int_eq(folio_pprof_type_index(&p, "nope"), -1);
    ck_assert_int_eq(folio_pprof_top(&p, 1, &r, &n, &total), 0);
    ck_assert_int_eq(total, 40000000);
    ck_assert_uint_eq(n, 3);
    /* leaf: flat 30ms; work: flat 10ms (the recursion), cum 40ms once. */
    ck_assert_str_eq(folio_pprof_text(&p, r[0].name), "leaf");
    ck_assert_int_eq(r[0].flat, 30000000);
    ck_assert_str_eq(folio_pprof_text(&p, r[1].name), "work");
    ck_assert_int_eq(r[1].flat, 10000000);
    ck_assert_int_eq(r[1].cum, 40000000);
    ck_assert_str_eq(folio_pprof_text(&p, r[2].name), "main");
    ck_assert_int_eq(r[2].flat, 0);
    ck_assert_int_eq(r[2].cum, 40000000);
    free(r);
    f = open_memstream(&text, &len);
    ck_assert_int_eq(folio_pprof_top_print(f, &p, 1, 2), 0);
    fclose(f);
    for (i = 0; text[i] != '\0'; i++)
        ;
    ck_assert_msg(strstr(text, "File: foliod\nBuild ID: abcdef\nbuilt by "
                               "check_pprof\nType: cpu\n") == text,
                  "%s", text);
    ck_assert_msg(strstr(text, "Duration: 2s, Total samples = 40ms ( 2.00%)\n"),
                  "%s", text);
    ck_assert_msg(strstr(text, "Showing nodes accounting for 40ms, 100% of "
                               "40ms total\n"),
                  "%s", text);
    ck_assert_msg(strstr(text, "Showing top 2 nodes out of 3\n"), "%s", text);
    ck_assert_msg(strstr(text, "      flat  flat%   sum%        cum   cum%\n"
                               "      30ms 75.00% 75.00%       30ms 75.00%  "
                               "leaf (inline)\n"
                               "      10ms 25.00%   100%       40ms   100%  "
                               "work\n"),
                  "%s", text);
    free(text);
    folio_pprof_free(&p);
}
END_TEST

/* google-pprof's symbolized profiles: symbols, then gperftools' formats. */
START_TEST(test_legacy)
{
    static const uint64_t header[] = {0, 3, 0, 10000, 0};
    struct folio_pprof p, h;
    struct folio_buf b;
    struct folio_pprof_line ln;
    const char *text, *bin;
    uint32_t st[1];
    int64_t v[4] = {2, 2048, 5, 9000};
    uint64_t rec[3];

    build(&p);
    memset(&b, 0, sizeof(b));
    ck_assert_int_eq(folio_pprof_encode_legacy(&p, 1, &b), 0);
    ck_assert_int_eq(folio_buf_reserve(&b, 1), 0);
    b.b_data[b.b_len] = '\0';
    text = folio_buf_at(&b, 0);
    ck_assert(strncmp(text, "--- symbol\nbinary=foliod\n", 25) == 0);
    /* Location 2: leaf inlined into work, callers first. */
    ck_assert_ptr_nonnull(strstr(text, "0x0000000000001020 work--leaf\n"));
    ck_assert_ptr_nonnull(bin = strstr(text, "---\n--- profile\n"));
    bin += 16;
    ck_assert_int_eq(memcmp(bin, header, sizeof(header)), 0);
    /* The first sample: 3 samples of leaf < work < main. */
    memcpy(rec, bin + sizeof(header), sizeof(rec));
    ck_assert_uint_eq(rec[0], 3);
    ck_assert_uint_eq(rec[1], 3);
    ck_assert_uint_eq(rec[2], 0x1020);
    folio_buf_free(&b);
    ck_assert_int_eq(folio_pprof_encode_legacy(&p, 7, &b), FOLIO_EINVAL);
    folio_buf_free(&b);

    ck_assert_int_eq(folio_pprof_init(&h), 0);
    folio_pprof_add_type(&h, "alloc_objects", "count");
    folio_pprof_add_type(&h, "alloc_space", "bytes");
    folio_pprof_add_type(&h, "inuse_objects", "count");
    folio_pprof_add_type(&h, "inuse_space", "bytes");
    ln.fn = (uint32_t)folio_pprof_add_function(&h, "mdb_env_open", "", 0);
    ln.line = 0;
    st[0] = (uint32_t)folio_pprof_add_location(&h, 0, 0x1234, &ln, 1);
    ck_assert_int_eq(folio_pprof_add_sample(&h, st, 1, v, NULL, 0), 0);
    memset(&b, 0, sizeof(b));
    ck_assert_int_eq(folio_pprof_encode_legacy(&h, 3, &b), 0);
    ck_assert_int_eq(folio_buf_reserve(&b, 1), 0);
    b.b_data[b.b_len] = '\0';
    text = folio_buf_at(&b, 0);
    ck_assert_msg(strstr(text, "0x0000000000001000 mdb_env_open\n---\nheap "
                               "profile:      5:     9000 [     2:     2048] "
                               "@ heapprofile\n"
                               "     5:     9000 [     2:     2048] @ "
                               "0x0000000000001000\n") != NULL,
                  "%s", text);
    folio_buf_free(&b);
    folio_pprof_free(&h);
    folio_pprof_free(&p);
}
END_TEST

START_TEST(test_fmt)
{
    char b[32];

    ck_assert_str_eq(folio_pprof_fmt(b, sizeof(b), 1270000000, "nanoseconds",
                                     NULL),
                     "1.27s");
    ck_assert_str_eq(folio_pprof_fmt(b, sizeof(b), 160000000, "nanoseconds",
                                     NULL),
                     "160ms");
    ck_assert_str_eq(folio_pprof_fmt(b, sizeof(b), 10000000, "nanoseconds",
                                     "s"),
                     "0.01s");
    ck_assert_str_eq(folio_pprof_fmt(b, sizeof(b), 524288, "bytes", NULL),
                     "512kB");
    ck_assert_str_eq(folio_pprof_fmt(b, sizeof(b), 1572864, "bytes", NULL),
                     "1.50MB");
    ck_assert_str_eq(folio_pprof_fmt(b, sizeof(b), 0, "bytes", NULL), "0");
    ck_assert_str_eq(folio_pprof_fmt(b, sizeof(b), 1234, "count", NULL), "1234");
}
END_TEST

#ifdef FOLIO_PROFILING
static volatile uint64_t sink;

__attribute__((noinline)) static void
spin_here(void)
{
    uint64_t i;

    for (i = 0; i < 200000; i++)
        sink += i * i;
}

/* The first comment of p that holds `text`, or NULL. */
static const char *
comment_with(const struct folio_pprof *p, const char *text)
{
    uint32_t i;

    for (i = 0; i < p->ncomments; i++)
        if (strstr(folio_pprof_text(p, p->comments[i]), text) != NULL)
            return folio_pprof_text(p, p->comments[i]);
    return NULL;
}

START_TEST(test_cpu_sampler)
{
    struct folio_pprof p, again;
    struct folio_pprof_top_row *r;
    struct folio_prof_stats st;
    struct folio_prof_syms *syms;
    uint64_t t0, lookups;
    uint32_t n, i;
    int64_t total, spin_cum = 0;
    int cached = 0;

    folio_prof_init(0);
    ck_assert_int_eq(folio_prof_cpu_start(1000), 0);
    ck_assert_int_eq(folio_prof_cpu_start(100), FOLIO_EAGAIN);
    /* Until 50 samples, however slow the machine is (the CPU clock). */
    t0 = folio_mono_ms();
    do {
        spin_here();
        folio_prof_get_stats(&st);
    } while (st.cpu_samples < 50 && folio_mono_ms() - t0 < 50000);
    folio_prof_cpu_stop();
    ck_assert_int_eq(folio_prof_cpu_running(), 0);
    ck_assert_uint_ge(st.cpu_samples, 50);
    ck_assert_int_eq(folio_prof_cpu_profile(&p), 0);
    ck_assert_int_eq(folio_prof_cpu_profile(&again), FOLIO_EINVAL); /* taken */
    /* Addresses only, until named. */
    ck_assert_uint_gt(p.nlocations, 0);
    for (i = 0; i < p.nlocations; i++)
        ck_assert_uint_eq(p.locations[i].nline, 0);
    lookups = folio_prof_sym_lookups();
    ck_assert_int_eq(folio_prof_syms_new(&syms), 0);
    ck_assert_int_eq(folio_prof_symbolize(syms, &p, 0), 0);
    ck_assert_uint_eq(folio_prof_sym_lookups() - lookups, p.nlocations);
    ck_assert_int_eq(folio_pprof_top(&p, 1, &r, &n, &total), 0);
    ck_assert_int_gt(total, 0);
    for (i = 0; i < n; i++)
        if (strcmp(folio_pprof_text(&p, r[i].name), "spin_here") == 0)
            spin_cum = r[i].cum;
    /* The loop is spin_here, and stacks reach the test's own frames. */
    ck_assert_msg(spin_cum * 2 > total, "spin_here has %lld of %lld",
                  (long long)spin_cum, (long long)total);
    ck_assert_str_eq(folio_pprof_text(&p, p.types[1].type), "cpu");
    ck_assert_uint_ge(p.nmappings, 1);
    /* pprof names the profile after the first mapping: the executable. */
    ck_assert_ptr_nonnull(
        strstr(folio_pprof_text(&p, p.mappings[0].file), "check_pprof"));
    ck_assert(p.mappings[0].has_functions);
    /*
     * The sampler's cost and the kernel's share, in comments (a sanitizer
     * build says first that malloc is not interposed).
     */
    ck_assert_msg(comment_with(&p, "# pid ") != NULL, "no '# pid' comment");
    ck_assert_msg(comment_with(&p, "user-space stacks only") != NULL,
                  "no word of the kernel's share");
    free(r);
    folio_pprof_free(&p);

    /* A second profile: its addresses come from the symbolizer's table. */
    ck_assert_int_eq(folio_prof_cpu_start(1000), 0);
    t0 = folio_mono_ms();
    do {
        spin_here();
        folio_prof_get_stats(&st);
    } while (st.cpu_samples < 20 && folio_mono_ms() - t0 < 50000);
    ck_assert_int_eq(folio_prof_cpu_profile(&p), 0);
    ck_assert_int_eq(folio_prof_symbolize(syms, &p, 0), 0);
    for (i = 0; i < p.ncomments; i++)
        if (strncmp(folio_pprof_text(&p, p.comments[i]), "# symbols: ", 11) ==
            0)
            cached = strstr(folio_pprof_text(&p, p.comments[i]),
                            " 0 from its table") == NULL;
    ck_assert_msg(cached, "no address of the second profile was kept");
    folio_pprof_free(&p);
    folio_prof_syms_free(syms);
}
END_TEST

/*
 * A mapping this process does not have at that place (a worker of
 * another binary, a library only a worker loaded): named from its file on
 * disk, the same names.  The profile's mappings and addresses are moved
 * up by 1 TiB, where nothing of ours is.
 */
START_TEST(test_symbolize_from_file)
{
    const uint64_t shift = 1ull << 40;
    struct folio_pprof p;
    struct folio_prof_stats st;
    struct folio_prof_syms *syms;
    uint64_t t0;
    uint32_t i, found = 0;

    folio_prof_init(0);
    ck_assert_int_eq(folio_prof_cpu_start(1000), 0);
    t0 = folio_mono_ms();
    do {
        spin_here();
        folio_prof_get_stats(&st);
    } while (st.cpu_samples < 30 && folio_mono_ms() - t0 < 50000);
    ck_assert_int_eq(folio_prof_cpu_profile(&p), 0);
    for (i = 0; i < p.nmappings; i++) {
        p.mappings[i].start += shift;
        p.mappings[i].limit += shift;
    }
    for (i = 0; i < p.nlocations; i++)
        if (p.locations[i].mapping != 0)
            p.locations[i].address += shift;
    ck_assert_int_eq(folio_prof_syms_new(&syms), 0);
    ck_assert_int_eq(folio_prof_symbolize(syms, &p, 0), 0);
    for (i = 0; i < p.nsamples; i++)
        found += folio_pprof_on_stack(&p, i, "spin_here");
    ck_assert_msg(found > 0, "spin_here not named from the file (%u samples)",
                  p.nsamples);
    ck_assert(p.mappings[0].has_functions);
    folio_pprof_free(&p);
    folio_prof_syms_free(syms);
}
END_TEST

#define BLOCKS 4000
#define BLOCK 3000

static uint64_t
type_sum(const struct folio_pprof *p, const char *type)
{
    int t = folio_pprof_type_index(p, type);
    uint64_t sum = 0;
    uint32_t i;

    ck_assert_int_ge(t, 0);
    for (i = 0; i < p->nsamples; i++)
        sum += (uint64_t)p->values[p->samples[i].value + (uint32_t)t];
    return sum;
}

START_TEST(test_heap_sampler)
{
    static void *blocks[BLOCKS];
    struct folio_pprof p;
    uint64_t inuse, allocated, inuse_before, alloc_before;
    int i;

    /* 12 MB at one sample per 8 KiB: about 1500 samples. */
    folio_prof_init(8192);
    ck_assert_int_eq(folio_prof_heap_profile(&p, 0), 0);
    inuse_before = type_sum(&p, "inuse_space");
    alloc_before = type_sum(&p, "alloc_space");
    folio_pprof_free(&p);
    for (i = 0; i < BLOCKS; i++)
        ck_assert_ptr_nonnull(blocks[i] = folio_malloc(BLOCK));
    ck_assert_int_eq(folio_prof_heap_profile(&p, 0), 0);
    ck_assert_str_eq(folio_pprof_text(&p, p.default_type), "inuse_space");
    inuse = type_sum(&p, "inuse_space") - inuse_before;
    allocated = type_sum(&p, "alloc_space") - alloc_before;
    folio_pprof_free(&p);
    /* Within 25% of what was allocated: ~1500 samples leave it ~3%. */
    ck_assert_msg(fabs((double)inuse - BLOCKS * BLOCK) < 0.25 * BLOCKS * BLOCK,
                  "in use %llu, allocated %d", (unsigned long long)inuse,
                  BLOCKS * BLOCK);
    ck_assert(fabs((double)allocated - BLOCKS * BLOCK) < 0.25 * BLOCKS * BLOCK);
    for (i = 0; i < BLOCKS; i++)
        folio_free(blocks[i]);
    ck_assert_int_eq(folio_prof_heap_profile(&p, 1), 0);
    ck_assert_str_eq(folio_pprof_text(&p, p.default_type), "alloc_space");
    /* Freed: out of the in-use counts, still in the allocations. */
    ck_assert_uint_lt(type_sum(&p, "inuse_space"),
                      inuse_before + BLOCKS * BLOCK / 10);
    ck_assert_uint_ge(type_sum(&p, "alloc_space") - alloc_before,
                      BLOCKS * BLOCK * 3 / 4);
    folio_pprof_free(&p);
    folio_prof_heap_reset();
    ck_assert_int_eq(folio_prof_heap_profile(&p, 1), 0);
    ck_assert_uint_lt(type_sum(&p, "alloc_space"), BLOCKS * BLOCK / 10);
    folio_pprof_free(&p);
    /* Off: nothing sampled, nothing kept. */
    ck_assert_uint_eq(folio_prof_heap_rate(0), 8192);
    ck_assert_ptr_null(folio_alloc_sampler.fs_sample);
    ck_assert_int_eq(folio_prof_heap_profile(&p, 0), 0);
    ck_assert_uint_eq(p.nsamples, 0);
    folio_pprof_free(&p);
}
END_TEST

/*
 * A fork's child has none of its parent's samples: what the master
 * allocated before forking a worker is never charged to the worker.
 */
START_TEST(test_after_fork)
{
    static void *blocks[BLOCKS];
    struct folio_pprof p;
    pid_t pid;
    int i, st;

    folio_prof_init(8192);
    for (i = 0; i < BLOCKS; i++)
        ck_assert_ptr_nonnull(blocks[i] = folio_malloc(BLOCK));
    ck_assert_int_eq(folio_prof_heap_profile(&p, 1), 0);
    ck_assert_uint_gt(type_sum(&p, "alloc_space"), BLOCKS * BLOCK / 2);
    folio_pprof_free(&p);
    ck_assert_int_ge(pid = fork(), 0);
    if (pid == 0) {
        uint64_t before_alloc, before_inuse;
        void *mine;

        folio_prof_after_fork();
        if (folio_prof_heap_profile(&p, 1) != 0)
            _exit(10);
        before_alloc = type_sum(&p, "alloc_space");
        before_inuse = type_sum(&p, "inuse_space");
        folio_pprof_free(&p);
        if (before_alloc != 0 || before_inuse != 0)
            _exit(11);
        /* Its own allocations are sampled, at the parent's rate. */
        for (i = 0; i < 100; i++)
            if ((mine = folio_malloc(65536)) != NULL)
                folio_free(mine);
        if (folio_prof_heap_profile(&p, 1) != 0)
            _exit(10);
        _exit(type_sum(&p, "alloc_space") > 65536 * 50 ? 0 : 12);
    }
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %d",
                  WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    for (i = 0; i < BLOCKS; i++)
        folio_free(blocks[i]);
}
END_TEST

/*
 * SIGPROF while the heap sampler takes a stack: the CPU sample gets that
 * stack (from heap_sample into its caller), never a lone frame of the
 * unwinder's.
 */
START_TEST(test_cpu_during_heap_sampling)
{
    struct folio_pprof p;
    struct folio_prof_stats st;
    struct folio_prof_syms *syms;
    uint64_t t0;
    uint32_t i, lone = 0, in_sampler = 0;
    void *b;

    folio_prof_init(1); /* every allocation sampled: mostly unwinding */
    ck_assert_int_eq(folio_prof_cpu_start(1000), 0);
    t0 = folio_mono_ms();
    do {
        if ((b = folio_malloc(64)) != NULL)
            folio_free(b);
        folio_prof_get_stats(&st);
    } while (st.cpu_samples < 200 && folio_mono_ms() - t0 < 50000);
    folio_prof_cpu_stop();
    folio_prof_heap_rate(0);
    ck_assert_int_eq(folio_prof_cpu_profile(&p), 0);
    ck_assert_int_eq(folio_prof_syms_new(&syms), 0);
    ck_assert_int_eq(folio_prof_symbolize(syms, &p, 0), 0);
    for (i = 0; i < p.nsamples; i++) {
        lone += p.samples[i].nstack == 1;
        in_sampler += folio_pprof_on_stack(&p, i, "heap_sample");
    }
    ck_assert_msg(lone == 0, "%u of %u samples are one frame", lone,
                  p.nsamples);
    ck_assert_msg(in_sampler > 0, "no sample in heap_sample of %u", p.nsamples);
    folio_pprof_free(&p);
    folio_prof_syms_free(syms);
}
END_TEST

/* The sampling intervals are exponential with the rate as their mean. */
START_TEST(test_heap_intervals)
{
    struct folio_prof_stats st;
    void *p;
    int i;

    folio_prof_init(65536);
    folio_prof_get_stats(&st);
    /* 64 MB in 64 KiB steps through one block: ~1024 samples expected. */
    for (i = 0; i < 1024; i++) {
        p = folio_malloc(65536 - 16);
        folio_free(p);
    }
    {
        struct folio_prof_stats st2;

        folio_prof_get_stats(&st2);
        ck_assert_msg(st2.heap_samples - st.heap_samples > 400 &&
                          st2.heap_samples - st.heap_samples < 1000,
                      "%llu samples",
                      (unsigned long long)(st2.heap_samples - st.heap_samples));
        ck_assert_uint_eq(st2.heap_live, st.heap_live);
    }
}
END_TEST
#endif

static Suite *
pprof_suite(void)
{
    Suite *s = suite_create("pprof");
    TCase *tc = tcase_create("codec");

    tcase_add_loop_test(tc, test_round_trip, 0, 2);
    tcase_add_test(tc, test_decode_refuses);
    tcase_add_test(tc, test_decode_mutations);
    tcase_add_test(tc, test_merge);
    tcase_add_test(tc, test_top);
    tcase_add_test(tc, test_fmt);
    tcase_add_test(tc, test_legacy);
    suite_add_tcase(s, tc);
#ifdef FOLIO_PROFILING
    tc = tcase_create("sampler");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_cpu_sampler);
    tcase_add_test(tc, test_symbolize_from_file);
    tcase_add_test(tc, test_heap_sampler);
    tcase_add_test(tc, test_heap_intervals);
    tcase_add_test(tc, test_after_fork);
    tcase_add_test(tc, test_cpu_during_heap_sampling);
    suite_add_tcase(s, tc);
#endif
    return s;
}

int
main(void)
{
    return folio_check_run(pprof_suite());
}
