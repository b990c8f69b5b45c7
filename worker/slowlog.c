/*
 * slowlog.c - the slow-request log (`slow_request`): every request that
 * took longer is logged with its method, its time, its peer and a short,
 * printable summary of its params, as PHP-FPM's slowlog and Redis's
 * SLOWLOG do.  At most SLOW_LINES_PER_S lines a second per worker, then
 * one line with the count of those left out: a threshold set too low
 * must not turn the log into the bottleneck.  Called by dispatch.c only,
 * after a request's handler or at a held one's release; allocates nothing.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "src/addr.h"
#include "src/clock.h"
#include "src/log.h"
#include "src/mp.h"
#include "worker/worker_int.h"

#define SLOW_LINES_PER_S 10
#define SUMMARY_MAX 200 /* bytes of params shown */
#define SUMMARY_DEPTH 6 /* nesting shown; deeper is "..." */

struct out {
    char *p;
    size_t len, cap;
    int full;
};

static void
put(struct out *o, const char *s, size_t n)
{
    if (o->full)
        return;
    if (o->len + n > o->cap - 4) {
        n = o->cap - 4 > o->len ? o->cap - 4 - o->len : 0;
        o->full = 1;
    }
    memcpy(o->p + o->len, s, n);
    o->len += n;
    if (o->full) {
        memcpy(o->p + o->len, "...", 3);
        o->len += 3;
    }
}

static void
putf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
putf(struct out *o, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n > 0)
        put(o, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* A string, quoted: printable ASCII as is, the rest escaped. */
static void
put_str(struct out *o, const char *s, uint32_t len)
{
    uint32_t i;

    put(o, "\"", 1);
    for (i = 0; i < len && !o->full; i++) {
        unsigned char ch = (unsigned char)s[i];

        if (ch == '"' || ch == '\\') {
            char e[2] = {'\\', (char)ch};

            put(o, e, 2);
        } else if (ch >= 0x20 && ch < 0x7f) {
            put(o, (const char *)&ch, 1);
        } else {
            putf(o, "\\x%02x", ch);
        }
    }
    put(o, "\"", 1);
}

/* One value, as JSON-like text; -1 when the data is malformed. */
static int
put_value(struct out *o, struct folio_mp_cur *c, int depth)
{
    const char *s;
    uint32_t n, i, len;
    int64_t iv;
    uint64_t uv;
    double d;
    int8_t et;
    int b, map;

    if (depth > SUMMARY_DEPTH) {
        put(o, "...", 3);
        return folio_mp_skip(c);
    }
    switch (folio_mp_type(c)) {
    case FOLIO_MP_NIL:
        put(o, "null", 4);
        return folio_mp_read_nil(c);
    case FOLIO_MP_BOOL:
        if (folio_mp_read_bool(c, &b) != 0)
            return -1;
        put(o, b ? "true" : "false", b ? 4 : 5);
        return 0;
    case FOLIO_MP_UINT:
        if (folio_mp_read_uint(c, &uv) != 0)
            return -1;
        putf(o, "%llu", (unsigned long long)uv);
        return 0;
    case FOLIO_MP_INT:
        if (folio_mp_read_int(c, &iv) != 0)
            return -1;
        putf(o, "%lld", (long long)iv);
        return 0;
    case FOLIO_MP_FLOAT:
        if (folio_mp_read_float(c, &d) != 0)
            return -1;
        putf(o, "%g", d);
        return 0;
    case FOLIO_MP_STR:
        if (folio_mp_read_str(c, &s, &len) != 0)
            return -1;
        put_str(o, s, len);
        return 0;
    case FOLIO_MP_BIN:
        if (folio_mp_read_bin(c, &s, &len) != 0)
            return -1;
        putf(o, "<bin %u bytes>", len);
        return 0;
    case FOLIO_MP_EXT:
        if (folio_mp_read_ext(c, &et, &s, &len) != 0)
            return -1;
        putf(o, "<ext %d, %u bytes>", et, len);
        return 0;
    case FOLIO_MP_ARRAY:
    case FOLIO_MP_MAP:
        map = folio_mp_type(c) == FOLIO_MP_MAP;
        if ((map ? folio_mp_read_map(c, &n) : folio_mp_read_array(c, &n)) != 0)
            return -1;
        put(o, map ? "{" : "[", 1);
        for (i = 0; i < n; i++) {
            if (i > 0)
                put(o, ", ", 2);
            if (o->full)
                return 0;
            if (put_value(o, c, depth + 1) != 0)
                return -1;
            if (map) {
                put(o, ": ", 2);
                if (put_value(o, c, depth + 1) != 0)
                    return -1;
            }
        }
        put(o, map ? "}" : "]", 1);
        return 0;
    default:
        return -1;
    }
}

const char *
folio_slowlog_summary(const struct folio_mp_cur *params, uint32_t nparams,
                      char *buf, size_t cap)
{
    struct folio_mp_cur c = *params;
    struct out o = {buf, 0, cap, 0};
    uint32_t i;

    if (cap < 8) {
        if (cap > 0)
            buf[0] = '\0';
        return buf;
    }
    put(&o, "[", 1);
    for (i = 0; i < nparams && !o.full; i++) {
        if (i > 0)
            put(&o, ", ", 2);
        if (put_value(&o, &c, 1) != 0) {
            put(&o, "(malformed)", 11);
            break;
        }
    }
    if (!o.full)
        put(&o, "]", 1);
    buf[o.len < cap ? o.len : cap - 1] = '\0';
    return buf;
}

void
folio_slowlog_note(struct folio_worker *w, const char *method, uint64_t ns,
                   const uint64_t peer[3], const struct folio_mp_cur *params,
                   uint32_t nparams)
{
    static uint64_t window_ms, lines, dropped;
    char summary[SUMMARY_MAX], from[FOLIO_ADDR_TEXT];
    uint64_t now = folio_mono_ns() / 1000000;

    if (now - window_ms >= 1000) {
        if (dropped > 0)
            folio_log_warnx("slow requests: %llu more in the last second not "
                            "logged",
                            (unsigned long long)dropped);
        window_ms = now;
        lines = dropped = 0;
    }
    if (++lines > SLOW_LINES_PER_S) {
        dropped++;
        return;
    }
    if (params != NULL)
        folio_slowlog_summary(params, nparams, summary, sizeof(summary));
    else
        snprintf(summary, sizeof(summary), "not kept while it was held");
    if (peer != NULL)
        folio_addr_packed_format(peer, from, sizeof(from));
    else
        from[0] = '\0';
    folio_log_warnx("slow request: %s took %.1f ms (slow_request %u ms)%s%s: "
                    "params %s",
                    method, (double)ns / 1e6, w->cfg->slow_request_ms,
                    from[0] != '\0' ? " from " : "", from, summary);
}
