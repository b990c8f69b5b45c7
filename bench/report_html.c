/*
 * report_html.c - folio-bench --html: the run as one self-contained page,
 * like k6's and JMeter's dashboards.  Nothing is fetched: the styles and
 * the script are inline, the charts are SVG drawn by that script from
 * the data inline in the page (the JSON summary of --json, the series a
 * point a second, the percentile spectrum, the settings, --profile's top
 * functions, and with --baseline the data of an earlier report, copied
 * from its page, to draw this run against).  The script
 * marks the page when it has drawn (<body data-state="drawn">; each chart's
 * svg carries data-points) and shows any error it met, so a headless
 * browser can check it (tests/e2e_report.c).  The page's parts are
 * bench/report_page.html and bench/report_page.js.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"

/*
 * page_head (bench/report_page.html: the styles and the charts' places) and
 * page_script (bench/report_page.js: what draws them), as C strings
 * (bench/include.am makes the header from the two files).
 */
#include "bench/report_page.h"
#include "src/clock.h"
#include "src/cpus.h"
#include "src/prof/pprof.h"

/* The data blocks a report carries, and a baseline brings along. */
static const char *const blocks[] = {"data-summary", "data-series",
                                     "data-spectrum", "data-settings"};
#define NBLOCKS (sizeof(blocks) / sizeof(blocks[0]))

/* A number for JSON: null where unknown (< 0 or NaN). */
static void
num(FILE *f, double v, int decimals)
{
    if (isnan(v) || v < 0)
        fputs("null", f);
    else
        fprintf(f, "%.*f", decimals, v);
}

/* ,"name":[...] of one figure of every point. */
static void
column(FILE *f, const char *name, const struct bench_series *s,
       double (*get)(const struct bench_point *p), int decimals)
{
    size_t i;

    fprintf(f, ",\"%s\":[", name);
    for (i = 0; i < s->n; i++) {
        if (i > 0)
            fputc(',', f);
        num(f, get(&s->p[i]), decimals);
    }
    fputc(']', f);
}

static double
g_t(const struct bench_point *p)
{
    return p->t;
}
static double
g_secs(const struct bench_point *p)
{
    return p->secs;
}
static double
g_rps(const struct bench_point *p)
{
    return p->secs > 0 ? (double)p->answered / p->secs : 0;
}
static double
g_eps(const struct bench_point *p)
{
    return p->secs > 0 ? (double)p->errors / p->secs : 0;
}
/*
 * A latency of an interval without answers in its histogram is unknown,
 * not 0.  Its count of answers can say more: the counters of a sample are
 * read one after the other while the threads go on, so the last interval
 * may count answers whose latencies the sample before already held (as
 * each method's latencies do: the two charts then agree).
 */
static double
lat(const struct bench_point *p, uint64_t ns)
{
    return p->lat_n > 0 ? (double)ns / 1e3 : NAN;
}
static double
g_p50(const struct bench_point *p)
{
    return lat(p, p->p50);
}
static double
g_p90(const struct bench_point *p)
{
    return lat(p, p->p90);
}
static double
g_p99(const struct bench_point *p)
{
    return lat(p, p->p99);
}
static double
g_p999(const struct bench_point *p)
{
    return lat(p, p->p999);
}
static double
g_max(const struct bench_point *p)
{
    return lat(p, p->max);
}
static double
g_mean(const struct bench_point *p)
{
    return lat(p, p->mean);
}
static double
g_users(const struct bench_point *p)
{
    return (double)p->users;
}
static double
g_cpu(const struct bench_point *p)
{
    double v = folio_bench_point_per_req(p->srv_cpu_s, p);

    return v >= 0 ? v * 1e6 : -1;
}
static double
g_allocs(const struct bench_point *p)
{
    return folio_bench_point_per_req(p->srv_allocs, p);
}
/* The server's CPU of the interval, in cores (1: one core busy). */
static double
g_cores(const struct bench_point *p)
{
    return p->srv_cpu_s >= 0 && p->secs > 0 ? p->srv_cpu_s / p->secs : -1;
}
static double
g_bytes_out(const struct bench_point *p)
{
    return p->secs > 0 ? (double)p->bytes_out / p->secs : 0;
}
static double
g_bytes_in(const struct bench_point *p)
{
    return p->secs > 0 ? (double)p->bytes_in / p->secs : 0;
}

static const char *
code_key(int k, char *buf, size_t len)
{
    if (k == FOLIO_ST_MAX)
        snprintf(buf, len, "other");
    else
        snprintf(buf, len, "%d", k);
    return buf;
}

static void
series_json(FILE *f, const struct bench_series *s)
{
    unsigned codes = folio_bench_series_codes(s);
    char key[16];
    size_t i;
    int k, first = 1;

    fputs("{\"n\":", f);
    fprintf(f, "%zu", s->n);
    column(f, "t", s, g_t, 3);
    column(f, "interval", s, g_secs, 3);
    column(f, "rps", s, g_rps, 1);
    column(f, "errors_per_s", s, g_eps, 1);
    column(f, "p50_us", s, g_p50, 1);
    column(f, "p90_us", s, g_p90, 1);
    column(f, "p99_us", s, g_p99, 1);
    column(f, "p999_us", s, g_p999, 1);
    column(f, "max_us", s, g_max, 1);
    column(f, "mean_us", s, g_mean, 1);
    column(f, "users", s, g_users, 0);
    column(f, "cpu_us_per_req", s, g_cpu, 3);
    column(f, "allocs_per_req", s, g_allocs, 4);
    column(f, "server_cores", s, g_cores, 3);
    column(f, "bytes_out_per_s", s, g_bytes_out, 0);
    column(f, "bytes_in_per_s", s, g_bytes_in, 0);
    /* The CPUs the server's share is of: this host's (the server is local). */
    fprintf(f, ",\"cores\":%d", folio_cpu_count());
    /* Each method's p50 and p99 over time. */
    fputs(",\"methods\":{", f);
    for (k = 0; k < BENCH_NKINDS; k++) {
        int any = 0, q;

        for (i = 0; i < s->n && !any; i++)
            any = s->p[i].kind_p99[k] != 0;
        if (!any)
            continue;
        fprintf(f, "%s\"%s\":{", first ? "" : ",", folio_bench_kind_method[k]);
        for (q = 0; q < 2; q++) {
            fprintf(f, "%s\"%s\":[", q ? "," : "", q ? "p99_us" : "p50_us");
            for (i = 0; i < s->n; i++) {
                uint64_t v = q ? s->p[i].kind_p99[k] : s->p[i].kind_p50[k];

                if (i > 0)
                    fputc(',', f);
                num(f, v != 0 ? (double)v / 1e3 : -1, 1);
            }
            fputc(']', f);
        }
        fputc('}', f);
        first = 0;
    }
    fputc('}', f);
    first = 1;
    fputs(",\"codes\":{", f);
    for (k = 0; k < BENCH_CODES; k++) {
        if (!(codes & BENCH_CODE(k)))
            continue;
        fprintf(f, "%s\"%s\":[", first ? "" : ",",
                code_key(k, key, sizeof(key)));
        for (i = 0; i < s->n; i++)
            fprintf(f, "%s%llu", i > 0 ? "," : "",
                    (unsigned long long)s->p[i].codes[k]);
        fputc(']', f);
        first = 0;
    }
    fputs("}}", f);
}

/*
 * {"n": answers, "pts": [[percentile, us], ...]} of a histogram: a point
 * per bucket used.  The page draws a line only as far as its n answers
 * can tell (1 - 1/n: 690 answers say nothing of the 99.99th percentile).
 */
static void
spectrum_json(FILE *f, const uint64_t *h, uint64_t max_ns)
{
    uint64_t total = 0, cum = 0, v;
    unsigned b;
    int first = 1;

    for (b = 0; b < FOLIO_LAT_BUCKETS; b++)
        total += h[b];
    fprintf(f, "{\"n\":%llu,\"pts\":[", (unsigned long long)total);
    for (b = 0; b < FOLIO_LAT_BUCKETS && total > 0; b++) {
        if (h[b] == 0)
            continue;
        if (first) { /* the spectrum starts at 0% with the fastest */
            v = folio_lat_bucket_upper(b);
            fprintf(f, "[0,%.3f]", (double)(v < max_ns ? v : max_ns) / 1e3);
            first = 0;
        }
        cum += h[b];
        v = folio_lat_bucket_upper(b);
        fprintf(f, ",[%.6f,%.3f]", 100.0 * (double)cum / (double)total,
                (double)(v < max_ns ? v : max_ns) / 1e3);
    }
    fputs("]}", f);
}

/*
 * --profile's top functions: {"file", "type", "unit", "total", "rows":
 * [[name, flat, cum], ...]} of its default sample type, or null.
 */
static void
profile_json(FILE *f, const struct bench_opts *o)
{
    const struct folio_pprof *p = folio_bench_profile_taken();
    struct folio_pprof_top_row *rows = NULL;
    uint32_t n = 0, i;
    int64_t total = 0;
    int type;

    if (p == NULL || (type = folio_pprof_type_index(p, NULL)) < 0 ||
        folio_pprof_top(p, type, &rows, &n, &total) != 0) {
        fputs("null", f);
        return;
    }
    fputs("{\"file\":", f);
    folio_bench_json_str(f, o->profile);
    fputs(",\"type\":", f);
    folio_bench_json_str(f, folio_pprof_text(p, p->types[type].type));
    fputs(",\"unit\":", f);
    folio_bench_json_str(f, folio_pprof_text(p, p->types[type].unit));
    fprintf(f, ",\"total\":%lld,\"rows\":[", (long long)total);
    for (i = 0; i < n && i < 25; i++) {
        fputs(i > 0 ? ",[" : "[", f);
        folio_bench_json_str(f, folio_pprof_text(p, rows[i].name));
        fprintf(f, ",%lld,%lld]", (long long)rows[i].flat,
                (long long)rows[i].cum);
    }
    fputs("]}", f);
    free(rows);
}

/* The JSON text of block `id` in a report page: its start and length. */
static int
block_of(const char *page, const char *id, const char **at, size_t *len)
{
    char open[96];
    const char *p, *end;

    snprintf(open, sizeof(open), "<script type=\"application/json\" id=\"%s\">",
             id);
    if ((p = strstr(page, open)) == NULL ||
        (end = strstr(p + strlen(open), "</script>")) == NULL)
        return -1;
    *at = p + strlen(open);
    *len = (size_t)(end - *at);
    return 0;
}

int
folio_bench_html_baseline(struct bench_opts *o)
{
    const char *at;
    size_t len, k;
    FILE *f;
    long size;

    if (o->baseline == NULL)
        return 0;
    if ((f = fopen(o->baseline, "rb")) == NULL) {
        fprintf(stderr, "folio-bench: --baseline %s: %s\n", o->baseline,
                strerror(errno));
        return -1;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
        size > 64 * 1024 * 1024 || fseek(f, 0, SEEK_SET) != 0 ||
        (o->baseline_page = malloc((size_t)size + 1)) == NULL ||
        fread(o->baseline_page, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "folio-bench: --baseline %s: cannot be read\n",
                o->baseline);
        fclose(f);
        return -1;
    }
    fclose(f);
    o->baseline_page[size] = '\0';
    for (k = 0; k < NBLOCKS; k++)
        if (block_of(o->baseline_page, blocks[k], &at, &len) != 0) {
            fprintf(stderr,
                    "folio-bench: --baseline %s: not a folio-bench --html "
                    "report (no %s)\n",
                    o->baseline, blocks[k]);
            return -1;
        }
    return 0;
}

/* The baseline's blocks, as data-baseline-summary, ... (or nothing). */
static void
baseline_blocks(FILE *f, const struct bench_opts *o)
{
    const char *at;
    size_t len, k;

    if (o->baseline_page == NULL)
        return;
    for (k = 0; k < NBLOCKS; k++) {
        if (block_of(o->baseline_page, blocks[k], &at, &len) != 0)
            continue;
        fprintf(f,
                "<script type=\"application/json\" id=\"data-baseline-%s\">",
                blocks[k] + 5);
        fwrite(at, 1, len, f);
        fputs("</script>\n", f);
    }
}

static void
kv_str(FILE *f, const char *k, const char *v, int *first)
{
    fprintf(f, "%s\"%s\":", *first ? "" : ",", k);
    folio_bench_json_str(f, v);
    *first = 0;
}

static void
kv_dur(FILE *f, const char *k, uint64_t ns, int *first)
{
    char buf[32];

    kv_str(f, k,
           ns == 0 ? "none" : folio_bench_fmt_ns((double)ns, buf, sizeof(buf)),
           first);
}

static void
settings_json(FILE *f, const struct bench_run *r,
              const struct bench_result *res)
{
    const struct bench_opts *o = r->o;
    char buf[256], key[16];
    time_t started;
    struct tm tm;
    int first = 1, k, i;
    size_t n;

    /* The wall clock when the threads were told to go. */
    started = time(NULL) - (time_t)((folio_mono_ns() - r->t0) / 1000000000u);
    gmtime_r(&started, &tm);
    strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
    fputc('{', f);
    kv_str(f, "started", buf, &first);
    kv_str(f, "command", o->cmdline, &first);
    kv_str(f, "folio-bench", PACKAGE_VERSION, &first);
    kv_str(f, "target", o->addr, &first);
    kv_str(f, "mode", folio_bench_mode_name(o->mode), &first);
    kv_str(f, "workload", o->workload, &first);
    kv_str(f, "description", r->pool->desc, &first);
    snprintf(buf, sizeof(buf), "%d%s", o->conns,
             o->mode == BENCH_RAMP ? " (users at most)" : "");
    kv_str(f, "connections", buf, &first);
    snprintf(buf, sizeof(buf), "%d", r->nthreads);
    kv_str(f, "threads", buf, &first);
    snprintf(buf, sizeof(buf), "%d", o->pipeline);
    kv_str(f, "pipeline", buf, &first);
    if (o->mode == BENCH_OPEN) {
        snprintf(buf, sizeof(buf), "%.0f/s", o->rate);
        kv_str(f, "rate", buf, &first);
    }
    if (o->mode == BENCH_RAMP) {
        for (i = 0, n = 0; i < o->nstages && n + 40 < sizeof(buf); i++) {
            char d[32];

            n += (size_t)snprintf(
                buf + n, sizeof(buf) - n, "%s%s:%u", i > 0 ? "," : "",
                folio_bench_fmt_ns((double)o->stages[i].dur_ns, d, sizeof(d)),
                o->stages[i].target);
        }
        kv_str(f, "stages", buf, &first);
    }
    if (o->mode == BENCH_ROUNDS) {
        snprintf(buf, sizeof(buf), "%llu of %llu requests",
                 (unsigned long long)res->rounds_done,
                 (unsigned long long)o->total);
        kv_str(f, "rounds", buf, &first);
    } else if (o->duration_ns > 0) {
        kv_dur(f, "duration", o->duration_ns, &first);
    } else {
        snprintf(buf, sizeof(buf), "%llu", (unsigned long long)o->total);
        kv_str(f, "requests", buf, &first);
    }
    kv_dur(f, "warmup", o->warmup_ns, &first);
    kv_dur(f, "timeout", o->timeout_ns, &first);
    snprintf(buf, sizeof(buf), "%.2f s", res->secs);
    kv_str(f, "measured", buf, &first);
    snprintf(buf, sizeof(buf), "%llu", (unsigned long long)o->seed);
    kv_str(f, "seed", buf, &first);
    if (o->admin != NULL)
        kv_str(f, "admin", o->admin, &first);
    if (o->server_pid > 0) {
        snprintf(buf, sizeof(buf), "%ld", (long)o->server_pid);
        kv_str(f, "server-pid", buf, &first);
    }
    fputs(",\"codes\":{", f);
    for (k = 0; k < BENCH_CODES; k++)
        fprintf(f, "%s\"%s\":\"%s\"", k > 0 ? "," : "",
                code_key(k, key, sizeof(key)),
                k == FOLIO_ST_MAX ? "OTHER" : folio_status_name(k));
    fputs("}}", f);
}

int
folio_bench_html(FILE *f, const struct bench_run *r,
                 const struct bench_result *res)
{
    const struct bench_totals *t = &res->t;
    uint64_t total = folio_bench_answered(t);
    int k, first = 1, e, cap;

    if (ftruncate(fileno(f), 0) != 0) { /* opened to append, before the run */
        fclose(f);
        return -1;
    }
    fputs(page_head, f);
    fputs("<script type=\"application/json\" id=\"data-summary\">", f);
    folio_bench_json(f, r, res);
    fputs("</script>\n<script type=\"application/json\" id=\"data-series\">",
          f);
    series_json(f, &res->series);
    /* As many nines as the answers can show, 2 to 6. */
    cap = total > 0 ? (int)ceil(log10((double)total)) : 2;
    cap = cap < 2 ? 2 : cap > 6 ? 6 : cap;
    fprintf(f,
            "</script>\n<script type=\"application/json\" "
            "id=\"data-spectrum\">{\"cap\":%d,\"all\":",
            cap);
    spectrum_json(f, t->hist, t->max_ns);
    fputs(",\"methods\":{", f);
    for (k = 0; k < BENCH_NKINDS; k++) {
        if (folio_bench_kind_answered(t, k) == 0)
            continue;
        fprintf(f, "%s\"%s\":", first ? "" : ",", folio_bench_kind_method[k]);
        spectrum_json(f, t->kind_hist[k], t->kind_max_ns[k]);
        first = 0;
    }
    fputs(
        "}}</script>\n<script type=\"application/json\" id=\"data-settings\">",
        f);
    settings_json(f, r, res);
    fputs("</script>\n<script type=\"application/json\" id=\"data-profile\">",
          f);
    profile_json(f, r->o);
    fputs("</script>\n", f);
    baseline_blocks(f, r->o);
    fputs("<script>\n", f);
    fputs(page_script, f);
    fputs("</script>\n</body>\n</html>\n", f);
    e = ferror(f);
    if (fclose(f) != 0 || e) {
        errno = errno ? errno : EIO;
        return -1;
    }
    return 0;
}
