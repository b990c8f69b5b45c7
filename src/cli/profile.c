/*
 * profile.c - `folio profile cpu|heap|allocs` (folio(1)): fetch a
 * profile from foliod's metrics listener (/debug/pprof/, PROTOCOL.md
 * section 6), write it where pprof can read it, and print its top
 * functions as `pprof -top` does, so that no Go toolchain is needed to
 * read where the time or the memory goes.  With --every, the continuous
 * profiler's pull: the kinds asked for (all three by default) every
 * interval into files of a directory, the oldest removed past --keep,
 * until interrupted or --count rounds.  Its own options, parsed here:
 * cli.c hands the whole command line over when the command is profile.
 */
#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/buf.h"
#include "src/cli/cli_int.h"
#include "src/clock.h"
#include "src/conf.h"
#include "src/defaults.h"
#include "src/err.h"
#include "src/http.h"
#include "src/prof/pprof.h"

#define USAGE                                                                  \
    "profile cpu|heap|allocs [--seconds N] [--worker K|master] [-o FILE]"    \
    " [--top N] [--metrics HOST:PORT] [--timeout SEC]\n"                       \
    "       folio [options] profile [KIND,...] --every DURATION --dir DIR"     \
    " [--count N] [--keep N]"
#define DEFAULT_SECONDS 30
#define EVERY_SECONDS 10 /* a CPU profile's length with --every */
#define DEFAULT_TOP 20
#define GRACE_S 60 /* past the profile's seconds: the server merges */
#define NKINDS 3

enum {
    P_SECONDS = 300,
    P_WORKER,
    P_TOP,
    P_METRICS,
    P_TIMEOUT,
    P_EVERY,
    P_DIR,
    P_COUNT,
    P_KEEP
};

static const char *const kinds[NKINDS] = {"cpu", "heap", "allocs"};
static const char *const paths[NKINDS] = {"profile", "heap", "allocs"};

/* What the command line asks for. */
struct pull {
    const char *metrics, *worker, *out, *dir;
    long seconds; /* CPU; -1: not given */
    long top;     /* -1: not given */
    long timeout; /* -1: not given */
    uint64_t every_ms; /* 0: once */
    long count;   /* --every: rounds; 0: until interrupted */
    long keep;    /* --every: files kept of each kind; 0: all */
    unsigned which; /* a bit per kind */
};

static int usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static int
usage_error(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "folio: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nusage: folio [options] %s\n", USAGE);
    return FOLIO_CLI_EUSAGE;
}

static int
parse_count(const char *s, long lo, long hi, long *out)
{
    char *end;

    errno = 0;
    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    *out = strtol(s, &end, 10);
    return errno != 0 || *end != '\0' || *out < lo || *out > hi ? -1 : 0;
}

/* "cpu", "heap,allocs": the bits of the kinds named, or 0. */
static unsigned
parse_kinds(const char *s)
{
    unsigned bits = 0;
    size_t n;
    int k;

    while (*s != '\0') {
        n = strcspn(s, ",");
        for (k = 0; k < NKINDS; k++)
            if (strlen(kinds[k]) == n && strncmp(s, kinds[k], n) == 0)
                break;
        if (k == NKINDS)
            return 0;
        bits |= 1u << k;
        s += n;
        if (*s == ',' && *++s == '\0')
            return 0;
    }
    return bits;
}

const char folio_cli_profile_usage[] = USAGE;

const char folio_cli_profile_help[] =
    "A profile of the server from its metrics listener (foliod(8),\n"
    "PROFILING), not its RPC address: cpu, every worker's CPU time by\n"
    "function over --seconds N (default 30, 1 to 300); heap, what is in\n"
    "use by the stack that allocated it; allocs, what was allocated since\n"
    "start.  Written, gzipped profile.proto for pprof, to -o FILE (default\n"
    "folio-KIND-DATE.pb.gz in --dir DIR or here; '-': standard output and\n"
    "nothing else), then the --top N functions (default 20; 0: none), flat\n"
    "and cumulative, as pprof -top prints them: no Go toolchain needed.\n"
    "--worker K (0, 1, ...) or master profiles one process; --metrics\n"
    "HOST:PORT, else $FOLIO_METRICS, else 127.0.0.1:9788; --timeout SEC\n"
    "for each answer (default: the seconds and 60 more).\n\n"
    "--every DURATION (60s, 5m) pulls the kinds given (cpu,heap,allocs by\n"
    "default; a CPU profile of --seconds, default 10) that often into\n"
    "--dir DIR, as a continuous profiler does, until interrupted or --count\n"
    "N rounds, keeping the newest --keep N files of each kind (default:\n"
    "all); a failed pull is reported and the next one goes on.\n\n"
    "  folio profile cpu --seconds 10 --top 5\n"
    "  go tool pprof -http :8080 folio-cpu-*.pb.gz\n"
    "  folio profile --every 60s --dir /var/tmp/folio --keep 1440\n";

/* DIR/folio-KIND-DATE.pb.gz (DIR "" for here), unique: -2, -3 if taken. */
static void
file_name(char *buf, size_t len, const char *dir, const char *kind)
{
    time_t now = time(NULL);
    struct tm tm;
    char date[64];
    int k;

    localtime_r(&now, &tm);
    strftime(date, sizeof(date), "%Y%m%d-%H%M%S", &tm);
    snprintf(buf, len, "%s%sfolio-%s-%s.pb.gz", dir, dir[0] != '\0' ? "/" : "",
             kind, date);
    for (k = 2; access(buf, F_OK) == 0 && k < 100; k++)
        snprintf(buf, len, "%s%sfolio-%s-%s-%d.pb.gz", dir,
                 dir[0] != '\0' ? "/" : "", kind, date, k);
}

/*
 * `len` bytes to `path` whole: a temporary name in its directory, renamed,
 * so that no reader sees half a profile; what is there and not a regular
 * file (/dev/null, a pipe) is written as it is, never replaced.
 */
static int
write_file(const char *path, const char *data, size_t len)
{
    char tmp[4200];
    struct stat st;
    FILE *f;
    int e;

    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        if ((f = fopen(path, "we")) == NULL)
            return -1;
        if (fwrite(data, 1, len, f) != len) {
            e = errno;
            fclose(f);
            errno = e;
            return -1;
        }
        return fclose(f);
    }
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if ((f = fopen(tmp, "wbe")) == NULL)
        return -1;
    if (fwrite(data, 1, len, f) != len || fflush(f) != 0) {
        e = errno;
        fclose(f);
        unlink(tmp);
        errno = e;
        return -1;
    }
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    return 0;
}

/*
 * One profile of kind `which`, written to `out` (NULL: a name of its
 * own), its top printed if `top` > 0.  The exit status.
 */
static int
fetch(const struct pull *pl, int which, const char *out, long top)
{
    char path[256], file[4200], err[512];
    struct folio_http_answer ans;
    struct folio_pprof p;
    long seconds = pl->seconds >= 0 ? pl->seconds
                   : pl->every_ms != 0 ? EVERY_SECONDS
                                       : DEFAULT_SECONDS;
    long timeout = pl->timeout >= 0 ? pl->timeout
                                    : (which == 0 ? seconds : 0) + GRACE_S;
    int rc, st = FOLIO_CLI_OK;
    FILE *f;

    rc = snprintf(path, sizeof(path), "/debug/pprof/%s", paths[which]);
    if (which == 0)
        rc += snprintf(path + rc, sizeof(path) - (size_t)rc, "?seconds=%ld",
                       seconds);
    if (pl->worker != NULL)
        snprintf(path + rc, sizeof(path) - (size_t)rc, "%sworker=%s",
                 which == 0 ? "&" : "?", pl->worker);
    if (which == 0 && pl->every_ms == 0)
        fprintf(stderr, "folio: profiling %s%s for %ld s...\n",
                pl->worker == NULL ? "every worker" : "worker ",
                pl->worker != NULL ? pl->worker : "", seconds);
    rc = folio_http_get(pl->metrics, path, (int)timeout * 1000, &ans, err,
                        sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "folio: %s profile: %s\n", kinds[which], err);
        st = rc == FOLIO_EINVAL ? FOLIO_CLI_EUSAGE : FOLIO_CLI_ECONN;
        goto done;
    }
    if (ans.status != 200) {
        /* The server says why, in plain text. */
        size_t n = folio_buf_pending(&ans.body);

        while (n > 0 && folio_buf_at(&ans.body, 0)[n - 1] == '\n')
            n--;
        fprintf(stderr, "folio: %s answered %d: ", pl->metrics, ans.status);
        folio_cli_put_text(stderr, folio_buf_at(&ans.body, 0), n);
        fputc('\n', stderr);
        st = FOLIO_CLI_ESERVER;
        goto done;
    }
    if (folio_pprof_decode(folio_buf_at(&ans.body, 0),
                           folio_buf_pending(&ans.body), &p, err,
                           sizeof(err)) != 0) {
        fprintf(stderr, "folio: the profile from %s: %s\n", pl->metrics, err);
        st = FOLIO_CLI_ESERVER;
        goto done;
    }
    if (out == NULL) {
        file_name(file, sizeof(file), pl->dir != NULL ? pl->dir : "",
                  kinds[which]);
        out = file;
    }
    if (strcmp(out, "-") == 0) {
        f = stdout;
        if (fwrite(folio_buf_at(&ans.body, 0), 1, folio_buf_pending(&ans.body),
                   f) != folio_buf_pending(&ans.body) ||
            fflush(f) != 0)
            goto write_failed;
        folio_pprof_free(&p);
        goto done;
    }
    if (write_file(out, folio_buf_at(&ans.body, 0),
                   folio_buf_pending(&ans.body)) != 0)
        goto write_failed;
    if (pl->every_ms != 0)
        fprintf(stderr, "folio: %s profile written to %s (%zu bytes)\n",
                kinds[which], out, folio_buf_pending(&ans.body));
    else
        fprintf(stderr, "folio: profile written to %s (go tool pprof %s)\n",
                out, out);
    if (top > 0 &&
        folio_pprof_top_print(stdout, &p, folio_pprof_type_index(&p, NULL),
                              (unsigned)top) != 0) {
        fprintf(stderr, "folio: the profile has no sample type\n");
        st = FOLIO_CLI_ESERVER;
    }
    folio_pprof_free(&p);
    goto done;
write_failed:
    fprintf(stderr, "folio: writing %s: %s\n", out, strerror(errno));
    st = FOLIO_CLI_EUSAGE;
    folio_pprof_free(&p);
done:
    folio_http_answer_free(&ans);
    return st;
}

/* Whether `name` is one of our files of `kind`: folio-KIND-DATE[-N].pb.gz. */
static int
ours(const char *name, const char *kind)
{
    size_t k = strlen(kind), n = strlen(name);

    return strncmp(name, "folio-", 6) == 0 &&
           strncmp(name + 6, kind, k) == 0 && name[6 + k] == '-' &&
           n >= 6 + k + 1 + 15 + 6 && strcmp(name + n - 6, ".pb.gz") == 0 &&
           name[6 + k + 1] >= '0' && name[6 + k + 1] <= '9';
}

struct aged {
    char name[256];
    time_t mtime;
};

static int
cmp_aged(const void *a, const void *b)
{
    const struct aged *x = a, *y = b;

    if (x->mtime != y->mtime)
        return x->mtime < y->mtime ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Remove the oldest of our files of `kind` in dir past the newest `keep`. */
static void
prune(const char *dir, const char *kind, long keep)
{
    struct aged *v = NULL, *nv;
    size_t n = 0, cap = 0, i;
    struct dirent *e;
    struct stat st;
    char path[4400];
    DIR *d;

    if (keep <= 0 || (d = opendir(dir)) == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        if (!ours(e->d_name, kind) || strlen(e->d_name) >= sizeof(v->name))
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            if ((nv = realloc(v, cap * sizeof(*v))) == NULL)
                break;
            v = nv;
        }
        snprintf(v[n].name, sizeof(v[n].name), "%s", e->d_name);
        v[n].mtime = st.st_mtime;
        n++;
    }
    closedir(d);
    qsort(v, n, sizeof(*v), cmp_aged);
    for (i = 0; n > (size_t)keep && i < n - (size_t)keep; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, v[i].name);
        if (unlink(path) != 0)
            fprintf(stderr, "folio: removing %s: %s\n", path, strerror(errno));
    }
    free(v);
}

/*
 * --every: a round of every kind asked each interval, on a fixed beat
 * from the start (a round that overran skips the beats it missed), until
 * interrupted or --count rounds.  The status of the last pull that
 * failed, 0 if none did.
 */
static int
every(const struct pull *pl)
{
    uint64_t start = folio_mono_ms(), next, now;
    long round;
    int k, st, failed = FOLIO_CLI_OK;

    folio_cli_catch_interrupts();
    for (round = 0; pl->count == 0 || round < pl->count; round++) {
        for (k = 0; k < NKINDS && !folio_cli_interrupted(); k++) {
            if (!(pl->which & (1u << k)))
                continue;
            if ((st = fetch(pl, k, NULL, pl->top > 0 ? pl->top : 0)) !=
                FOLIO_CLI_OK)
                failed = st;
            else
                prune(pl->dir, kinds[k], pl->keep);
            if (st == FOLIO_CLI_EUSAGE)
                goto out; /* the directory: no later round does better */
        }
        if (folio_cli_interrupted() ||
            (pl->count != 0 && round + 1 == pl->count))
            break;
        now = folio_mono_ms();
        next = start + ((now - start) / pl->every_ms + 1) * pl->every_ms;
        if (folio_cli_nap((double)(next - now) / 1e3) != 0)
            break;
    }
out:
    folio_cli_release_interrupts();
    return failed;
}

int
folio_cli_profile_main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"seconds", required_argument, NULL, P_SECONDS},
        {"worker", required_argument, NULL, P_WORKER},
        {"output", required_argument, NULL, 'o'},
        {"top", required_argument, NULL, P_TOP},
        {"metrics", required_argument, NULL, P_METRICS},
        {"timeout", required_argument, NULL, P_TIMEOUT},
        {"every", required_argument, NULL, P_EVERY},
        {"dir", required_argument, NULL, P_DIR},
        {"count", required_argument, NULL, P_COUNT},
        {"keep", required_argument, NULL, P_KEEP},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *kind = NULL;
    struct pull pl;
    struct stat st;
    long k;
    int ch, i, which, count_given = 0, keep_given = 0;

    memset(&pl, 0, sizeof(pl));
    pl.metrics = folio_default_metrics();
    pl.seconds = pl.top = pl.timeout = -1;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":o:h", lo, NULL)) != -1) {
        switch (ch) {
        case P_SECONDS:
            if (parse_count(optarg, 1, 300, &pl.seconds) != 0)
                return usage_error("--seconds: '%s' is not 1 to 300", optarg);
            break;
        case P_WORKER:
            if (strcmp(optarg, "master") != 0 &&
                parse_count(optarg, 0, 1000000, &k) != 0)
                return usage_error("--worker: '%s' is not a worker number "
                                   "or master",
                                   optarg);
            pl.worker = optarg;
            break;
        case 'o':
            pl.out = optarg;
            break;
        case P_TOP:
            if (parse_count(optarg, 0, 1000000, &pl.top) != 0)
                return usage_error("--top: '%s' is not a count", optarg);
            break;
        case P_METRICS:
            pl.metrics = optarg;
            break;
        case P_TIMEOUT:
            if (parse_count(optarg, 1, 86400, &pl.timeout) != 0)
                return usage_error("--timeout: '%s' is not a number of "
                                   "seconds",
                                   optarg);
            break;
        case P_EVERY:
            if (folio_conf_duration_ms(optarg, &pl.every_ms) != 0 ||
                pl.every_ms < 1000 || pl.every_ms > 86400000)
                return usage_error("--every: '%s' is not a duration of 1s "
                                   "to 24h (60s, 5m)",
                                   optarg);
            break;
        case P_DIR:
            pl.dir = optarg;
            break;
        case P_COUNT:
            if (parse_count(optarg, 1, 100000000, &pl.count) != 0)
                return usage_error("--count: '%s' is not a count", optarg);
            count_given = 1;
            break;
        case P_KEEP:
            if (parse_count(optarg, 1, 100000000, &pl.keep) != 0)
                return usage_error("--keep: '%s' is not a count", optarg);
            keep_given = 1;
            break;
        case 'h':
            printf("usage: folio [options] %s\n\n%s", USAGE,
                   folio_cli_profile_help);
            return FOLIO_CLI_OK;
        case ':':
            return usage_error("option '%s' needs a value", argv[optind - 1]);
        default:
            return usage_error("profile: unknown option '%s'",
                               argv[optind - 1]);
        }
    }
    /* What is left: "profile" and the kinds. */
    for (i = optind; i < argc; i++) {
        if (strcmp(argv[i], "profile") == 0 && kind == NULL)
            continue;
        if (kind != NULL)
            return usage_error("profile: too many arguments ('%s')", argv[i]);
        kind = argv[i];
    }
    if (kind != NULL && (pl.which = parse_kinds(kind)) == 0)
        return usage_error("profile: '%s' is not cpu, heap or allocs (or a "
                           "list of them with --every)",
                           kind);
    if (pl.out != NULL && pl.dir != NULL)
        return usage_error("-o and --dir: one file, or a directory");
    if (pl.dir != NULL && (stat(pl.dir, &st) != 0 || !S_ISDIR(st.st_mode)))
        return usage_error("--dir: %s is not a directory", pl.dir);
    if (pl.every_ms == 0) {
        if ((count_given || keep_given))
            return usage_error("--count and --keep go with --every");
        if (pl.which == 0)
            return usage_error("profile: which one: cpu, heap or allocs?");
        for (which = 0; which < NKINDS && pl.which != 1u << which; which++)
            ;
        if (which == NKINDS)
            return usage_error("profile: one kind at a time, or --every");
        if (which != 0 && pl.seconds >= 0)
            return usage_error("--seconds: a %s profile is a snapshot", kind);
        return fetch(&pl, which, pl.out,
                     pl.top >= 0 ? pl.top : DEFAULT_TOP);
    }
    if (pl.which == 0)
        pl.which = (1u << NKINDS) - 1;
    if (pl.dir == NULL)
        return usage_error("--every writes into a directory: --dir DIR");
    if (pl.out != NULL)
        return usage_error("-o is one file: --every writes into --dir");
    if (!(pl.which & 1u) && pl.seconds >= 0)
        return usage_error("--seconds is the CPU profile's: heap and allocs "
                           "are snapshots");
    if ((pl.which & 1u) &&
        (uint64_t)(pl.seconds >= 0 ? pl.seconds : EVERY_SECONDS) * 1000 >=
            pl.every_ms)
        return usage_error("--every: a CPU profile of %ld s must end before "
                           "the next one starts",
                           pl.seconds >= 0 ? pl.seconds : EVERY_SECONDS);
    return every(&pl);
}

int
folio_cli_profile_wanted(int argc, char **argv)
{
    /* The client's options that take a value (cli.c's getopt table). */
    static const char *const with_value[] = {
        "-H", "-U", "--host", "--socket", "--timeout", "--limit", "--offset",
        "--watch",
    };
    int i;
    size_t k;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return i + 1 < argc && strcmp(argv[i + 1], "profile") == 0;
        if (argv[i][0] != '-')
            return strcmp(argv[i], "profile") == 0;
        for (k = 0; k < sizeof(with_value) / sizeof(with_value[0]); k++)
            if (strcmp(argv[i], with_value[k]) == 0) {
                i++; /* its value */
                break;
            }
    }
    return 0;
}
