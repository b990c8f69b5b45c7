/*
 * opts.c - folio-bench's command line (folio-bench(1)): one table of
 * options, from which the usage and --help (each option with what it
 * does and its default), the getopt table, the parsing and the
 * defaults are all made, as foliod's src/conf.c does; then the checks
 * between options and the defaults that depend on the mode.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/escape.h"
#include "src/conf.h"
#include "src/cpus.h"
#include "src/defaults.h"

enum opt_kind {
    K_FLAG,     /* int, 1 when given */
    K_INT,      /* int in [min, max] */
    K_U32,      /* uint32_t in [min, max] */
    K_U64,      /* uint64_t in [min, max] */
    K_DOUBLE,   /* double in [dmin, dmax] */
    K_DURATION, /* uint64_t ns; a bare number in `unit` ns; min 1: not 0 */
    K_STR,      /* const char *: the argument itself */
    K_FN,       /* parse(): NULL, or what is wrong with the value */
    K_HELP,
    K_VERSION
};

#define OPT_OR 0x1u     /* the usage joins it and the next: [-a x | -b y] */
#define OPT_HIDDEN 0x2u /* an old spelling: parsed, not shown */

struct opt {
    const char *name; /* --name */
    int shortopt;     /* -x, or 0 */
    const char *arg;  /* the value, as the usage names it; NULL: none */
    enum opt_kind kind;
    size_t off; /* of the field in struct bench_opts */
    uint64_t min, max;
    double dmin, dmax, unit;
    const char *(*parse)(struct bench_opts *o, const char *v);
    const char *bad;   /* what a bad value is, "%s" the value */
    const char *def;   /* the default, parsed before the command line */
    const char *shown; /* the default as --help says it, when def is not
                          it (it depends on other options) */
    const char *help;
    unsigned flags;
};

#define O(f) offsetof(struct bench_opts, f)

static const char *host_set(struct bench_opts *o, const char *v);
static const char *socket_set(struct bench_opts *o, const char *v);
static const char *stages_set(struct bench_opts *o, const char *v);
static const char *pid_set(struct bench_opts *o, const char *v);
static const char *max_errors_set(struct bench_opts *o, const char *v);
static const char *proto_set(struct bench_opts *o, const char *v);
static const char *key_set(struct bench_opts *o, const char *v);
static const char *path_set(struct bench_opts *o, const char *v);
static const char *raw_request_set(struct bench_opts *o, const char *v);
static const char *raw_reply_end_set(struct bench_opts *o, const char *v);

/* In the order of the man page's synopsis. */
/* clang-format off */
static const struct opt opts[] = {
    {.name = "host", .shortopt = 'H', .arg = "host:port", .kind = K_FN,
     .parse = host_set, .def = FOLIO_DEFAULT_LISTEN,
     .help = "the server: HOST:PORT, [V6ADDR]:PORT or unix:PATH",
     .flags = OPT_OR},
    {.name = "socket", .shortopt = 'U', .arg = "socket", .kind = K_FN,
     .parse = socket_set, .help = "the server's Unix socket (also --unix)"},
    {.name = "unix", .arg = "socket", .kind = K_FN, .parse = socket_set,
     .flags = OPT_HIDDEN},
    {.name = "connections", .shortopt = 'c', .arg = "conns", .kind = K_INT,
     .off = O(conns), .min = 1, .max = BENCH_MAX_CONNS,
     .bad = "%s is not 1 to 100000", .def = "50",
     .shown = "50; rounds: all of a round",
     .help = "connections; in rounds, the requests in flight"},
    {.name = "threads", .shortopt = 't', .arg = "threads", .kind = K_INT,
     .off = O(threads), .min = 1, .max = 1024, .bad = "%s is not 1 to 1024",
     .shown = "the CPUs, at most conns; rounds: 1",
     .help = "threads, each with its own event loop and share of the "
             "connections"},
    {.name = "pipeline", .shortopt = 'P', .arg = "depth", .kind = K_INT,
     .off = O(pipeline), .min = 1, .max = BENCH_MAX_DEPTH,
     .bad = "%s is not 1 to 4096", .def = "1",
     .help = "requests in flight on each connection, 1 to 4096"},
    {.name = "duration", .shortopt = 'd', .arg = "duration",
     .kind = K_DURATION, .off = O(duration_ns), .min = 1, .unit = 1e9,
     .bad = "bad duration '%s'", .shown = "5s unless -n; rounds: no end",
     .help = "how long to send after the warm-up", .flags = OPT_OR},
    {.name = "requests", .shortopt = 'n', .arg = "requests", .kind = K_U64,
     .off = O(total), .min = 1, .max = UINT64_MAX / 2,
     .bad = "bad count '%s'", .shown = "rounds: 20",
     .help = "stop after sending this many measured requests; rounds: the "
             "requests of a round"},
    {.name = "warmup", .arg = "duration", .kind = K_DURATION,
     .off = O(warmup_ns), .unit = 1e9, .bad = "bad duration '%s'",
     .def = "0", .help = "send this long before measuring"},
    {.name = "rate", .shortopt = 'R', .arg = "rate", .kind = K_DOUBLE,
     .off = O(rate), .dmin = 1e-3, .dmax = 1e9, .bad = "bad rate '%s'",
     .help = "the open loop: requests per second over all connections"},
    {.name = "stages", .arg = "stages", .kind = K_FN, .parse = stages_set,
     .help = "the ramp's virtual users, DURATION:USERS,... (e.g. "
             "30s:240,60s:480,10s:0)"},
    {.name = "rounds", .arg = "n", .kind = K_U64, .off = O(rounds),
     .max = UINT64_MAX / 2, .bad = "bad count '%s'", .def = "0",
     .help = "rounds to run; 0: until -d or an interrupt"},
    {.name = "workload", .shortopt = 'w',
     .arg = "ping | corpus | search | freight | comments | mixed",
     .kind = K_STR, .off = O(workload), .shown = "ping; rounds: corpus",
     .help = "the requests sent (other protocols: ping, get, set, version, "
             "raw; --proto http: http, the default, or one of these over "
             "the HTTP face)"},
    {.name = "queries", .arg = "file", .kind = K_STR, .off = O(queries),
     .help = "the corpus workload's queries, one a line (a tab and the "
             "count it must be may follow)"},
    {.name = "corpus", .arg = "dir", .kind = K_STR, .off = O(corpus),
     .help = "the corpus workload's queries drawn from the text files in "
             "dir, their counts checked"},
    {.name = "catalog", .arg = "file", .kind = K_STR, .off = O(catalog),
     .help = "the SKU catalog (CSV) the freight carts are drawn from "
             "(without one: items by weight and size)"},
    {.name = "uncovered", .arg = "percent", .kind = K_DOUBLE,
     .off = O(uncovered), .dmax = 100, .bad = "%s is not a percentage",
     .def = "7.5", .help = "freight: CEPs outside every band"},
    {.name = "write-ratio", .arg = "ratio", .kind = K_DOUBLE,
     .off = O(write_ratio), .dmax = 1, .bad = "%s is not 0 to 1",
     .def = "0.01", .help = "comments: the share of comments.post, 0 to 1"},
    {.name = "pages", .arg = "n", .kind = K_U32, .off = O(pages), .min = 1,
     .max = 100000000, .bad = "bad count '%s'", .def = "1000",
     .help = "comments: the pages"},
    {.name = "zipf", .arg = "s", .kind = K_DOUBLE, .off = O(zipf),
     .dmax = 10, .bad = "%s is not 0 to 10", .def = "1",
     .help = "comments: the exponent of the pages' popularity (Zipf's law)"},
    {.name = "mix", .arg = "spec", .kind = K_STR, .off = O(mix),
     .shown = "corpus:40,freight:40,comments:20",
     .help = "the mixed workload's weights, WORKLOAD:WEIGHT,..."},
    {.name = "admin", .arg = "socket", .kind = K_STR, .off = O(admin),
     .help = "the server's admin socket: its requests, CPU and allocations "
             "per request, from server.stats"},
    {.name = "server-pid", .arg = "pid", .kind = K_FN, .parse = pid_set,
     .help = "the server's CPU time from /proc: pid and its descendants"},
    {.name = "json", .kind = K_FLAG, .off = O(json),
     .help = "print the summary as one JSON object (the rounds' lines on "
             "standard error)"},
    {.name = "hgrm", .arg = "file", .kind = K_STR, .off = O(hgrm),
     .help = "write the latency distribution, HdrHistogram's percentile "
             "format"},
    {.name = "html", .arg = "file", .kind = K_STR, .off = O(html),
     .help = "write a report: one HTML page that needs nothing else"},
    {.name = "baseline", .arg = "file", .kind = K_STR, .off = O(baseline),
     .help = "draw the --html report against an earlier run's --html "
             "report"},
    {.name = "csv", .arg = "file", .kind = K_STR, .off = O(csv),
     .help = "write the run second by second (a round a line in rounds)"},
    {.name = "max-p99", .arg = "duration", .kind = K_DURATION,
     .off = O(max_p99_ns), .min = 1, .unit = 0,
     .bad = "bad duration '%s': give its unit, as in 5ms or 250us",
     .help = "fail (exit status 1) if p99 is over it (with its unit: 5ms), "
             "or nothing answered"},
    {.name = "max-errors", .arg = "n | percent%", .kind = K_FN,
     .parse = max_errors_set, .def = "0",
     .help = "fail (exit status 1) past n unexpected errors or lost "
             "requests, or percent% of those sent"},
    {.name = "timeout", .arg = "duration", .kind = K_DURATION,
     .off = O(timeout_ns), .min = 1, .unit = 1e9, .bad = "bad duration '%s'",
     .def = "10s",
     .help = "a connection waiting this long for an answer fails"},
    {.name = "seed", .arg = "n", .kind = K_U64, .off = O(seed),
     .max = UINT64_MAX / 2, .bad = "bad number '%s'", .def = "0",
     .help = "seed of the random workloads: the same seed, the same "
             "requests"},
    {.name = "send-each", .kind = K_FLAG, .off = O(send_each),
     .help = "a send(2) per request, not one for all a connection has "
             "ready"},
    {.name = "profile", .arg = "file", .kind = K_STR, .off = O(profile),
     .help = "write the server's CPU profile over the measured run (pprof; "
             "needs -d or --stages)"},
    {.name = "metrics", .arg = "host:port", .kind = K_STR, .off = O(metrics),
     .shown = "$" FOLIO_METRICS_ENV ", else " FOLIO_DEFAULT_METRICS,
     .help = "the server's metrics listener, for --profile"},
    {.name = "quiet", .shortopt = 'q', .kind = K_FLAG, .off = O(quiet),
     .help = "no progress lines, no line per round: the summary alone"},
    {.name = "proto", .arg = "msgpack | resp | memcache | http | raw",
     .kind = K_FN, .parse = proto_set, .def = "msgpack",
     .help = "the protocol: folio's, Redis's, memcached's, HTTP/1.1, or "
             "fixed bytes"},
    {.name = "path", .arg = "path", .kind = K_FN, .parse = path_set,
     .shown = "/status",
     .help = "--proto http: the request-target (\"/v1/comments?uri=/test\")"},
    {.name = "body", .arg = "json", .kind = K_STR, .off = O(body),
     .help = "--proto http: POST this body (a GET without it)"},
    {.name = "value-size", .arg = "n", .kind = K_U32, .off = O(value_size),
     .min = 1, .max = 64 << 20, .bad = "%s is not 1 to 64M", .def = "3",
     .help = "other protocols: the bytes of the value get and set read and "
             "write"},
    {.name = "key", .arg = "name", .kind = K_FN, .parse = key_set,
     .shown = BENCH_DEFAULT_KEY, .help = "other protocols: their key"},
    {.name = "raw-request", .arg = "bytes", .kind = K_FN,
     .parse = raw_request_set,
     .help = "--proto raw: the request, with the escapes \\r \\n \\t \\0 \\\\ "
             "\\xHH"},
    {.name = "raw-reply-len", .arg = "n", .kind = K_U32,
     .off = O(raw_reply_len), .min = 1, .max = 1 << 20,
     .bad = "%s is not 1 to 1M",
     .help = "--proto raw: a reply is n bytes", .flags = OPT_OR},
    {.name = "raw-reply-end", .arg = "bytes", .kind = K_FN,
     .parse = raw_reply_end_set,
     .help = "--proto raw: a reply ends after these bytes (escapes as above)"},
    {.name = "version", .shortopt = 'V', .kind = K_VERSION,
     .help = "print the version and exit", .flags = OPT_HIDDEN},
    {.name = "help", .shortopt = 'h', .kind = K_HELP,
     .help = "print this help and exit", .flags = OPT_HIDDEN},
};
/* clang-format on */
#define NOPTS (sizeof(opts) / sizeof(opts[0]))

/* ---- values ---- */

static int
parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    unsigned long long v;
    char *e;

    errno = 0;
    if (*s == '-' || *s == '\0')
        return -1;
    v = strtoull(s, &e, 10);
    if (*e != '\0' || errno != 0 || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int
parse_double(const char *s, double min, double max, double *out)
{
    char *e;
    double v;

    errno = 0;
    v = strtod(s, &e);
    if (e == s || *e != '\0' || errno != 0 || !(v >= min && v <= max))
        return -1;
    *out = v;
    return 0;
}

static const char *
host_set(struct bench_opts *o, const char *v)
{
    snprintf(o->addr, sizeof(o->addr), "%s", v);
    o->addr_from = "-H";
    return NULL;
}

static const char *
socket_set(struct bench_opts *o, const char *v)
{
    snprintf(o->addr, sizeof(o->addr), "unix:%s", v);
    o->addr_from = "-U";
    return NULL;
}

/* --stages 30s:240,60s:480,10s:0 */
static const char *
stages_set(struct bench_opts *o, const char *v)
{
    static const char bad[] = "'%s' is not DURATION:USERS,...";
    char buf[1024], *tok, *save = NULL, *colon;
    uint64_t target;

    if (strlen(v) >= sizeof(buf))
        return bad;
    snprintf(buf, sizeof(buf), "%s", v);
    o->nstages = 0;
    for (tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (o->nstages == BENCH_MAX_STAGES ||
            (colon = strchr(tok, ':')) == NULL)
            return bad;
        *colon = '\0';
        if (folio_parse_duration(tok, 1e9, &o->stages[o->nstages].dur_ns) !=
                0 ||
            o->stages[o->nstages].dur_ns == 0 ||
            parse_u64(colon + 1, 0, BENCH_MAX_CONNS, &target) != 0)
            return bad;
        o->stages[o->nstages++].target = (uint32_t)target;
    }
    return o->nstages > 0 ? NULL : bad;
}

static const char *
pid_set(struct bench_opts *o, const char *v)
{
    uint64_t pid;

    if (parse_u64(v, 1, INT_MAX, &pid) != 0)
        return "bad pid '%s'";
    o->server_pid = (pid_t)pid;
    return NULL;
}

/* N, or a percentage: N% */
static const char *
max_errors_set(struct bench_opts *o, const char *v)
{
    size_t n = strlen(v);
    char num[64];
    uint64_t u;
    double d;

    if (n > 1 && v[n - 1] == '%') {
        snprintf(num, sizeof(num), "%.*s", (int)(n - 1), v);
        if (parse_double(num, 0, 100, &d) != 0)
            return "bad percentage '%s'";
        o->max_errors_pct = d;
    } else if (parse_u64(v, 0, UINT64_MAX / 2, &u) != 0) {
        return "bad count '%s'";
    } else {
        o->max_errors = u;
        o->max_errors_pct = -1;
    }
    return NULL;
}

static const char *
proto_set(struct bench_opts *o, const char *v)
{
    return folio_bench_proto_parse(v, &o->proto) != 0
               ? "'%s' is not msgpack, resp, memcache, http or raw"
               : NULL;
}

static const char *
key_set(struct bench_opts *o, const char *v)
{
    if (v[0] == '\0' || strpbrk(v, " \r\n") != NULL)
        return "'%s' is not a key (no spaces)";
    o->key = v;
    return NULL;
}

static const char *
path_set(struct bench_opts *o, const char *v)
{
    if (v[0] != '/' || strpbrk(v, " \t\r\n") != NULL)
        return "'%s' is not a path (from '/', no spaces)";
    o->path = v;
    return NULL;
}

static const char *
raw_request_set(struct bench_opts *o, const char *v)
{
    free((char *)o->raw_request);
    o->raw_request = folio_bench_unescape(v, &o->raw_request_len);
    return o->raw_request == NULL ? "bad escape in '%s'" : NULL;
}

static const char *
raw_reply_end_set(struct bench_opts *o, const char *v)
{
    free((char *)o->raw_reply_end);
    o->raw_reply_end = folio_bench_unescape(v, &o->raw_reply_end_len);
    return o->raw_reply_end == NULL || o->raw_reply_end_len == 0
               ? "bad or empty '%s'"
               : NULL;
}

/* Set option `p` from value v: NULL, or what is wrong with v. */
static const char *
set(const struct opt *p, struct bench_opts *o, const char *v)
{
    char *field = (char *)o + p->off;
    uint64_t u;
    double d;

    switch (p->kind) {
    case K_FLAG:
        *(int *)(void *)field = 1;
        return NULL;
    case K_INT:
        if (parse_u64(v, p->min, p->max, &u) != 0)
            return p->bad;
        *(int *)(void *)field = (int)u;
        return NULL;
    case K_U32:
        if (parse_u64(v, p->min, p->max, &u) != 0)
            return p->bad;
        *(uint32_t *)(void *)field = (uint32_t)u;
        return NULL;
    case K_U64:
        if (parse_u64(v, p->min, p->max, &u) != 0)
            return p->bad;
        *(uint64_t *)(void *)field = u;
        return NULL;
    case K_DOUBLE:
        if (parse_double(v, p->dmin, p->dmax, &d) != 0)
            return p->bad;
        *(double *)(void *)field = d;
        return NULL;
    case K_DURATION:
        if (folio_parse_duration(v, p->unit, &u) != 0 || u < p->min)
            return p->bad;
        *(uint64_t *)(void *)field = u;
        return NULL;
    case K_STR:
        *(const char **)(void *)field = v;
        return NULL;
    case K_FN:
        return p->parse(o, v);
    default:
        return NULL;
    }
}

/* ---- the usage ---- */

/* Append `word` to a line of at most 79 columns, else start a new one. */
static void
put_word(FILE *f, const char *word, size_t *col, size_t indent)
{
    size_t n = strlen(word);

    if (*col + 1 + n > 79 && *col > indent) {
        fprintf(f, "\n%*s", (int)indent, "");
        *col = indent;
    } else if (*col > indent) {
        fputc(' ', f);
        (*col)++;
    }
    fputs(word, f);
    *col += n;
}

/* "-c conns" or "--warmup duration". */
static void
synopsis_of(const struct opt *p, char *buf, size_t len)
{
    if (p->shortopt != 0)
        snprintf(buf, len, "-%c%s%s", p->shortopt, p->arg ? " " : "",
                 p->arg ? p->arg : "");
    else
        snprintf(buf, len, "--%s%s%s", p->name, p->arg ? " " : "",
                 p->arg ? p->arg : "");
}

/* The help text from column `at`, words wrapped at 79 columns. */
static void
put_help(FILE *f, const char *text, size_t at)
{
    char word[128];
    size_t col = at, n;

    while (*text != '\0') {
        n = strcspn(text, " ");
        snprintf(word, sizeof(word), "%.*s", (int)n, text);
        put_word(f, word, &col, at);
        text += n;
        text += strspn(text, " ");
    }
}

#define HELP_AT 30 /* the column of the options' descriptions */

static void
usage(FILE *f, int full)
{
    static const char head[] = "usage: folio-bench ";
    const size_t indent = sizeof(head) - 1;
    char word[160], left[96], help[512];
    size_t col = indent, i, n;
    int m;

    fputs(head, f);
    for (m = 0, n = 0; m < BENCH_NMODES; m++)
        n += (size_t)snprintf(word + n, sizeof(word) - n, "%s%s",
                              m == 0 ? "[" : " | ",
                              folio_bench_mode_name((enum bench_mode)m));
    snprintf(word + n, sizeof(word) - n, "]");
    put_word(f, word, &col, indent);
    for (i = 0; i < NOPTS; i++) {
        if (opts[i].flags & OPT_HIDDEN)
            continue;
        n = (size_t)snprintf(word, sizeof(word), "[");
        for (;; i++) {
            synopsis_of(&opts[i], word + n, sizeof(word) - n);
            n = strlen(word);
            if (!(opts[i].flags & OPT_OR) || i + 1 == NOPTS)
                break;
            n += (size_t)snprintf(word + n, sizeof(word) - n, " | ");
        }
        snprintf(word + n, sizeof(word) - n, "]");
        put_word(f, word, &col, indent);
    }
    fputs("\n       folio-bench --version | --help\n", f);
    if (!full)
        return;
    fputs("\noptions:\n", f);
    for (i = 0; i < NOPTS; i++) {
        const struct opt *p = &opts[i];
        const char *def = p->shown != NULL ? p->shown : p->def;

        if (p->help == NULL)
            continue;
        if (p->shortopt != 0)
            snprintf(left, sizeof(left), "-%c, --%s%s%s", p->shortopt, p->name,
                     p->arg ? " " : "", p->arg ? p->arg : "");
        else
            snprintf(left, sizeof(left), "    --%s%s%s", p->name,
                     p->arg ? " " : "", p->arg ? p->arg : "");
        fprintf(f, "  %s", left);
        if (strlen(left) + 2 >= HELP_AT)
            fprintf(f, "\n%*s", HELP_AT, "");
        else
            fprintf(f, "%*s", (int)(HELP_AT - 2 - strlen(left)), "");
        snprintf(help, sizeof(help), "%s%s%s%s", p->help,
                 def != NULL ? " [" : "", def != NULL ? def : "",
                 def != NULL ? "]" : "");
        put_help(f, help, HELP_AT);
        fputc('\n', f);
    }
    fputs("\nThe mode comes first: closed (the default; open with -R, ramp "
          "with --stages),\nopen, ramp or rounds.  Durations are a number "
          "and ns, us, ms, s, m or h;\na bare number is in seconds "
          "(--max-p99 takes its unit only).  See folio-bench(1).\n",
          f);
}

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
bad(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "folio-bench: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    usage(stderr, 0);
    return -1;
}

/*
 * An option's value refused: "-c: 0 is not 1 to 100000", from `why`
 * with v where its "%s" is.
 */
static int
bad_value(const struct opt *p, const char *why, const char *v)
{
    const char *at = strstr(why, "%s");
    char name[48];
    int n = at != NULL ? (int)(at - why) : (int)strlen(why);

    if (p->shortopt != 0)
        snprintf(name, sizeof(name), "-%c", p->shortopt);
    else
        snprintf(name, sizeof(name), "--%s", p->name);
    return bad("%s: %.*s%s%s", name, n, why, at != NULL ? v : "",
               at != NULL ? at + 2 : "");
}

/* ---- the command line ---- */

void
folio_bench_opts_init(struct bench_opts *o)
{
    size_t i;

    memset(o, 0, sizeof(*o));
    for (i = 0; i < NOPTS; i++)
        if (opts[i].def != NULL)
            set(&opts[i], o, opts[i].def);
    o->addr_from = "the default; set by -H or -U";
}

/* Whether option `name` was on the command line. */
static int
given(const unsigned char *seen, const char *name)
{
    size_t i;

    for (i = 0; i < NOPTS; i++)
        if (strcmp(opts[i].name, name) == 0)
            return seen[i];
    return 0;
}

/* The checks between options, and the defaults that depend on them. */
static int
settle(struct bench_opts *o, const unsigned char *seen, int mode_named)
{
    int have_n = given(seen, "requests"), have_d = given(seen, "duration");
    int i;

    /* The mode: named, or implied by -R and --stages. */
    if (o->rate > 0 && !mode_named)
        o->mode = BENCH_OPEN;
    if (o->nstages > 0 && !mode_named)
        o->mode = BENCH_RAMP;
    if (o->rate > 0 && o->mode != BENCH_OPEN)
        return bad("-R goes with the open mode, not %s",
                   folio_bench_mode_name(o->mode));
    if (o->nstages > 0 && o->mode != BENCH_RAMP)
        return bad("--stages goes with the ramp mode, not %s",
                   folio_bench_mode_name(o->mode));
    if (o->mode == BENCH_OPEN && o->rate <= 0)
        return bad("%s", "the open mode needs -R RATE");
    if (o->mode == BENCH_RAMP && o->nstages == 0)
        return bad("%s", "the ramp mode needs --stages");
    if (o->mode == BENCH_RAMP && (have_n || have_d))
        return bad("%s", "the ramp mode runs its --stages: no -n or -d");
    if (o->rounds > 0 && o->mode != BENCH_ROUNDS)
        return bad("%s", "--rounds goes with the rounds mode");
    if (have_n && have_d && o->mode != BENCH_ROUNDS)
        return bad("%s", "-n or -d, not both");
    if (o->proto != BENCH_P_MSGPACK) {
        /* foliod's HTTP face has folio's server.stats behind it. */
        if (o->admin != NULL && o->proto != BENCH_P_HTTP)
            return bad("--admin reads folio's server.stats: not with --proto "
                       "%s (--server-pid reads any server's CPU)",
                       folio_bench_proto_name(o->proto));
        if (o->mode == BENCH_ROUNDS)
            return bad("%s", "the rounds mode is folio's: msgpack only");
        if (o->workload == NULL)
            o->workload = o->proto == BENCH_P_MEMCACHE ? "version"
                          : o->proto == BENCH_P_RAW    ? "raw"
                          : o->proto == BENCH_P_HTTP   ? "http"
                                                       : "ping";
    }
    if ((o->raw_request != NULL || o->raw_reply_len > 0 ||
         o->raw_reply_end != NULL) &&
        o->proto != BENCH_P_RAW)
        return bad("%s", "--raw-request and --raw-reply-* go with --proto raw");
    if ((o->path != NULL || o->body != NULL) && o->proto != BENCH_P_HTTP)
        return bad("%s", "--path and --body go with --proto http");
    if ((o->path != NULL || o->body != NULL) &&
        strcmp(o->workload, "http") != 0)
        return bad("--path and --body are -w http's (--proto http's default), "
                   "not -w %s's",
                   o->workload);

    switch (o->mode) {
    case BENCH_ROUNDS:
        if (!have_n)
            o->total = 20;
        if (!given(seen, "connections") || (uint64_t)o->conns > o->total)
            o->conns =
                (int)(o->total < BENCH_MAX_CONNS ? o->total : BENCH_MAX_CONNS);
        if (!given(seen, "threads"))
            o->threads = 1;
        if (o->workload == NULL)
            o->workload = "corpus";
        break;
    case BENCH_RAMP:
        o->conns = 0;
        for (i = 0; i < o->nstages; i++)
            if ((int)o->stages[i].target > o->conns)
                o->conns = (int)o->stages[i].target;
        if (o->conns == 0)
            return bad("%s", "--stages: no stage has a user");
        break;
    default:
        if (!have_n && !have_d)
            o->duration_ns = 5000000000ull;
        break;
    }
    if (o->workload == NULL)
        o->workload = "ping";
    if (o->baseline != NULL && o->html == NULL)
        return bad("%s", "--baseline is drawn in the --html report: give "
                         "--html FILE");
    if (o->profile != NULL && folio_bench_profile_seconds(o) == 0)
        return bad("%s", "--profile needs a run of known length: -d or "
                         "--stages");
    if (o->metrics == NULL)
        o->metrics = folio_default_metrics();
    if (o->threads <= 0)
        o->threads = folio_cpu_count();
    if (o->threads > o->conns)
        o->threads = o->conns;
    return 0;
}

int
folio_bench_opts_parse(int argc, char *argv[], struct bench_opts *o)
{
    struct option lo[NOPTS + 1];
    unsigned char seen[NOPTS];
    char shorts[2 * NOPTS + 1];
    const struct opt *p;
    const char *why;
    size_t i, ns = 0;
    int ch, mode_named = 0;

    if (argc > 1 && argv[1][0] != '-') {
        if (folio_bench_mode_parse(argv[1], &o->mode) != 0)
            return bad("unknown mode '%s' (closed, open, ramp, rounds)",
                       argv[1]);
        mode_named = 1;
        argv[1] = argv[0];
        argc--;
        argv++;
    }
    memset(seen, 0, sizeof(seen));
    memset(lo, 0, sizeof(lo));
    for (i = 0; i < NOPTS; i++) {
        lo[i].name = opts[i].name;
        lo[i].has_arg = opts[i].arg != NULL ? required_argument : no_argument;
        lo[i].val = 256 + (int)i;
        if (opts[i].shortopt != 0) {
            shorts[ns++] = (char)opts[i].shortopt;
            if (opts[i].arg != NULL)
                shorts[ns++] = ':';
        }
    }
    shorts[ns] = '\0';
    while ((ch = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
        for (i = 0, p = NULL; i < NOPTS && p == NULL; i++)
            if (ch == 256 + (int)i || (ch < 256 && ch == opts[i].shortopt))
                p = &opts[i];
        if (p == NULL) { /* getopt said what is wrong */
            usage(stderr, 0);
            return -1;
        }
        if (p->kind == K_HELP) {
            usage(stdout, 1);
            return 1;
        }
        if (p->kind == K_VERSION) {
            printf("folio-bench %s\n", PACKAGE_VERSION);
            return 1;
        }
        if ((why = set(p, o, optarg)) != NULL)
            return bad_value(p, why, optarg);
        seen[p - opts] = 1;
    }
    if (optind < argc)
        return bad("unexpected argument '%s' (the mode comes first)",
                   argv[optind]);
    return settle(o, seen, mode_named);
}
