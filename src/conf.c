/*
 * conf.c - the option table behind foliod's command line, its
 * configuration file and its --help text (see conf.h).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "src/addr.h"
#include "src/alloc.h"
#include "src/conf.h"
#include "src/err.h"
#include "src/http_cors.h"
#include "src/log.h"
#include "src/suggest.h"

enum opt_type {
    T_FLAG,     /* int, set to 1; in a file: a boolean */
    T_BOOL,     /* int: yes/no/on/off/true/false/1/0 */
    T_STR,      /* char * */
    T_STR_OFF,  /* char *, "off" or "" sets NULL */
    T_LIST,     /* addresses: char *[FOLIO_MAX_LISTEN] + int count after it;
                   "off" empties it */
    T_ADDR_OFF, /* an address as char *, "off" or "" sets NULL */
    T_U32,
    T_U64,
    T_SIZE,    /* uint64_t bytes: 4096, 64k, 4m, 4MiB, 1g */
    T_MS,      /* uint32_t milliseconds: 60, 60s, 500ms, 2m, 1h */
    T_WORKERS, /* int: N or auto (0) */
    T_LEVEL,   /* int log level */
    T_CONF,    /* -c: command line only */
    T_CHECK,   /* --check-config */
    T_BUILD,   /* --build-data DIR: command line only */
    T_CHOICE,  /* int: the index of the value among arg's "a|b|c" */
    T_HELP,
    T_VERSION
};

struct opt {
    const char *name;
    int shortopt;
    int type;
    size_t off;
    uint64_t min, max;
    const char *def;
    const char *arg;
    const char *help;
};

#define O(f) offsetof(struct folio_config, f)
#define NONE ((size_t)-1)

static const struct opt opts[] = {
    {"config", 'c', T_CONF, O(conf_file), 0, 0, NULL, "FILE",
     "read settings from FILE"},
    {"foreground", 'f', T_FLAG, O(foreground), 0, 0, "no", NULL,
     "do not detach; log to stderr"},
    {"listen", 0, T_LIST, O(listen), 0, 0, FOLIO_DEFAULT_LISTEN, "ADDR",
     "serve on HOST:PORT, [V6ADDR]:PORT, PORT (on 127.0.0.1) or unix:PATH "
     "(repeatable)"},
    {"http-listen", 0, T_LIST, O(http_listen), 0, 0, FOLIO_DEFAULT_HTTP,
     "ADDR|off", "serve HTTP/1.1 and JSON on ADDR (repeatable; off: none)"},
    {"http-cors-origins", 0, T_STR_OFF, O(http_cors_origins), 0, 0, "*",
     "ORIGINS|off",
     "origins allowed to read HTTP answers in a browser (*: any)"},
    {"admin-socket", 0, T_STR_OFF, O(admin_socket), 0, 0, FOLIO_DEFAULT_ADMIN,
     "PATH|off",
     "Unix socket for admin methods (not root: in $XDG_RUNTIME_DIR/folio)"},
    {"workers", 0, T_WORKERS, O(workers), 1, FOLIO_MAX_WORKERS, "auto",
     "N|auto", "worker processes (auto: usable CPUs)"},
    {"corpus", 0, T_STR_OFF, O(corpus), 0, 0, "auto", "DIR|auto|off",
     "directory of corpus text files (auto: the installed corpus, if any)"},
    {"data-dir", 0, T_STR, O(data_dir), 0, 0, FOLIO_STATEDIR, "DIR",
     "writable state: LMDB environments, caches (not root: "
     "$XDG_STATE_HOME/folio)"},
    {"comments-max-size", 0, T_SIZE, O(comments_max_size), 1u << 20, 1ull << 40,
     "1g", "SIZE", "ceiling of the comments store"},
    {"comments-group-commit", 0, T_BOOL, O(comments_group_commit), 0, 0, "on",
     "on|off", "commit concurrent posts together, one sync"},
    {"comments-backend", 0, T_CHOICE, O(comments_backend), 0, 0, "lmdb",
     "lmdb|postgres", "where comments live: this host, or PostgreSQL"},
    {"comments-dsn", 0, T_STR_OFF, O(comments_dsn), 0, 0, NULL, "CONNINFO",
     "libpq connection string of the postgres backend"},
    {"comments-cache-size", 0, T_SIZE, O(comments_cache_size), 0, 1ull << 40,
     "64m", "SIZE", "encoded pages cached per worker (0: off)"},
    {"comments-timeout", 0, T_MS, O(comments_timeout_ms), 1, 3600000, "5s",
     "DURATION",
     "answer UNAVAILABLE, nothing stored, past this wait for the database "
     "(postgres) or the store's writer lock (lmdb)"},
    {"comments-key-window", 0, T_MS, O(comments_key_window_ms), 1000,
     2592000000u, "24h", "DURATION",
     "a post's idempotency_key is remembered so long (a retry within it "
     "gets the first comment back)"},
    {"freight-dir", 0, T_STR_OFF, O(freight_dir), 0, 0, "auto",
     "DIR|auto|off",
     "directory of carrier freight tables (CSV) (auto: the installed "
     "example tables, else the build's)"},
    {"catalog", 0, T_STR_OFF, O(catalog), 0, 0, "auto", "CSV|auto|off",
     "SKU catalog (CSV) (auto: the installed example catalog, else the "
     "build's)"},
    {"metrics-listen", 0, T_ADDR_OFF, O(metrics_listen), 0, 0,
     FOLIO_DEFAULT_METRICS, "ADDR|off", "Prometheus metrics over HTTP"},
    {"metrics-max-connections", 0, T_U32, O(metrics_max_connections), 1,
     100000, "128", "N",
     "HTTP connections the metrics listener holds at once"},
    {"metrics-header-timeout", 0, T_MS, O(metrics_header_timeout_ms), 0,
     86400000, "10s", "DURATION",
     "a metrics request's header must arrive within (0: never)"},
    {"metrics-idle-timeout", 0, T_MS, O(metrics_idle_timeout_ms), 1, 86400000,
     "10s", "DURATION", "close a metrics connection with no traffic this long"},
    {"log-level", 0, T_LEVEL, O(log_level), 0, 0, "info",
     "debug|info|warn|error", "lowest level logged"},
    {"log-file", 0, T_STR_OFF, O(log_file), 0, 0, NULL, "PATH",
     "log to PATH instead of stderr (reopened on SIGUSR1)"},
    {"pid-file", 0, T_STR_OFF, O(pid_file), 0, 0, NULL, "PATH",
     "write the master's pid to PATH"},
    {"user", 0, T_STR_OFF, O(user), 0, 0, NULL, "USER",
     "drop privileges to USER after binding (as root)"},
    {"ready-file", 0, T_STR_OFF, O(ready_file), 0, 0, NULL, "PATH",
     "write pid and bound addresses to PATH when ready"},
    {"max-connections", 0, T_U32, O(max_connections), 1, 1000000, "4096", "N",
     "connections per worker"},
    {"admin-max-connections", 0, T_U32, O(admin_max_connections), 1, 10000,
     "16", "N", "admin socket connections per worker, beyond max-connections"},
    {"max-message-bytes", 0, T_SIZE, O(max_message_bytes), 64, 1u << 30, "4m",
     "SIZE", "largest request accepted"},
    {"max-depth", 0, T_U32, O(max_depth), 2, 64, "32", "N",
     "deepest nesting of a request"},
    {"max-output-bytes", 0, T_SIZE, O(max_output_bytes), 4096, 1u << 30, "1m",
     "SIZE", "pending replies per connection before its requests wait"},
    {"max-output-hard-bytes", 0, T_SIZE, O(max_output_hard_bytes), 4096,
     1ull << 32, "8m", "SIZE",
     "a connection's output never grows past this (a reply over it: error 8)"},
    {"max-output-total", 0, T_SIZE, O(max_output_total), 0, 1ull << 40, "32m",
     "SIZE", "output buffered by all of a worker's connections (0: no limit)"},
    {"admin-max-output-bytes", 0, T_SIZE, O(admin_max_output_bytes), 4096,
     1u << 30, "4m", "SIZE", "max-output-bytes of admin connections"},
    {"admin-max-output-hard-bytes", 0, T_SIZE, O(admin_max_output_hard_bytes),
     4096, 1ull << 32, "64m", "SIZE",
     "max-output-hard-bytes of admin connections"},
    {"send-timeout", 0, T_MS, O(send_timeout_ms), 0, 86400000, "30s",
     "DURATION", "close a connection whose replies do not move (0: never)"},
    {"idle-timeout", 0, T_MS, O(idle_timeout_ms), 0, 86400000, "60s",
     "DURATION", "close connections idle this long (0: never)"},
    {"request-timeout", 0, T_MS, O(request_timeout_ms), 0, 86400000, "30s",
     "DURATION", "a started request must arrive within (0: never)"},
    {"shutdown-timeout", 0, T_MS, O(shutdown_timeout_ms), 0, 3600000, "10s",
     "DURATION", "drain deadline on stop and reload"},
    {"worker-timeout", 0, T_MS, O(worker_timeout_ms), 0, 86400000, "30s",
     "DURATION",
     "replace a worker whose loop stalls this long, with a backtrace "
     "(0: never)"},
    {"slow-request", 0, T_MS, O(slow_request_ms), 0, 86400000, "0", "DURATION",
     "log requests that take longer than this (0: never)"},
    {"busy-poll-us", 0, T_U32, O(busy_poll_us), 0, 10000, "0", "US",
     "after a turn that served, wait this many microseconds without "
     "sleeping, then read what came (0: never): fewer wake-ups, a core's "
     "time spent"},
    {"poll-yield", 0, T_BOOL, O(poll_yield), 0, 0, "off", "on|off",
     "after a turn that served, give the CPU to whatever else may run on it "
     "before polling: for clients on the same cores"},
    {"max-requests-per-worker", 0, T_U64, O(max_requests_per_worker), 0,
     UINT64_MAX, "0", "N",
     "replace a worker after about N requests (0: never)"},
    {"cubic-threshold-g", 0, T_U32, O(cubic_threshold_g), 0, 100000000, "5000",
     "GRAMS", "cubic weight applies above this"},
    {"backlog", 0, T_U32, O(backlog), 1, 65535, "511", "N",
     "listen queue length"},
    {"stats", 0, T_BOOL, O(stats), 0, 0, "on", "on|off",
     "per-request counters and latency histograms"},
    {"stats-log-interval", 0, T_MS, O(stats_log_interval_ms), 0, 86400000, "0",
     "DURATION", "log CPU, req/s and allocs/req per worker (0: never)"},
    {"profiling", 0, T_CHOICE, O(profiling), 0, 0, "auto", "on|off|auto",
     "serve /debug/pprof/ profiles (auto: if metrics_listen is loopback)"},
    {"profile-heap-rate", 0, T_SIZE, O(profile_heap_rate), 0, 1ull << 30,
     "512k", "SIZE", "bytes allocated between heap samples (0: none)"},
    {"check-config", 'n', T_CHECK, O(check_only), 0, 0, NULL, NULL,
     "check configuration and data, then exit"},
    {"build-data", 0, T_BUILD, O(build_data), 0, 0, NULL, "DIR",
     "build the corpus index and freight tables into DIR, then exit"},
    {"version", 'V', T_VERSION, NONE, 0, 0, NULL, NULL,
     "print the version and exit"},
    {"help", 'h', T_HELP, NONE, 0, 0, NULL, NULL, "print this help and exit"},
};

#define NOPTS (sizeof(opts) / sizeof(opts[0]))

_Static_assert(NOPTS <= FOLIO_CONFIG_MAX_OPTS, "room in from_file[]");

_Static_assert(offsetof(struct folio_config, nlisten) ==
                   offsetof(struct folio_config, listen) +
                       sizeof(char *) * FOLIO_MAX_LISTEN,
               "a T_LIST count follows its array");
_Static_assert(offsetof(struct folio_config, nhttp_listen) ==
                   offsetof(struct folio_config, http_listen) +
                       sizeof(char *) * FOLIO_MAX_LISTEN,
               "a T_LIST count follows its array");

#define FIELD(cfg, o, type) ((type *)(void *)((char *)(cfg) + (o)->off))

/* Options of the command line only: no key in the file. */
static int
cli_only(const struct opt *o)
{
    return o->off == NONE || o->type == T_CONF || o->type == T_CHECK ||
           o->type == T_BUILD;
}

/*
 * The index of `value` among a T_CHOICE's "a|b|c" (its arg), or -1.  With
 * value NULL: copies choice `index` into out (room for len bytes).
 */
static int
choice(const struct opt *o, const char *value, int index, char *out, size_t len)
{
    const char *p = o->arg, *e;
    int i;

    for (i = 0;; i++) {
        e = strchr(p, '|');
        if (e == NULL)
            e = p + strlen(p);
        if (value != NULL && strlen(value) == (size_t)(e - p) &&
            strncmp(value, p, (size_t)(e - p)) == 0)
            return i;
        if (value == NULL && i == index) {
            snprintf(out, len, "%.*s", (int)(e - p), p);
            return i;
        }
        if (*e == '\0')
            return -1;
        p = e + 1;
    }
}

const char *
folio_default_conf_file(void)
{
    return FOLIO_SYSCONFDIR "/foliod.conf";
}

static void
key_of(const struct opt *o, char *buf, size_t len)
{
    size_t i;

    for (i = 0; o->name[i] != '\0' && i < len - 1; i++)
        buf[i] = o->name[i] == '-' ? '_' : o->name[i];
    buf[i] = '\0';
}

/*
 * "unknown setting 'wokers'", with ", did you mean 'workers'?" when one
 * is near, the names written as the context writes them: file keys
 * (`dash` 0), or options (--workers).
 */
static void
unknown(char *err, size_t errlen, const char *what, const char *word,
        int dash)
{
    const char *names[NOPTS], *near;
    char shown[64], typed[64];
    size_t i, n = 0;

    while (dash && *word == '-')
        word++;
    /* --wokers=3: the option is what comes before '='. */
    snprintf(typed, sizeof(typed), "%.*s", (int)strcspn(word, "="), word);
    word = typed;
    for (i = 0; i < NOPTS; i++)
        if (dash || !cli_only(&opts[i]))
            names[n++] = opts[i].name;
    near = folio_suggest(word, names, n);
    if (near != NULL)
        snprintf(shown, sizeof(shown), "%s", near);
    for (i = 0; near != NULL && !dash && shown[i] != '\0'; i++)
        if (shown[i] == '-')
            shown[i] = '_';
    snprintf(err, errlen, "unknown %s '%s%s'%s%s%s%s", what, dash ? "--" : "",
             word, near != NULL ? ", did you mean '" : "",
             near != NULL && dash ? "--" : "", near != NULL ? shown : "",
             near != NULL ? "'?" : "");
}

/* The default of o for whoever runs foliod (folio_default_paths). */
static const char *
user_default(const struct opt *o)
{
    const struct folio_paths *p = folio_default_paths();

    if (!p->per_user)
        return NULL;
    if (o->off == O(data_dir))
        return p->data_dir;
    if (o->off == O(admin_socket))
        return p->admin_socket;
    return NULL;
}

static const struct opt *
find_opt(const char *key)
{
    char norm[64];
    size_t i;

    for (i = 0; key[i] != '\0' && i < sizeof(norm) - 1; i++)
        norm[i] = key[i] == '_' ? '-' : (char)tolower((unsigned char)key[i]);
    norm[i] = '\0';
    for (i = 0; i < NOPTS; i++)
        if (strcmp(opts[i].name, norm) == 0)
            return &opts[i];
    return NULL;
}

static int
parse_u64(const char *s, uint64_t *out)
{
    char *end;

    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    *out = strtoull(s, &end, 10);
    return errno != 0 || *end != '\0' ? -1 : 0;
}

static int
parse_size(const char *s, uint64_t *out)
{
    uint64_t v, mul = 1;
    char *end;

    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0)
        return -1;
    switch (tolower((unsigned char)*end)) {
    case '\0':
        break;
    case 'k':
        mul = 1024;
        break;
    case 'm':
        mul = 1024 * 1024;
        break;
    case 'g':
        mul = 1024 * 1024 * 1024;
        break;
    default:
        return -1;
    }
    if (*end != '\0') {
        end++;
        if (strcasecmp(end, "") != 0 && strcasecmp(end, "b") != 0 &&
            strcasecmp(end, "ib") != 0)
            return -1;
    }
    if (v > UINT64_MAX / mul)
        return -1;
    *out = v * mul;
    return 0;
}

int
folio_parse_duration(const char *s, double bare_ns, uint64_t *ns)
{
    char *e;
    double v;

    if (!isdigit((unsigned char)*s)) /* strtod's blanks, signs, inf: no */
        return -1;
    errno = 0;
    v = strtod(s, &e);
    if (e == s || errno != 0 || v < 0 || !isfinite(v))
        return -1;
    if (*e == '\0' && bare_ns == 0)
        return -1;
    if (*e == '\0')
        v *= bare_ns;
    else if (strcmp(e, "ns") == 0)
        ;
    else if (strcmp(e, "us") == 0)
        v *= 1e3;
    else if (strcmp(e, "ms") == 0)
        v *= 1e6;
    else if (strcmp(e, "s") == 0)
        v *= 1e9;
    else if (strcmp(e, "m") == 0 || strcmp(e, "min") == 0)
        v *= 60e9;
    else if (strcmp(e, "h") == 0)
        v *= 3600e9;
    else
        return -1;
    if (v > 1e18)
        return -1;
    *ns = (uint64_t)v;
    return 0;
}

/* The same grammar, in whole milliseconds ("1.5s"; not "100us"). */
int
folio_conf_duration_ms(const char *s, uint64_t *out)
{
    uint64_t ns;

    if (folio_parse_duration(s, 1e9, &ns) != 0 || ns % 1000000 != 0)
        return -1;
    *out = ns / 1000000;
    return 0;
}

static int
parse_bool(const char *s, int *out)
{
    static const char *const yes[] = {"yes", "on", "true", "1"};
    static const char *const no[] = {"no", "off", "false", "0"};
    size_t i;

    for (i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = 1;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = 0;
            return 0;
        }
    }
    return -1;
}

static int
set_str(char **field, const char *value)
{
    char *s = NULL;

    if (value != NULL && (s = folio_strdup(value)) == NULL)
        return FOLIO_ENOMEM;
    folio_free(*field);
    *field = s;
    return 0;
}

/* A bound of o as its values are written: 24h, 1g, 4096. */
static const char *
in_units(const struct opt *o, uint64_t v, char *buf, size_t len)
{
    static const struct {
        int type;
        uint64_t unit;
        const char *name;
    } units[] = {
        {T_MS, 3600000, "h"}, {T_MS, 60000, "m"},  {T_MS, 1000, "s"},
        {T_MS, 1, "ms"},      {T_SIZE, 1u << 30, "g"}, {T_SIZE, 1u << 20, "m"},
        {T_SIZE, 1u << 10, "k"},
    };
    size_t i;

    for (i = 0; i < sizeof(units) / sizeof(units[0]) && v != 0; i++) {
        if (units[i].type == o->type && v % units[i].unit == 0) {
            snprintf(buf, len, "%llu%s",
                     (unsigned long long)(v / units[i].unit), units[i].name);
            return buf;
        }
    }
    snprintf(buf, len, "%llu", (unsigned long long)v);
    return buf;
}

/* The port of an address option's default ("127.0.0.1:9788"), or -1. */
static int
default_port(const struct opt *o)
{
    const char *colon = o->def != NULL ? strrchr(o->def, ':') : NULL;

    return colon != NULL ? atoi(colon + 1) : -1;
}

static void
clear_list(struct folio_config *cfg, const struct opt *o)
{
    char **list = FIELD(cfg, o, char *);
    int *n = (int *)(void *)(list + FOLIO_MAX_LISTEN);
    int i;

    for (i = 0; i < *n; i++) {
        folio_free(list[i]);
        list[i] = NULL;
    }
    *n = 0;
}

/*
 * Set option o to `value` (NULL: a flag without one).  Messages call the
 * option `name`: as the file writes it (idle_timeout) or the command line
 * (--idle-timeout).
 */
static int
apply(struct folio_config *cfg, const struct opt *o, const char *value,
      const char *name, char *err, size_t errlen)
{
    char addr[FOLIO_ADDR_TEXT + 8], why[256];
    uint64_t v;
    int b;

    switch (o->type) {
    case T_FLAG:
    case T_BOOL:
        if (value == NULL) {
            *FIELD(cfg, o, int) = 1;
            return 0;
        }
        if (parse_bool(value, &b) != 0) {
            snprintf(err, errlen, "%s: expected yes or no, got '%s'", name,
                     value);
            return FOLIO_ECONFIG;
        }
        *FIELD(cfg, o, int) = b;
        return 0;
    case T_CHECK:
        *FIELD(cfg, o, int) = 1;
        return 0;
    case T_CHOICE:
        if ((b = choice(o, value, 0, NULL, 0)) < 0) {
            snprintf(err, errlen, "%s: expected %s, got '%s'", name, o->arg,
                     value);
            return FOLIO_ECONFIG;
        }
        *FIELD(cfg, o, int) = b;
        return 0;
    case T_BUILD:
    case T_CONF:
    case T_STR:
        if (*value == '\0') {
            snprintf(err, errlen, "%s: empty value", name);
            return FOLIO_ECONFIG;
        }
        return set_str(FIELD(cfg, o, char *), value) == 0 ? 0 : FOLIO_ENOMEM;
    case T_STR_OFF:
        if (*value == '\0' || strcmp(value, "off") == 0)
            value = NULL;
        if (value != NULL && o->off == O(http_cors_origins)) {
            struct folio_http_cors c;

            if (folio_http_cors_init(&c, value) != 0) {
                snprintf(err, errlen,
                         "%s: expected *, off, or origins such as "
                         "https://example.com, got '%s'",
                         name, value);
                return FOLIO_ECONFIG;
            }
            folio_http_cors_free(&c);
        }
        return set_str(FIELD(cfg, o, char *), value) == 0 ? 0 : FOLIO_ENOMEM;
    case T_ADDR_OFF:
        if (*value == '\0' || strcmp(value, "off") == 0)
            return set_str(FIELD(cfg, o, char *), NULL);
        if (folio_addr_expand(value, default_port(o), addr, sizeof(addr), why,
                              sizeof(why)) != 0) {
            snprintf(err, errlen, "%s: %s", name, why);
            return FOLIO_ECONFIG;
        }
        return set_str(FIELD(cfg, o, char *), addr) == 0 ? 0 : FOLIO_ENOMEM;
    case T_LIST: {
        char **list = FIELD(cfg, o, char *);
        int *n = (int *)(void *)(list + FOLIO_MAX_LISTEN);

        if (*n >= FOLIO_MAX_LISTEN) {
            snprintf(err, errlen, "%s: at most %d addresses", name,
                     FOLIO_MAX_LISTEN);
            return FOLIO_ECONFIG;
        }
        if (*value == '\0') {
            snprintf(err, errlen, "%s: empty address", name);
            return FOLIO_ECONFIG;
        }
        if (strcmp(value, "off") == 0) {
            clear_list(cfg, o);
            return 0;
        }
        if (folio_addr_expand(value, default_port(o), addr, sizeof(addr), why,
                              sizeof(why)) != 0) {
            snprintf(err, errlen, "%s: %s", name, why);
            return FOLIO_ECONFIG;
        }
        if ((list[*n] = folio_strdup(addr)) == NULL)
            return FOLIO_ENOMEM;
        (*n)++;
        return 0;
    }
    case T_WORKERS:
        if (strcmp(value, "auto") == 0) {
            *FIELD(cfg, o, int) = 0;
            return 0;
        }
        if (parse_u64(value, &v) != 0 || v < o->min || v > o->max) {
            snprintf(err, errlen, "%s: expected auto or 1..%llu, got '%s'",
                     name, (unsigned long long)o->max, value);
            return FOLIO_ECONFIG;
        }
        *FIELD(cfg, o, int) = (int)v;
        return 0;
    case T_LEVEL:
        if ((b = folio_log_parse_level(value)) < 0) {
            snprintf(err, errlen,
                     "%s: expected debug, info, notice, warn or error, got '%s'",
                     name, value);
            return FOLIO_ECONFIG;
        }
        *FIELD(cfg, o, int) = b;
        return 0;
    case T_U32:
    case T_U64:
    case T_SIZE:
    case T_MS: {
        int rc = o->type == T_SIZE ? parse_size(value, &v)
                 : o->type == T_MS ? folio_conf_duration_ms(value, &v)
                                   : parse_u64(value, &v);

        if (rc != 0 || v < o->min || v > o->max) {
            char lo[32], hi[32];

            snprintf(err, errlen, "%s: '%s' is not %s in %s..%s", name, value,
                     o->type == T_SIZE ? "a size (bytes, k, m, g)"
                     : o->type == T_MS ? "a duration (ms, s, m, h)"
                                       : "a number",
                     in_units(o, o->min, lo, sizeof(lo)),
                     in_units(o, o->max, hi, sizeof(hi)));
            return FOLIO_ECONFIG;
        }
        if (o->type == T_U64 || o->type == T_SIZE)
            *FIELD(cfg, o, uint64_t) = v;
        else
            *FIELD(cfg, o, uint32_t) = (uint32_t)v;
        return 0;
    }
    }
    snprintf(err, errlen, "%s cannot be set here", name);
    return FOLIO_ECONFIG;
}

void
folio_config_init(struct folio_config *cfg)
{
    char err[256];
    size_t i;

    memset(cfg, 0, sizeof(*cfg));
    for (i = 0; i < NOPTS; i++)
        if (opts[i].def != NULL && apply(cfg, &opts[i], opts[i].def,
                                         opts[i].name, err, sizeof(err)) != 0)
            folio_fatalx("built-in default: %s", err);
}

void
folio_config_free(struct folio_config *cfg)
{
    size_t i;

    for (i = 0; i < NOPTS; i++) {
        switch (opts[i].type) {
        case T_STR:
        case T_STR_OFF:
        case T_ADDR_OFF:
        case T_CONF:
        case T_BUILD:
            folio_free(*FIELD(cfg, &opts[i], char *));
            *FIELD(cfg, &opts[i], char *) = NULL;
            break;
        case T_LIST:
            clear_list(cfg, &opts[i]);
            break;
        }
    }
}

int
folio_config_set(struct folio_config *cfg, const char *key, const char *value,
                 char *err, size_t errlen)
{
    const struct opt *o = find_opt(key);
    char name[64];

    if (o == NULL || cli_only(o)) {
        unknown(err, errlen, "setting", key, 0);
        return FOLIO_ECONFIG;
    }
    key_of(o, name, sizeof(name));
    return apply(cfg, o, value, name, err, errlen);
}

/* Strip spaces; unquote "..." (with \" and \\ escapes). */
static char *
trim_value(char *s, int *bad)
{
    char *e, *r, *w;

    *bad = 0;
    while (isspace((unsigned char)*s))
        s++;
    if (*s == '"') {
        for (r = w = s + 1; *r != '\0' && *r != '"'; r++) {
            if (*r == '\\' && (r[1] == '"' || r[1] == '\\'))
                r++;
            *w++ = *r;
        }
        if (*r != '"') {
            *bad = 1;
            return s;
        }
        for (e = r + 1; isspace((unsigned char)*e); e++)
            ;
        if (*e != '\0' && *e != '#')
            *bad = 1;
        *w = '\0';
        return s + 1;
    }
    if ((e = strchr(s, '#')) != NULL)
        *e = '\0';
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

/*
 * The settings of stream f, named `path` in messages; seen[i] is set for
 * each option the file sets (NOPTS entries, zero at first).
 */
static int
parse_stream(struct folio_config *cfg, FILE *f, const char *path,
             unsigned char *seen, char *err, size_t errlen)
{
    char line[4096], msg[512], name[64], *key, *eq, *value, *p;
    unsigned lineno = 0;
    const struct opt *o;
    int bad, rc = 0;

    while (fgets(line, sizeof(line), f) != NULL) {
        lineno++;
        if (strchr(line, '\n') == NULL && !feof(f)) {
            snprintf(err, errlen, "%s:%u: line too long", path, lineno);
            rc = FOLIO_ECONFIG;
            break;
        }
        for (key = line; isspace((unsigned char)*key); key++)
            ;
        if (*key == '\0' || *key == '#')
            continue;
        if ((eq = strchr(key, '=')) == NULL) {
            snprintf(err, errlen, "%s:%u: expected 'key = value'", path,
                     lineno);
            rc = FOLIO_ECONFIG;
            break;
        }
        *eq = '\0';
        for (p = eq; p > key && isspace((unsigned char)p[-1]); p--)
            p[-1] = '\0';
        value = trim_value(eq + 1, &bad);
        if (bad) {
            snprintf(err, errlen, "%s:%u: unterminated or trailing quote",
                     path, lineno);
            rc = FOLIO_ECONFIG;
            break;
        }
        o = find_opt(key);
        if (o == NULL || cli_only(o)) {
            unknown(msg, sizeof(msg), "setting", key, 0);
            snprintf(err, errlen, "%s:%u: %s", path, lineno, msg);
            rc = FOLIO_ECONFIG;
            break;
        }
        /* The first `listen` of a file replaces the default list. */
        if (o->type == T_LIST && !seen[o - opts])
            clear_list(cfg, o);
        seen[o - opts] = cfg->from_file[o - opts] = 1;
        key_of(o, name, sizeof(name));
        if ((rc = apply(cfg, o, value, name, msg, sizeof(msg))) != 0) {
            snprintf(err, errlen, "%s:%u: %s", path, lineno, msg);
            rc = FOLIO_ECONFIG;
            break;
        }
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        rc = FOLIO_ECONFIG;
    }
    return rc;
}

static int
parse_file(struct folio_config *cfg, const char *path, unsigned char *seen,
           char *err, size_t errlen)
{
    FILE *f;
    int rc;

    if ((f = fopen(path, "re")) == NULL) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return FOLIO_ECONFIG;
    }
    rc = parse_stream(cfg, f, path, seen, err, errlen);
    fclose(f);
    return rc;
}

int
folio_config_parse_file(struct folio_config *cfg, const char *path, char *err,
                        size_t errlen)
{
    unsigned char seen[NOPTS] = {0};

    return parse_file(cfg, path, seen, err, errlen);
}

int
folio_config_parse_text(struct folio_config *cfg, const char *text,
                        size_t len, const char *name, char *err, size_t errlen)
{
    unsigned char seen[NOPTS] = {0};
    FILE *f;
    int rc;

    if (len == 0)
        return 0;
    if ((f = fmemopen((void *)(uintptr_t)text, len, "r")) == NULL) {
        snprintf(err, errlen, "%s: %s", name, strerror(errno));
        return FOLIO_ECONFIG;
    }
    rc = parse_stream(cfg, f, name, seen, err, errlen);
    fclose(f);
    return rc;
}

static void
build_getopt(struct option *lo, char *so)
{
    size_t i, n = 0;

    for (i = 0; i < NOPTS; i++) {
        int has_arg = opts[i].arg != NULL ? required_argument : no_argument;

        lo[i].name = opts[i].name;
        lo[i].has_arg = has_arg;
        lo[i].flag = NULL;
        lo[i].val = 256 + (int)i;
        if (opts[i].shortopt != 0) {
            so[n++] = (char)opts[i].shortopt;
            if (has_arg == required_argument)
                so[n++] = ':';
        }
    }
    memset(&lo[NOPTS], 0, sizeof(lo[NOPTS]));
    so[n] = '\0';
}

static const struct opt *
opt_of(int ch)
{
    size_t i;

    if (ch >= 256 && ch < 256 + (int)NOPTS)
        return &opts[ch - 256];
    for (i = 0; i < NOPTS; i++)
        if (opts[i].shortopt == ch)
            return &opts[i];
    return NULL;
}

/* " (see WHERE)" after the message in err, where it fits. */
static void
see(char *err, size_t errlen, const char *where)
{
    size_t n = strlen(err);

    if (n < errlen)
        snprintf(err + n, errlen - n, " (see %s)", where);
}

/*
 * The per-user defaults (folio_default_paths) of the options neither the
 * file nor the command line set, for a foliod run by a user without
 * --user; a root start, or one with --user, keeps the system's.
 */
static int
apply_user_defaults(struct folio_config *cfg, const unsigned char *seen)
{
    const char *def;
    size_t i;

    if (cfg->user != NULL)
        return 0;
    for (i = 0; i < NOPTS; i++) {
        if (seen[i] || (def = user_default(&opts[i])) == NULL)
            continue;
        if (set_str(FIELD(cfg, &opts[i], char *), def) != 0)
            return FOLIO_ENOMEM;
        cfg->per_user = 1;
    }
    return 0;
}

int
folio_config_load(struct folio_config *cfg, int argc, char *const argv[],
                  int *action, char *err, size_t errlen)
{
    struct option lo[NOPTS + 1];
    unsigned char seen[NOPTS] = {0}, cli_seen[NOPTS] = {0};
    char so[2 * NOPTS + 2], msg[512], name[80];
    const char *file = NULL;
    const struct opt *o;
    int ch, rc;

    *action = FOLIO_CONFIG_RUN;
    build_getopt(lo, so + 1);
    so[0] = ':'; /* report a missing argument as ':' */
    folio_config_init(cfg);

    /* Pass 1: which file, or help/version. */
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, so, lo, NULL)) != -1) {
        if (ch == '?' || ch == ':') {
            const char *bad = argv[optind - 1];

            if (ch == ':')
                snprintf(err, errlen, "option '%s' needs a value", bad);
            else if (optopt != 0)
                snprintf(err, errlen, "unknown option '-%c'", optopt);
            else
                unknown(err, errlen, "option",
                        strncmp(bad, "--", 2) == 0 ? bad + 2 : bad, 1);
            see(err, errlen, "foliod --help");
            return FOLIO_ECONFIG;
        }
        o = opt_of(ch);
        if (o->type == T_HELP) {
            *action = FOLIO_CONFIG_HELP;
            return 0;
        }
        if (o->type == T_VERSION) {
            *action = FOLIO_CONFIG_VERSION;
            return 0;
        }
        if (o->type == T_CONF)
            file = optarg;
    }
    if (optind < argc) {
        snprintf(err, errlen, "unexpected argument '%s'", argv[optind]);
        see(err, errlen, "foliod --help");
        return FOLIO_ECONFIG;
    }
    if (file == NULL && access(folio_default_conf_file(), F_OK) == 0)
        file = folio_default_conf_file();
    if (file != NULL) {
        if ((rc = parse_file(cfg, file, seen, err, errlen)) != 0) {
            see(err, errlen, "foliod.conf(5)");
            return rc;
        }
        if (set_str(&cfg->conf_file, file) != 0)
            return FOLIO_ENOMEM;
    }

    /* Pass 2: the command line over the file. */
    optind = 0;
    while ((ch = getopt_long(argc, argv, so, lo, NULL)) != -1) {
        o = opt_of(ch);
        if (o->type == T_CONF)
            continue;
        /* A list on the command line replaces the file's. */
        if (o->type == T_LIST && !cli_seen[o - opts])
            clear_list(cfg, o);
        seen[o - opts] = cli_seen[o - opts] = 1;
        cfg->from_file[o - opts] = 0;
        snprintf(name, sizeof(name), "--%s", o->name);
        if ((rc = apply(cfg, o, optarg, name, msg, sizeof(msg))) != 0) {
            snprintf(err, errlen, "%s", msg);
            see(err, errlen, "foliod --help");
            return FOLIO_ECONFIG;
        }
    }
    return apply_user_defaults(cfg, seen);
}

const char *
folio_config_name(const struct folio_config *cfg, const char *name, char *buf,
                  size_t len)
{
    const struct opt *o = find_opt(name);
    char key[64];

    if (o != NULL && cfg->from_file[o - opts] && cfg->conf_file != NULL) {
        key_of(o, key, sizeof(key));
        snprintf(buf, len, "%s in %s", key, cfg->conf_file);
    } else {
        snprintf(buf, len, "--%s", name);
    }
    return buf;
}

const char *
folio_config_hint(const char *name, char *buf, size_t len)
{
    const struct opt *o = find_opt(name);

    snprintf(buf, len, "--%s%s%s", name, o != NULL && o->arg ? " " : "",
             o != NULL && o->arg ? o->arg : "");
    return buf;
}

void
folio_config_usage(FILE *f)
{
    char left[64];
    size_t i;

    fprintf(f, "usage: foliod [-c FILE] [-f|--foreground] [--listen ADDR]... "
               "[--admin-socket PATH]\n"
               "              [--http-listen ADDR|off]... "
               "[--http-cors-origins ORIGINS|off]\n"
               "              [--workers N|auto] [--corpus DIR|auto|off] "
               "[--data-dir DIR]\n"
               "              [--freight-dir DIR|auto|off] "
               "[--catalog CSV|auto|off] "
               "[--metrics-listen ADDR]\n"
               "              [--log-level debug|info|warn|error] "
               "[--pid-file PATH] [--user USER]\n"
               "       foliod --check-config [-c FILE] [options]\n"
               "       foliod --build-data DIR [-c FILE] [options]\n"
               "       foliod --version | --help\n\noptions:\n");
    for (i = 0; i < NOPTS; i++) {
        const struct opt *o = &opts[i];

        if (o->shortopt != 0)
            snprintf(left, sizeof(left), "-%c, --%s%s%s", o->shortopt,
                     o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        else
            snprintf(left, sizeof(left), "    --%s%s%s", o->name,
                     o->arg ? " " : "", o->arg ? o->arg : "");
        fprintf(f, "  %-36s %s", left, o->help);
        if (user_default(o) != NULL)
            fprintf(f, " [%s; as root %s]", user_default(o), o->def);
        else if (o->def != NULL && o->type != T_FLAG)
            fprintf(f, " [%s]", o->def);
        fputc('\n', f);
    }
    fprintf(f, "\nEvery option is also a key of the configuration file "
               "(%s):\n'key = value', with '_' for '-'.  See foliod(8) and "
               "foliod.conf(5).\n",
            folio_default_conf_file());
}

/*
 * "key = value", the value quoted when reading it back bare would change
 * it (a '#', a quote, a backslash, spaces at either end, nothing at all):
 * what trim_value() reads.
 */
static void
write_str(FILE *f, const char *key, const char *s)
{
    size_t n = strlen(s);

    if (n > 0 && !isspace((unsigned char)s[0]) &&
        !isspace((unsigned char)s[n - 1]) && strpbrk(s, "#\"\\") == NULL) {
        fprintf(f, "%s = %s\n", key, s);
        return;
    }
    fprintf(f, "%s = \"", key);
    for (; *s != '\0'; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputs("\"\n", f);
}

void
folio_config_write(const struct folio_config *cfg, FILE *f)
{
    static const char *const levels[] = {"debug", "info", "notice",
                                         "warn",  "error", "crit"};
    char key[64];
    size_t i;
    int j;

    for (i = 0; i < NOPTS; i++) {
        const struct opt *o = &opts[i];

        if (cli_only(o))
            continue;
        key_of(o, key, sizeof(key));
        switch (o->type) {
        case T_FLAG:
        case T_BOOL:
            fprintf(f, "%s = %s\n", key,
                    *FIELD(cfg, o, const int) ? "yes" : "no");
            break;
        case T_STR:
        case T_STR_OFF:
        case T_ADDR_OFF: {
            const char *s = *FIELD(cfg, o, char *const);

            write_str(f, key, s != NULL ? s : "off");
            break;
        }
        case T_LIST: {
            char *const *list = FIELD(cfg, o, char *const);
            const int *n = (const int *)(const void *)(list + FOLIO_MAX_LISTEN);

            if (*n == 0)
                fprintf(f, "%s = off\n", key);
            for (j = 0; j < *n; j++)
                write_str(f, key, list[j]);
            break;
        }
        case T_WORKERS:
            if (*FIELD(cfg, o, const int) == 0)
                fprintf(f, "%s = auto\n", key);
            else
                fprintf(f, "%s = %d\n", key, *FIELD(cfg, o, const int));
            break;
        case T_LEVEL:
            fprintf(f, "%s = %s\n", key, levels[*FIELD(cfg, o, const int)]);
            break;
        case T_CHOICE: {
            char name[64];

            choice(o, NULL, *FIELD(cfg, o, const int), name, sizeof(name));
            fprintf(f, "%s = %s\n", key, name);
            break;
        }
        case T_U32:
            fprintf(f, "%s = %u\n", key, *FIELD(cfg, o, const uint32_t));
            break;
        case T_MS:
            fprintf(f, "%s = %ums\n", key, *FIELD(cfg, o, const uint32_t));
            break;
        case T_U64:
        case T_SIZE:
            fprintf(f, "%s = %llu\n", key,
                    (unsigned long long)*FIELD(cfg, o, const uint64_t));
            break;
        }
    }
}

/* The value of a default for a file: "off" for an unset string. */
static const char *
default_text(const struct opt *o)
{
    if (o->def != NULL)
        return o->def;
    return o->type == T_FLAG || o->type == T_BOOL ? "no" : "off";
}

void
folio_config_write_defaults(FILE *f, const char *version)
{
    char key[64];
    size_t i;

    fprintf(f,
            "# foliod.conf - the configuration file of foliod(8); the syntax "
            "is in\n"
            "# foliod.conf(5).  Every setting foliod knows is below, "
            "commented out, at\n"
            "# its built-in default: uncomment a line to change it.  The "
            "command line\n"
            "# overrides this file.  Check a change with `foliod "
            "--check-config', apply\n"
            "# it with `systemctl reload foliod' (or SIGHUP to the master).\n"
            "#\n"
            "# Generated from foliod's option table (folio %s).\n",
            version);
    for (i = 0; i < NOPTS; i++) {
        const struct opt *o = &opts[i];

        if (cli_only(o))
            continue;
        key_of(o, key, sizeof(key));
        fprintf(f, "\n# %s%s%s: %s\n#%s = %s\n", key, o->arg ? " = " : "",
                o->arg ? o->arg : "", o->help, key, default_text(o));
    }
}
