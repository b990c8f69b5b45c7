/*
 * pprof_top.c - the `pprof -top` table of a profile (see pprof.h): flat
 * and cumulative value by function, in the layout and units of google/
 * pprof's text report (internal/report printText, measurement), so that
 * `folio profile` and /debug/pprof/...?debug=1 read like `go tool pprof
 * -top` without a Go toolchain.
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/alloc.h"
#include "src/err.h"
#include "src/prof/pprof.h"

int
folio_pprof_on_stack(const struct folio_pprof *p, uint32_t i, const char *name)
{
    const struct folio_pprof_sample *s = &p->samples[i];
    uint32_t j, k;

    for (j = 0; j < s->nstack; j++) {
        const struct folio_pprof_location *l =
            &p->locations[p->stack[s->stack + j]];

        for (k = 0; k < l->nline; k++) {
            const struct folio_pprof_line *ln = &p->lines[l->line + k];

            if (ln->fn < p->nfunctions &&
                strcmp(folio_pprof_text(p, p->functions[ln->fn].name), name) ==
                    0)
                return 1;
        }
    }
    return 0;
}

int
folio_pprof_type_index(const struct folio_pprof *p, const char *name)
{
    uint32_t i;

    if (name == NULL && p->default_type != 0)
        name = folio_pprof_text(p, p->default_type);
    if (name == NULL)
        return p->ntypes > 0 ? (int)p->ntypes - 1 : -1;
    for (i = 0; i < p->ntypes; i++)
        if (strcmp(folio_pprof_text(p, p->types[i].type), name) == 0)
            return (int)i;
    return -1;
}

static int
cmp_rows(const void *a, const void *b, void *arg)
{
    const struct folio_pprof_top_row *x = a, *y = b;
    const struct folio_pprof *p = arg;
    int64_t fx = llabs(x->flat), fy = llabs(y->flat);
    int64_t cx = llabs(x->cum), cy = llabs(y->cum);

    if (fx != fy)
        return fx > fy ? -1 : 1;
    if (cx != cy)
        return cx > cy ? -1 : 1;
    return strcmp(folio_pprof_text(p, x->name), folio_pprof_text(p, y->name));
}

/* The name a line shows: its function's, or "??" without one. */
static uint32_t
line_name(const struct folio_pprof *p, const struct folio_pprof_line *ln,
          uint32_t unknown)
{
    if (ln->fn >= p->nfunctions || p->functions[ln->fn].name == 0)
        return unknown;
    return p->functions[ln->fn].name;
}

int
folio_pprof_top(const struct folio_pprof *p, int type,
                struct folio_pprof_top_row **rows, uint32_t *nrows,
                int64_t *total)
{
    struct folio_pprof_top_row *r;
    uint32_t *row_of = NULL, *seen = NULL, i, j, k, n = 0;
    uint32_t unknown = p->nstrings; /* a name no string has */
    int64_t t = 0;

    *rows = NULL;
    *nrows = 0;
    *total = 0;
    if (type < 0 || (uint32_t)type >= p->ntypes)
        return FOLIO_EINVAL;
    /* One row per distinct name: row_of[string] (+1 slot for "??"). */
    if ((row_of = folio_calloc((size_t)p->nstrings + 1, sizeof(*row_of))) ==
            NULL ||
        (seen = folio_calloc((size_t)p->nstrings + 1, sizeof(*seen))) ==
            NULL ||
        (r = folio_calloc((size_t)p->nfunctions + 1, sizeof(*r))) == NULL) {
        folio_free(row_of);
        folio_free(seen);
        return FOLIO_ENOMEM;
    }
    for (i = 0; i < p->nsamples; i++) {
        const struct folio_pprof_sample *s = &p->samples[i];
        int64_t v = p->values[s->value + (uint32_t)type];
        int leaf = 1;

        t += v;
        if (v == 0)
            continue;
        for (j = 0; j < s->nstack; j++) {
            const struct folio_pprof_location *l =
                &p->locations[p->stack[s->stack + j]];

            /* A location without lines still counts, as "??". */
            for (k = 0; k < (l->nline ? l->nline : 1); k++) {
                uint32_t name =
                    l->nline ? line_name(p, &p->lines[l->line + k], unknown)
                             : unknown;

                if (row_of[name] == 0) {
                    if (n == p->nfunctions + 1) {
                        /* More names than functions: only "??" is new. */
                        continue;
                    }
                    r[n].name = name == unknown ? 0 : name;
                    row_of[name] = ++n;
                }
                if (k + 1 < l->nline)
                    r[row_of[name] - 1].inlined = 1;
                else
                    r[row_of[name] - 1].physical = 1;
                if (leaf)
                    r[row_of[name] - 1].flat += v;
                leaf = 0;
                /* Once per sample, however deep the recursion. */
                if (seen[name] != i + 1) {
                    seen[name] = i + 1;
                    r[row_of[name] - 1].cum += v;
                }
            }
        }
    }
    folio_free(row_of);
    folio_free(seen);
    qsort_r(r, n, sizeof(*r), cmp_rows, (void *)(uintptr_t)p);
    *rows = r;
    *nrows = n;
    *total = t;
    return 0;
}

/* measurement.unitTypes of google/pprof: bytes and time. */
struct unit {
    const char *name;
    double factor;
};
static const struct unit byte_units[] = {
    {"B", 1},
    {"kB", 1024.0},
    {"MB", 1048576.0},
    {"GB", 1073741824.0},
    {"TB", 1099511627776.0},
    {"PB", 1125899906842624.0},
};
static const struct unit time_units[] = {
    {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"hrs", 3600e9},
};

/* The unit table and factor of `unit`, or NULL for counts. */
static const struct unit *
sniff(const char *unit, size_t *n, double *factor)
{
    static const struct {
        const char *alias;
        int bytes;
        double factor;
    } aliases[] = {
        {"bytes", 1, 1},          {"byte", 1, 1},       {"b", 1, 1},
        {"kilobytes", 1, 1024.0}, {"kb", 1, 1024.0},    {"megabytes", 1, 1048576.0},
        {"mb", 1, 1048576.0},     {"nanoseconds", 0, 1}, {"nanosecond", 0, 1},
        {"ns", 0, 1},             {"microseconds", 0, 1e3}, {"us", 0, 1e3},
        {"milliseconds", 0, 1e6}, {"ms", 0, 1e6},       {"seconds", 0, 1e9},
        {"second", 0, 1e9},       {"s", 0, 1e9},
    };
    size_t i;

    for (i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
        if (strcmp(unit, aliases[i].alias) == 0) {
            *factor = aliases[i].factor;
            if (aliases[i].bytes) {
                *n = sizeof(byte_units) / sizeof(byte_units[0]);
                return byte_units;
            }
            *n = sizeof(time_units) / sizeof(time_units[0]);
            return time_units;
        }
    }
    return NULL;
}

/* v (of `unit`) in `out` ("" : the largest unit that keeps v >= 1). */
static double
scale(int64_t v, const char *unit, const char *out, const char **name)
{
    const struct unit *u;
    double x, f = 0;
    size_t n, i;

    *name = "";
    if ((u = sniff(unit != NULL ? unit : "", &n, &f)) == NULL)
        return (double)v;
    x = (double)v * f;
    if (out != NULL && *out != '\0') {
        for (i = 0; i < n; i++)
            if (strcmp(u[i].name, out) == 0) {
                *name = u[i].name;
                return x / u[i].factor;
            }
    }
    f = 0;
    for (i = 0; i < n; i++)
        if (u[i].factor >= f && fabs(x) / u[i].factor >= 1.0) {
            f = u[i].factor;
            *name = u[i].name;
        }
    if (f == 0) {
        /* Below the smallest: pprof's default unit (B, s). */
        *name = u == time_units ? "s" : "B";
        return x / (u == time_units ? 1e9 : 1);
    }
    return x / f;
}

const char *
folio_pprof_fmt(char *buf, size_t len, int64_t v, const char *unit,
                const char *out_unit)
{
    const char *name;
    double x = scale(v, unit, out_unit, &name);
    size_t n;

    snprintf(buf, len, "%.2f", x);
    n = strlen(buf);
    if (n > 3 && strcmp(buf + n - 3, ".00") == 0)
        buf[n - 3] = '\0';
    if (strcmp(buf, "0") == 0 || strcmp(buf, "-0") == 0) {
        snprintf(buf, len, "0");
        return buf;
    }
    n = strlen(buf);
    snprintf(buf + n, len - n, "%s", name);
    return buf;
}

/* measurement.Percentage */
static const char *
pct(char *buf, size_t len, int64_t v, int64_t total)
{
    double r = total != 0 ? fabs((double)v / (double)total) * 100 : 0;

    if (r >= 99.95 && r <= 100.05)
        snprintf(buf, len, "  100%%");
    else if (r >= 1.0)
        snprintf(buf, len, "%5.2f%%", r);
    else
        snprintf(buf, len, "%5.2g%%", r);
    return buf;
}

static const char *
trim(const char *s)
{
    while (*s == ' ')
        s++;
    return s;
}

/* report.selectOutputUnit: one unit for the table, from its smallest value. */
static const char *
output_unit(const struct folio_pprof_top_row *r, uint32_t n, int64_t total,
            const char *unit)
{
    int64_t min = 0, v;
    const char *umin, *umax;
    static char chosen[8];
    uint32_t i;

    for (i = 0; i < n; i++) {
        v = llabs(r[i].flat) != 0 ? llabs(r[i].flat) : llabs(r[i].cum);
        if (v > 0 && (min == 0 || v < min))
            min = v;
    }
    if (min == 0)
        min = total;
    scale(min, unit, NULL, &umin);
    scale(total, unit, NULL, &umax);
    if (strcmp(umin, umax) != 0 && min * 100 < total)
        scale(100 * min, unit, NULL, &umin);
    snprintf(chosen, sizeof(chosen), "%s", umin);
    return chosen;
}

int
folio_pprof_top_print(FILE *f, const struct folio_pprof *p, int type,
                      unsigned max_rows)
{
    struct folio_pprof_top_row *r;
    const char *unit, *out, *tname;
    char a[32], b[32], c[32], d[32], e[32];
    uint32_t n, i, shown = 0, dropped = 0;
    int64_t total, flat_sum = 0, cut;
    int rc;

    if ((rc = folio_pprof_top(p, type, &r, &n, &total)) != 0)
        return rc;
    tname = folio_pprof_text(p, p->types[type].type);
    unit = folio_pprof_text(p, p->types[type].unit);
    /* pprof -top drops nodes at or under 0.5% of the total. */
    cut = (int64_t)((double)llabs(total) * 0.005);
    for (i = 0; i < n; i++) {
        if (llabs(r[i].cum) <= cut && total != 0) {
            dropped++;
            continue;
        }
        r[shown++] = r[i];
    }
    out = output_unit(r, shown, total, unit);
    if (p->nmappings > 0 && p->mappings[0].file != 0) {
        const char *file = folio_pprof_text(p, p->mappings[0].file);
        const char *base = strrchr(file, '/');

        fprintf(f, "File: %s\n", base != NULL ? base + 1 : file);
        if (p->mappings[0].build_id != 0)
            fprintf(f, "Build ID: %s\n",
                    folio_pprof_text(p, p->mappings[0].build_id));
    }
    for (i = 0; i < p->ncomments; i++) {
        const char *cm = folio_pprof_text(p, p->comments[i]);

        if (cm[0] != '#')
            fprintf(f, "%s\n", cm);
    }
    fprintf(f, "Type: %s\n", tname);
    if (p->time_nanos != 0) {
        time_t t = (time_t)(p->time_nanos / 1000000000);
        struct tm tm;
        char when[64];

        localtime_r(&t, &tm);
        strftime(when, sizeof(when), "%b %-d, %Y at %-I:%M%P (%Z)", &tm);
        fprintf(f, "Time: %s\n", when);
    }
    if (p->duration_nanos != 0) {
        const char *u;
        double ns = scale(total, unit, "ns", &u);

        fprintf(f, "Duration: %s, Total samples = %s",
                folio_pprof_fmt(a, sizeof(a), p->duration_nanos,
                                "nanoseconds", NULL),
                folio_pprof_fmt(b, sizeof(b), total, unit, out));
        if (strcmp(u, "ns") == 0 && ns != 0)
            fprintf(f, " (%s)",
                    pct(c, sizeof(c), (int64_t)ns, p->duration_nanos));
        fputc('\n', f);
    }
    for (i = 0; i < shown && (max_rows == 0 || i < max_rows); i++)
        flat_sum += r[i].flat;
    fprintf(f, "Showing nodes accounting for %s, %s of %s total\n",
            folio_pprof_fmt(a, sizeof(a), flat_sum, unit, out),
            trim(pct(b, sizeof(b), flat_sum, total)),
            folio_pprof_fmt(c, sizeof(c), total, unit, out));
    if (dropped > 0 && total != 0)
        fprintf(f, "Dropped %u node%s (cum <= %s)\n", dropped,
                dropped == 1 ? "" : "s",
                folio_pprof_fmt(a, sizeof(a), cut, unit, out));
    if (max_rows > 0 && shown > max_rows)
        fprintf(f, "Showing top %u nodes out of %u\n", max_rows, shown);
    fprintf(f, "%10s %5s%% %5s%% %10s %5s%%\n", "flat", "flat", "sum", "cum",
            "cum");
    flat_sum = 0;
    for (i = 0; i < shown && (max_rows == 0 || i < max_rows); i++) {
        flat_sum += r[i].flat;
        fprintf(f, "%10s %s %s %10s %s  %s%s\n",
                folio_pprof_fmt(a, sizeof(a), r[i].flat, unit, out),
                pct(b, sizeof(b), r[i].flat, total),
                pct(c, sizeof(c), flat_sum, total),
                folio_pprof_fmt(d, sizeof(d), r[i].cum, unit, out),
                pct(e, sizeof(e), r[i].cum, total),
                r[i].name != 0 ? folio_pprof_text(p, r[i].name) : "??",
                !r[i].inlined    ? ""
                : r[i].physical ? " (partial-inline)"
                                 : " (inline)");
    }
    folio_free(r);
    return 0;
}
