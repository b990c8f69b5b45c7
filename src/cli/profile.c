/*
 * profile.c - `folio profile cpu|heap|allocs` (folio(1)): fetch a
 * profile from foliod's metrics listener (/debug/pprof/, PROTOCOL.md
 * section 6), write it where pprof can read it, and print its top
 * functions as `pprof -top` does, so that no Go toolchain is needed to
 * read where the time or the memory goes.  Its own options, parsed here:
 * cli.c hands the whole command line over when the command is profile.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/buf.h"
#include "src/cli/cli_int.h"
#include "src/defaults.h"
#include "src/err.h"
#include "src/http.h"
#include "src/prof/pprof.h"

#define USAGE                                                                  \
    "profile cpu|heap|allocs [--seconds N] [--worker K|master] [-o FILE]"    \
    " [--top N] [--metrics HOST:PORT] [--timeout SEC]"
#define DEFAULT_SECONDS 30
#define DEFAULT_TOP 20
#define GRACE_S 60 /* past the profile's seconds: the server merges */

enum { P_SECONDS = 300, P_WORKER, P_TOP, P_METRICS, P_TIMEOUT };

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

const char folio_cli_profile_usage[] = USAGE;

const char folio_cli_profile_help[] =
    "A profile of the server from its metrics listener (foliod(8),\n"
    "PROFILING), not its RPC address: cpu, every worker's CPU time by\n"
    "function over --seconds N (default 30, 1 to 300); heap, what is in\n"
    "use by the stack that allocated it; allocs, what was allocated since\n"
    "start.  Written, gzipped profile.proto for pprof, to -o FILE (default\n"
    "folio-KIND-DATE.pb.gz; '-': standard output and nothing else), then\n"
    "the --top N functions (default 20; 0: none), flat and cumulative, as\n"
    "pprof -top prints them: no Go toolchain needed.  --worker K (0, 1, ...)\n"
    "or master profiles one process; --metrics HOST:PORT, else\n"
    "$FOLIO_METRICS, else 127.0.0.1:9788; --timeout SEC for the answer\n"
    "(default: the seconds and 60 more).\n\n"
    "  folio profile cpu --seconds 10 --top 5\n"
    "  go tool pprof -http :8080 folio-cpu-*.pb.gz\n";

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
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const char *const kinds[] = {"cpu", "heap", "allocs"};
    static const char *const paths[] = {"profile", "heap", "allocs"};
    const char *metrics = folio_default_metrics(), *worker = NULL;
    const char *out = NULL, *kind = NULL;
    long seconds = -1, top = DEFAULT_TOP, timeout = -1, k;
    char path[256], name[128], err[512];
    struct folio_pprof p;
    struct folio_http_answer ans;
    int ch, i, which = -1, rc, st = FOLIO_CLI_OK, rows;
    FILE *f;

    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":o:h", lo, NULL)) != -1) {
        switch (ch) {
        case P_SECONDS:
            if (parse_count(optarg, 1, 300, &seconds) != 0)
                return usage_error("--seconds: '%s' is not 1 to 300", optarg);
            break;
        case P_WORKER:
            if (strcmp(optarg, "master") != 0 &&
                parse_count(optarg, 0, 1000000, &k) != 0)
                return usage_error("--worker: '%s' is not a worker number "
                                   "or master",
                                   optarg);
            worker = optarg;
            break;
        case 'o':
            out = optarg;
            break;
        case P_TOP:
            if (parse_count(optarg, 0, 1000000, &top) != 0)
                return usage_error("--top: '%s' is not a count", optarg);
            break;
        case P_METRICS:
            metrics = optarg;
            break;
        case P_TIMEOUT:
            if (parse_count(optarg, 1, 86400, &timeout) != 0)
                return usage_error("--timeout: '%s' is not a number of "
                                   "seconds",
                                   optarg);
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
    /* What is left: "profile" and the kind. */
    for (i = optind; i < argc; i++) {
        if (strcmp(argv[i], "profile") == 0 && which < 0 && kind == NULL)
            continue;
        if (kind != NULL)
            return usage_error("profile: too many arguments ('%s')", argv[i]);
        kind = argv[i];
    }
    if (kind == NULL)
        return usage_error("profile: which one: cpu, heap or allocs?");
    for (which = 0; which < 3 && strcmp(kind, kinds[which]) != 0; which++)
        ;
    if (which == 3)
        return usage_error("profile: '%s' is not cpu, heap or allocs", kind);
    if (which != 0 && seconds >= 0)
        return usage_error("--seconds: a %s profile is a snapshot", kind);
    if (seconds < 0)
        seconds = DEFAULT_SECONDS;
    rc = snprintf(path, sizeof(path), "/debug/pprof/%s", paths[which]);
    if (which == 0)
        rc += snprintf(path + rc, sizeof(path) - (size_t)rc, "?seconds=%ld",
                       seconds);
    if (worker != NULL)
        snprintf(path + rc, sizeof(path) - (size_t)rc, "%sworker=%s",
                 which == 0 ? "&" : "?", worker);
    if (timeout < 0)
        timeout = (which == 0 ? seconds : 0) + GRACE_S;

    if (which == 0)
        fprintf(stderr, "folio: profiling %s%s for %ld s...\n",
                worker == NULL ? "every worker" : "worker ",
                worker != NULL ? worker : "", seconds);
    rc = folio_http_get(metrics, path, (int)timeout * 1000, &ans, err,
                        sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "folio: %s\n", err);
        st = rc == FOLIO_EINVAL ? FOLIO_CLI_EUSAGE : FOLIO_CLI_ECONN;
        goto done;
    }
    if (ans.status != 200) {
        /* The server says why, in plain text. */
        size_t n = folio_buf_pending(&ans.body);

        while (n > 0 && folio_buf_at(&ans.body, 0)[n - 1] == '\n')
            n--;
        fprintf(stderr, "folio: %s answered %d: ", metrics, ans.status);
        folio_cli_put_text(stderr, folio_buf_at(&ans.body, 0), n);
        fputc('\n', stderr);
        st = FOLIO_CLI_ESERVER;
        goto done;
    }
    if (folio_pprof_decode(folio_buf_at(&ans.body, 0),
                           folio_buf_pending(&ans.body), &p, err,
                           sizeof(err)) != 0) {
        fprintf(stderr, "folio: the profile from %s: %s\n", metrics, err);
        st = FOLIO_CLI_ESERVER;
        goto done;
    }
    if (out == NULL) {
        time_t now = time(NULL);
        struct tm tm;

        localtime_r(&now, &tm);
        strftime(name, sizeof(name), "%Y%m%d-%H%M%S", &tm);
        snprintf(path, sizeof(path), "folio-%s-%s.pb.gz", kind, name);
        out = path;
    }
    f = strcmp(out, "-") == 0 ? stdout : fopen(out, "wbe");
    if (f == NULL ||
        fwrite(folio_buf_at(&ans.body, 0), 1, folio_buf_pending(&ans.body),
               f) != folio_buf_pending(&ans.body) ||
        (f != stdout && fclose(f) != 0)) {
        fprintf(stderr, "folio: writing %s: %s\n", out, strerror(errno));
        st = FOLIO_CLI_EUSAGE;
        folio_pprof_free(&p);
        goto done;
    }
    if (f != stdout) {
        fprintf(stderr, "folio: profile written to %s (go tool pprof %s)\n",
                out, out);
        rows = (int)top;
        if (rows > 0 &&
            folio_pprof_top_print(stdout, &p, folio_pprof_type_index(&p, NULL),
                                  (unsigned)rows) != 0) {
            fprintf(stderr, "folio: the profile has no sample type\n");
            st = FOLIO_CLI_ESERVER;
        }
    }
    folio_pprof_free(&p);
done:
    folio_http_answer_free(&ans);
    return st;
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
