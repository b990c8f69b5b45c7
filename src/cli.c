/*
 * cli.c - folio, the msgpack-RPC command-line client (folio(1)): the
 * command line, the connection, one call per command, and the exit
 * statuses of PROTOCOL.md section 5.  Results are printed for people by
 * cli_show.c and cli_stats.c, or as JSON by cli_json.c.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "src/addr.h"
#include "src/cli_int.h"
#include "src/client.h"
#include "src/conf.h"
#include "src/err.h"
#include "src/page.h"
#include "src/rpc.h"

#define DEFAULT_TIMEOUT_S 5

enum { OPT_LIMIT = 256, OPT_OFFSET, OPT_WATCH, OPT_TIMEOUT, OPT_JSON };

/* Command options, as a bit set: which command takes which. */
#define O_LIMIT 0x1u
#define O_OFFSET 0x2u
#define O_WATCH 0x4u

struct cli {
    const char *addr; /* -H or -U as given, or NULL */
    char unix_addr[FOLIO_ADDR_TEXT + 8];
    int json;
    int timeout_ms; /* < 0: none */
    double timeout_s;
    unsigned opts_seen; /* O_* given on the command line */
    const char *limit_arg, *offset_arg, *watch_arg;
    uint64_t limit, offset;
    double watch_s;
    const struct cmd *cmd;
    int admin;          /* talk to the admin socket by default */
    const char *target; /* the address connected to */
    struct folio_client *c;
    uint32_t msgid; /* of the request in flight */
};

struct cmd {
    const char *name, *sub;
    int nmin, nmax; /* positional arguments after the name; -1: any */
    unsigned opts;  /* O_* allowed */
    int admin;
    const char *usage; /* after "folio [options] " */
    int (*run)(struct cli *cli, char **args, int nargs);
};

static volatile sig_atomic_t interrupted;

static void
usage_line(FILE *f, const struct cmd *c)
{
    fprintf(f, "usage: folio [options] %s\n", c->usage);
}

/* A usage error: a reason, the command's usage line; exit status 2. */
static int usage_error(const struct cmd *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
usage_error(const struct cmd *c, const char *fmt, ...)
{
    va_list ap;

    fputs("folio: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (c != NULL)
        usage_line(stderr, c);
    else
        fputs("usage: folio [-H HOST:PORT | -U SOCKET] [--json] "
              "[--timeout SEC] COMMAND [ARG ...]\n"
              "Try 'folio --help'.\n",
              stderr);
    return FOLIO_CLI_EUSAGE;
}

/* A decimal integer, all of `s`: 0, or -1. */
static int
parse_u64(const char *s, uint64_t *v)
{
    char *end;

    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    *v = strtoull(s, &end, 10);
    return errno != 0 || *end != '\0' ? -1 : 0;
}

/* Seconds, fractions allowed: 0, or -1. */
static int
parse_seconds(const char *s, double *v)
{
    char *end;

    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    *v = strtod(s, &end);
    return errno != 0 || *end != '\0' || !isfinite(*v) || *v > 86400 * 365 ? -1
                                                                           : 0;
}

/* Read all of standard input (for "-" arguments): a NUL-terminated string. */
static char *
read_stdin(size_t *len)
{
    char *buf = NULL, *nb;
    size_t cap = 0, n = 0, r;

    for (;;) {
        if (cap - n < 4096) {
            cap = cap ? cap * 2 : 65536;
            if ((nb = realloc(buf, cap + 1)) == NULL) {
                free(buf);
                return NULL;
            }
            buf = nb;
        }
        r = fread(buf + n, 1, cap - n, stdin);
        n += r;
        if (r == 0)
            break;
    }
    if (ferror(stdin)) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* ------------------------------------------------------------------ */
/* The connection and the call                                          */

static const char *
target_addr(struct cli *cli)
{
    const char *env;

    if (cli->addr != NULL)
        return cli->addr;
    env = getenv(cli->admin ? "FOLIO_ADMIN" : "FOLIO_ADDR");
    if (env != NULL && *env != '\0') {
        /* FOLIO_ADMIN is a socket path, as -U takes. */
        if (cli->admin && strncmp(env, "unix:", 5) != 0) {
            snprintf(cli->unix_addr, sizeof(cli->unix_addr), "unix:%s", env);
            return cli->unix_addr;
        }
        return env;
    }
    return cli->admin ? "unix:" FOLIO_DEFAULT_ADMIN : FOLIO_DEFAULT_LISTEN;
}

/* The address as the user knows it, for messages. */
static const char *
shown(const char *addr)
{
    return strncmp(addr, "unix:", 5) == 0 ? addr + 5 : addr;
}

/*
 * Whether folio_addr_parse() refused `addr` for its form (a usage error)
 * rather than because its host name does not resolve (cannot connect).
 */
static int
addr_malformed(const char *addr)
{
    const char *colon = strrchr(addr, ':');
    size_t digits;

    if (strncmp(addr, "unix:", 5) == 0)
        return addr[5] == '\0' || strlen(addr + 5) >= FOLIO_ADDR_TEXT - 20;
    if (colon == NULL || colon == addr)
        return 1;
    digits = strspn(colon + 1, "0123456789");
    return digits == 0 || digits > 5 || colon[1 + digits] != '\0' ||
           atol(colon + 1) > 65535;
}

/* How to reach the admin socket, after a failure to. */
static void
admin_hint(void)
{
    fputs("folio: admin methods take foliod's admin socket (its "
          "--admin-socket, by default " FOLIO_DEFAULT_ADMIN
          "): give it with -U SOCKET or FOLIO_ADMIN=SOCKET\n",
          stderr);
}

static int
conn_open(struct cli *cli)
{
    char err[256];
    int rc;

    if (cli->c != NULL)
        return 0;
    cli->target = target_addr(cli);
    rc = folio_client_open(cli->target, cli->timeout_ms, &cli->c, err,
                           sizeof(err));
    if (rc == 0)
        return 0;
    if (rc == FOLIO_EINVAL && addr_malformed(cli->target))
        return usage_error(NULL, "bad address %s", err);
    if (rc == FOLIO_EINVAL) /* a host name that does not resolve */
        fprintf(stderr, "folio: cannot connect to %s\n", err);
    else if (rc == FOLIO_ETIMEDOUT)
        fprintf(stderr, "folio: cannot connect to %s: timed out after %g s\n",
                shown(cli->target), cli->timeout_s);
    else
        fprintf(stderr, "folio: %s\n", err);
    /* The default admin socket, or FOLIO_ADMIN's, is not there. */
    if (cli->admin && cli->addr == NULL)
        admin_hint();
    return FOLIO_CLI_ECONN;
}

static void
conn_close(struct cli *cli)
{
    folio_client_close(cli->c);
    cli->c = NULL;
}

/*
 * rpc_begin - connect if needed and start a request: the caller packs
 * `nparams` values with *pk, then calls rpc_end().  Returns 0 or an exit
 * status (the message printed).
 */
static int
rpc_begin(struct cli *cli, const char *method, uint32_t nparams,
          msgpack_packer **pk)
{
    int st;

    if ((st = conn_open(cli)) != 0)
        return st;
    *pk = folio_client_request(cli->c, 0, method, nparams, &cli->msgid);
    return 0;
}

/* A failure to send (sending != 0) or to receive: print it, close, exit 3. */
static int
transport_error(struct cli *cli, int rc, int sending)
{
    const char *a = shown(cli->target);

    switch (rc) {
    case 0:
        fprintf(stderr, "folio: %s closed the connection without a reply\n", a);
        break;
    case FOLIO_ETIMEDOUT:
        fprintf(stderr,
                sending ? "folio: cannot send to %s within %g s\n"
                        : "folio: no reply from %s within %g s\n",
                a, cli->timeout_s);
        break;
    case FOLIO_EPROTO:
        fprintf(stderr,
                "folio: %s sent something that is not a "
                "msgpack-RPC response\n",
                a);
        break;
    case FOLIO_ENOMEM:
        fprintf(stderr, "folio: out of memory\n");
        break;
    default:
        fprintf(stderr, "folio: %s: %s\n", a, strerror(errno));
        break;
    }
    conn_close(cli);
    return FOLIO_CLI_ECONN;
}

/* Print the server's error: "folio: NOT_FOUND: message". */
static int
server_error(const struct folio_reply *r)
{
    struct folio_mp_cur e = r->error;

    fprintf(stderr, "folio: %s: ", folio_status_name(r->code));
    if (r->message != NULL)
        folio_cli_put_text(stderr, r->message, r->message_len);
    else if (folio_cli_json_emit(stderr, &e, -1) != 0)
        fputs("(malformed error)", stderr);
    fputc('\n', stderr);
    if (r->code == FOLIO_ST_PERMISSION_DENIED)
        admin_hint();
    return FOLIO_CLI_ESERVER;
}

/*
 * rpc_end - send the request and wait for its reply.  Returns 0 with
 * *res the result (valid until the next call), or an exit status (the
 * message printed).
 */
static int
rpc_end(struct cli *cli, struct folio_mp_cur *res)
{
    struct folio_reply r;
    int rc;

    if ((rc = folio_client_flush(cli->c)) != 0)
        return transport_error(cli, rc, 1);
    if ((rc = folio_client_reply(cli->c, &r)) != 1)
        return transport_error(cli, rc, 0);
    if (r.msgid != cli->msgid)
        return transport_error(cli, FOLIO_EPROTO, 0);
    if (r.code != 0)
        return server_error(&r);
    *res = r.result;
    return 0;
}

/* A call without params. */
static int
rpc0(struct cli *cli, const char *method, struct folio_mp_cur *res)
{
    msgpack_packer *pk;
    int st;

    if ((st = rpc_begin(cli, method, 0, &pk)) != 0)
        return st;
    return rpc_end(cli, res);
}

/* Print a result as JSON (--json, call), or with `show` for people. */
static int
print_result(struct cli *cli, struct folio_mp_cur res, int show_rc)
{
    if (cli->json || show_rc != 0) {
        if (folio_cli_json_emit(stdout, &res, 2) != 0) {
            fprintf(stderr, "folio: malformed msgpack in the reply\n");
            return FOLIO_CLI_ECONN;
        }
        putchar('\n');
    }
    return FOLIO_CLI_OK;
}

/* ------------------------------------------------------------------ */
/* Commands                                                             */

static int
cmd_count(struct cli *cli, char **args, int nargs)
{
    struct folio_mp_cur res;
    msgpack_packer *pk;
    int st;

    if ((st = rpc_begin(cli, "corpus.match_count", 1, &pk)) != 0)
        return st;
    folio_pack_cstr(pk, args[0]);
    if ((st = rpc_end(cli, &res)) != 0)
        return st;
    return print_result(cli, res, cli->json ? 0 : folio_cli_show_count(res));
}

static int
cmd_search(struct cli *cli, char **args, int nargs)
{
    struct folio_mp_cur res;
    msgpack_packer *pk;
    unsigned o = cli->opts_seen & (O_LIMIT | O_OFFSET);
    int st;

    if ((st = rpc_begin(cli, "corpus.search", o ? 2 : 1, &pk)) != 0)
        return st;
    folio_pack_cstr(pk, args[0]);
    if (o != 0) {
        msgpack_pack_map(pk, (o & O_LIMIT ? 1 : 0) + (o & O_OFFSET ? 1 : 0));
        if (o & O_LIMIT) {
            folio_pack_cstr(pk, "limit");
            msgpack_pack_uint64(pk, cli->limit);
        }
        if (o & O_OFFSET) {
            folio_pack_cstr(pk, "offset");
            msgpack_pack_uint64(pk, cli->offset);
        }
    }
    if ((st = rpc_end(cli, &res)) != 0)
        return st;
    return print_result(
        cli, res, cli->json ? 0 : folio_cli_show_search(
                                   res, cli->offset,
                                   cli->opts_seen & O_LIMIT ? (int64_t)cli->limit
                                                            : -1));
}

struct item {
    char *buf;       /* a copy of the argument, cut up */
    const char *sku; /* NULL: a weight */
    uint64_t weight_g, qty, dims[3];
    int has_dims;
};

/* ITEM: SKU[:QTY] or WEIGHTg[/LxWxH][:QTY]; it->buf is set (free it). */
static int
parse_item(const char *arg, struct item *it)
{
    char *s, *colon, *p, *end;
    int i;

    memset(it, 0, sizeof(*it));
    if ((s = it->buf = strdup(arg)) == NULL)
        return -1;
    colon = strrchr(s, ':');
    it->qty = 1;
    if (colon != NULL) {
        if (parse_u64(colon + 1, &it->qty) != 0)
            return -1;
        *colon = '\0';
    }
    if (*s == '\0')
        return -1;
    /* Digits then 'g' (then maybe /LxWxH): a weight in grams. */
    p = s + strspn(s, "0123456789");
    if (p == s || *p != 'g' || (p[1] != '\0' && p[1] != '/')) {
        it->sku = s;
        return 0;
    }
    errno = 0;
    it->weight_g = strtoull(s, NULL, 10);
    if (errno != 0)
        return -1;
    if (p[1] == '\0')
        return 0;
    p += 2;
    for (i = 0; i < 3; i++) {
        if (*p < '0' || *p > '9')
            return -1;
        errno = 0;
        it->dims[i] = strtoull(p, &end, 10);
        if (errno != 0 || *end != (i < 2 ? 'x' : '\0'))
            return -1;
        p = end + 1;
    }
    it->has_dims = 1;
    return 0;
}

static void
pack_kv(msgpack_packer *pk, const char *k, uint64_t v)
{
    folio_pack_cstr(pk, k);
    msgpack_pack_uint64(pk, v);
}

static int
cmd_quote(struct cli *cli, char **args, int nargs)
{
    struct folio_mp_cur res;
    struct item *items;
    msgpack_packer *pk;
    int i, n = nargs - 1, st;

    if ((items = calloc((size_t)n, sizeof(*items))) == NULL) {
        fprintf(stderr, "folio: out of memory\n");
        return FOLIO_CLI_ECONN;
    }
    for (i = 0; i < n; i++) {
        if (parse_item(args[i + 1], &items[i]) != 0) {
            st = usage_error(cli->cmd,
                             "quote: bad ITEM '%s' (SKU[:QTY] or "
                             "WEIGHTg[/LxWxH][:QTY], e.g. 1200g:2)",
                             args[i + 1]);
            goto done;
        }
    }
    if ((st = rpc_begin(cli, "freight.quote", 2, &pk)) != 0)
        goto done;
    folio_pack_cstr(pk, args[0]);
    msgpack_pack_array(pk, (size_t)n);
    for (i = 0; i < n; i++) {
        const struct item *it = &items[i];

        msgpack_pack_map(pk, it->sku != NULL ? 2 : it->has_dims ? 5 : 2);
        if (it->sku != NULL) {
            folio_pack_cstr(pk, "sku");
            folio_pack_cstr(pk, it->sku);
        } else {
            pack_kv(pk, "weight_g", it->weight_g);
            if (it->has_dims) {
                pack_kv(pk, "length_cm", it->dims[0]);
                pack_kv(pk, "width_cm", it->dims[1]);
                pack_kv(pk, "height_cm", it->dims[2]);
            }
        }
        pack_kv(pk, "qty", it->qty);
    }
    if ((st = rpc_end(cli, &res)) != 0)
        goto done;
    st = print_result(cli, res, cli->json ? 0 : folio_cli_show_quote(res));
done:
    for (i = 0; i < n; i++)
        free(items[i].buf);
    free(items);
    return st;
}

static int
cmd_comments_list(struct cli *cli, char **args, int nargs)
{
    struct folio_mp_cur res;
    msgpack_packer *pk;
    size_t len = strlen(args[0]);
    char *page;
    int st;

    /* The page the server looks up, to say which one has no comments. */
    if ((page = malloc(len + 3)) == NULL) {
        fprintf(stderr, "folio: out of memory\n");
        return FOLIO_CLI_ECONN;
    }
    page[folio_comments_normalize(args[0], len, page)] = '\0';
    if ((st = rpc_begin(cli, "comments.list", 1, &pk)) == 0) {
        folio_pack_cstr(pk, args[0]);
        if ((st = rpc_end(cli, &res)) == 0)
            st = print_result(
                cli, res, cli->json ? 0 : folio_cli_show_comments(res, page));
    }
    free(page);
    return st;
}

static int
cmd_comments_post(struct cli *cli, char **args, int nargs)
{
    struct folio_mp_cur res;
    msgpack_packer *pk;
    char *body = NULL;
    size_t len;
    int st;

    if (strcmp(args[2], "-") == 0) {
        if ((body = read_stdin(&len)) == NULL) {
            fprintf(stderr, "folio: reading standard input: %s\n",
                    strerror(errno));
            return FOLIO_CLI_EUSAGE;
        }
        if (len > 0 && body[len - 1] == '\n')
            body[--len] = '\0';
    }
    if ((st = rpc_begin(cli, "comments.post", 1, &pk)) != 0)
        goto done;
    msgpack_pack_map(pk, 3);
    folio_pack_cstr(pk, "path");
    folio_pack_cstr(pk, args[0]);
    folio_pack_cstr(pk, "author");
    folio_pack_cstr(pk, args[1]);
    folio_pack_cstr(pk, "body");
    if (body != NULL)
        folio_pack_str(pk, body, len);
    else
        folio_pack_cstr(pk, args[2]);
    if ((st = rpc_end(cli, &res)) != 0)
        goto done;
    st = print_result(cli, res,
                      cli->json ? 0 : folio_cli_show_comment_posted(res));
done:
    free(body);
    return st;
}

static int
cmd_comments_delete(struct cli *cli, char **args, int nargs)
{
    struct folio_mp_cur res;
    msgpack_packer *pk;
    uint64_t id;
    int st;

    if (parse_u64(args[0], &id) != 0)
        return usage_error(cli->cmd,
                           "comments delete: ID '%s' is not a "
                           "comment id (an integer)",
                           args[0]);
    if ((st = rpc_begin(cli, "comments.delete", 1, &pk)) != 0)
        return st;
    msgpack_pack_uint64(pk, id);
    if ((st = rpc_end(cli, &res)) != 0)
        return st;
    if (!cli->json)
        printf("comment #%" PRIu64 " deleted\n", id);
    return print_result(cli, res, 0);
}

static int
cmd_ping(struct cli *cli, char **args, int nargs)
{
    struct folio_mp_cur res;
    struct timespec t0, t1;
    const char *s;
    uint32_t len;
    int st;

    if ((st = conn_open(cli)) != 0)
        return st;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if ((st = rpc0(cli, "server.ping", &res)) != 0)
        return st;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (cli->json)
        return print_result(cli, res, 0);
    if (folio_mp_read_str(&res, &s, &len) != 0)
        return print_result(cli, res, -1);
    folio_cli_put_text(stdout, s, len);
    printf(" from %s in %.3f ms\n", shown(cli->target),
           (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
               (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    return FOLIO_CLI_OK;
}

static int
cmd_methods(struct cli *cli, char **args, int nargs)
{
    struct folio_mp_cur res;
    int st;

    if ((st = rpc0(cli, "server.methods", &res)) != 0)
        return st;
    return print_result(cli, res, cli->json ? 0 : folio_cli_show_methods(res));
}

static void
on_signal(int sig)
{
    interrupted = 1;
}

/* Sleep `s` seconds or until SIGINT/SIGTERM: 0, or -1 if interrupted. */
static int
nap(double s)
{
    struct timespec ts;

    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (!interrupted && nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
    return interrupted ? -1 : 0;
}

static int
cmd_stats(struct cli *cli, char **args, int nargs)
{
    struct folio_mp_cur res, end, prevcur;
    struct sigaction sa;
    char *prev = NULL;
    size_t len;
    int st = 0, tty = isatty(STDOUT_FILENO);

    if (cli->opts_seen & O_WATCH) {
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal; /* no SA_RESTART: wake the nap */
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
    }
    while (!interrupted) {
        if ((st = rpc0(cli, "server.stats", &res)) != 0)
            break;
        if (cli->json) {
            /* --watch --json: one compact document per line. */
            end = res;
            if (folio_cli_json_emit(stdout, &end,
                                    cli->opts_seen & O_WATCH ? -1 : 2) != 0) {
                st = print_result(cli, res, -1);
                break;
            }
            putchar('\n');
        } else {
            if (tty && (cli->opts_seen & O_WATCH))
                fputs("\033[H\033[2J", stdout);
            if (folio_cli_show_stats(res, prev != NULL ? &prevcur : NULL) !=
                0) {
                st = print_result(cli, res, -1);
                break;
            }
        }
        if (fflush(stdout) != 0 || !(cli->opts_seen & O_WATCH))
            break;
        /* Keep this sample: the reply's bytes go with the next call. */
        end = res;
        if (folio_mp_skip(&end) != 0)
            break;
        len = (size_t)(end.p - res.p);
        free(prev);
        if ((prev = malloc(len)) == NULL) {
            fprintf(stderr, "folio: out of memory\n");
            st = FOLIO_CLI_ECONN;
            break;
        }
        memcpy(prev, res.p, len);
        folio_mp_cur_init(&prevcur, prev, len);
        /* A connection per sample: a watch outlives idle time-outs. */
        conn_close(cli);
        if (nap(cli->watch_s) != 0)
            break;
    }
    free(prev);
    return st;
}

/* Methods the client knows to be admin-only: `call` aims them at the admin
 * socket. */
static int
admin_method(const char *m)
{
    return strcmp(m, "server.stats") == 0 || strcmp(m, "comments.delete") == 0;
}

static int
cmd_call(struct cli *cli, char **args, int nargs)
{
    struct folio_mp_cur res;
    msgpack_sbuffer sb;
    msgpack_packer spk, *pk;
    json_error_t jerr;
    json_t *j = NULL;
    char *text = NULL, why[256];
    size_t len, n = 0, i;
    int st;

    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&spk, &sb, msgpack_sbuffer_write);
    if (nargs > 1) {
        if (strcmp(args[1], "-") == 0 && (text = read_stdin(&len)) == NULL) {
            fprintf(stderr, "folio: reading standard input: %s\n",
                    strerror(errno));
            st = FOLIO_CLI_EUSAGE;
            goto done;
        }
        j = json_loads(
            text != NULL ? text : args[1],
            JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        if (j == NULL) {
            st = usage_error(cli->cmd,
                             "call: JSON-PARAMS: %s (line %d, column %d)",
                             jerr.text, jerr.line, jerr.column);
            goto done;
        }
        /* An array is the params; any other value is the one param. */
        if (json_is_array(j)) {
            n = json_array_size(j);
            for (i = 0; i < n; i++)
                if (folio_cli_json_pack(&spk, json_array_get(j, i), why,
                                        sizeof(why)) != 0)
                    break;
        } else {
            n = 1;
            i = folio_cli_json_pack(&spk, j, why, sizeof(why)) == 0 ? 1 : 0;
        }
        if (i < n) {
            st = usage_error(cli->cmd, "call: JSON-PARAMS: %s", why);
            goto done;
        }
    }
    cli->admin = cli->admin || admin_method(args[0]);
    if ((st = rpc_begin(cli, args[0], (uint32_t)n, &pk)) != 0)
        goto done;
    if (sb.size > 0)
        pk->callback(pk->data, sb.data, sb.size);
    if ((st = rpc_end(cli, &res)) != 0)
        goto done;
    st = print_result(cli, res, -1); /* call always prints JSON */
done:
    json_decref(j);
    free(text);
    msgpack_sbuffer_destroy(&sb);
    return st;
}

static const struct cmd cmds[] = {
    {"count", NULL, 1, 1, 0, 0, "count QUERY", cmd_count},
    {"search", NULL, 1, 1, O_LIMIT | O_OFFSET, 0,
     "search QUERY [--limit N] [--offset N]", cmd_search},
    {"quote", NULL, 2, -1, 0, 0, "quote CEP ITEM...", cmd_quote},
    {"comments", "list", 1, 1, 0, 0, "comments list PATH", cmd_comments_list},
    {"comments", "post", 3, 3, 0, 0, "comments post PATH AUTHOR BODY",
     cmd_comments_post},
    {"comments", "delete", 1, 1, 0, 1, "comments delete ID",
     cmd_comments_delete},
    {"stats", NULL, 0, 0, O_WATCH, 1, "stats [--watch SEC]", cmd_stats},
    {"ping", NULL, 0, 0, 0, 0, "ping", cmd_ping},
    {"methods", NULL, 0, 0, 0, 0, "methods", cmd_methods},
    {"call", NULL, 1, 2, 0, 0, "call METHOD [JSON-PARAMS]", cmd_call},
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void
usage(FILE *f)
{
    size_t i;

    fputs("usage: folio [-H HOST:PORT | -U SOCKET] [--json] [--timeout SEC] "
          "COMMAND [ARG ...]\n",
          f);
    for (i = 0; i < NCMDS; i++)
        fprintf(f, "       folio [options] %s\n", cmds[i].usage);
    fputs("       folio --help | --version\n"
          "\n"
          "options:\n"
          "  -H, --host HOST:PORT  the server: HOST:PORT, [V6ADDR]:PORT or"
          " unix:PATH\n"
          "  -U, --socket SOCKET   the server's Unix socket\n"
          "      --json            print the result as JSON\n"
          "      --timeout SEC     for connecting and for each reply; 0: none"
          " [5]\n"
          "\n"
          "The server: -H or -U, else $FOLIO_ADDR, else " FOLIO_DEFAULT_LISTEN
          ";\nfor stats and comments delete (admin methods): -H or -U, else"
          " $FOLIO_ADMIN,\nelse " FOLIO_DEFAULT_ADMIN ".\n"
          "\n"
          "ITEM is SKU[:QTY] or WEIGHTg[/LxWxH][:QTY] (grams, centimetres),"
          " e.g. 1200g:2.\n"
          "JSON-PARAMS is a JSON array of the params (another value is the"
          " one param);\n"
          "BODY or JSON-PARAMS '-' is read from standard input.\n"
          "Exit status: 0 success, 1 the server answered an error, 2 usage"
          " error,\n"
          "3 cannot connect or timed out.  See folio(1).\n",
          f);
}

/* Find the command; *used is how many words its name took. */
static const struct cmd *
find_cmd(char **argv, int argc, int *used, const char **why)
{
    size_t i;
    int known = 0;

    *why = NULL;
    for (i = 0; i < NCMDS; i++) {
        if (strcmp(cmds[i].name, argv[0]) != 0)
            continue;
        known = 1;
        if (cmds[i].sub == NULL) {
            *used = 1;
            return &cmds[i];
        }
        if (argc > 1 && strcmp(cmds[i].sub, argv[1]) == 0) {
            *used = 2;
            return &cmds[i];
        }
    }
    *why = !known     ? "unknown command"
           : argc > 1 ? "unknown subcommand"
                      : "missing subcommand";
    return NULL;
}

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"host", required_argument, NULL, 'H'},
        {"socket", required_argument, NULL, 'U'},
        {"unix", required_argument, NULL, 'U'}, /* folio-bench's old name */
        {"json", no_argument, NULL, OPT_JSON},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"offset", required_argument, NULL, OPT_OFFSET},
        {"watch", required_argument, NULL, OPT_WATCH},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    struct cli cli;
    const struct cmd *cmd;
    const char *why, *hopt = NULL, *uopt = NULL;
    char **args, name[32];
    int ch, nargs, used, st;

    memset(&cli, 0, sizeof(cli));
    cli.timeout_s = DEFAULT_TIMEOUT_S;
    opterr = 0;
    /* Options may come before or after the command (GNU getopt permutes). */
    while ((ch = getopt_long(argc, argv, ":H:U:hV", longopts, NULL)) != -1) {
        switch (ch) {
        case 'H':
            hopt = optarg;
            break;
        case 'U':
            uopt = optarg;
            break;
        case OPT_JSON:
            cli.json = 1;
            break;
        case OPT_TIMEOUT:
            if (parse_seconds(optarg, &cli.timeout_s) != 0)
                return usage_error(NULL,
                                   "--timeout: '%s' is not a number "
                                   "of seconds",
                                   optarg);
            break;
        case OPT_LIMIT: /* checked once the command is known */
            cli.limit_arg = optarg;
            cli.opts_seen |= O_LIMIT;
            break;
        case OPT_OFFSET:
            cli.offset_arg = optarg;
            cli.opts_seen |= O_OFFSET;
            break;
        case OPT_WATCH:
            cli.watch_arg = optarg;
            cli.opts_seen |= O_WATCH;
            break;
        case 'h':
            usage(stdout);
            return FOLIO_CLI_OK;
        case 'V':
            printf("folio %s\n", PACKAGE_VERSION);
            return FOLIO_CLI_OK;
        case ':':
            return usage_error(NULL, "option '%s' needs a value",
                               argv[optind - 1]);
        default:
            return usage_error(NULL, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (hopt != NULL && uopt != NULL)
        return usage_error(NULL, "-H and -U exclude each other");
    if (uopt != NULL) {
        snprintf(cli.unix_addr, sizeof(cli.unix_addr), "%s%s",
                 strncmp(uopt, "unix:", 5) == 0 ? "" : "unix:", uopt);
        cli.addr = cli.unix_addr;
    } else {
        cli.addr = hopt;
    }
    cli.timeout_ms = cli.timeout_s > 0 ? (int)ceil(cli.timeout_s * 1000) : -1;

    if (optind >= argc)
        return usage_error(NULL, "no command");
    args = argv + optind;
    nargs = argc - optind;
    if ((cmd = find_cmd(args, nargs, &used, &why)) == NULL) {
        if (strcmp(why, "unknown command") == 0)
            return usage_error(NULL, "unknown command '%s'", args[0]);
        if (nargs > 1)
            fprintf(stderr,
                    "folio: comments: %s '%s' (list, post or "
                    "delete)\n",
                    why, args[1]);
        else
            fprintf(stderr, "folio: comments: %s (list, post or delete)\n",
                    why);
        for (size_t i = 0; i < NCMDS; i++)
            if (strcmp(cmds[i].name, "comments") == 0)
                usage_line(stderr, &cmds[i]);
        return FOLIO_CLI_EUSAGE;
    }
    cli.cmd = cmd;
    cli.admin = cmd->admin;
    args += used;
    nargs -= used;
    snprintf(name, sizeof(name), "%s%s%s", cmd->name, cmd->sub ? " " : "",
             cmd->sub ? cmd->sub : "");
    if (cli.opts_seen & ~cmd->opts)
        return usage_error(cmd, "%s takes no %s", name,
                           cli.opts_seen & ~cmd->opts & O_WATCH   ? "--watch"
                           : cli.opts_seen & ~cmd->opts & O_LIMIT ? "--limit"
                                                                  : "--offset");
    if (cli.limit_arg != NULL && parse_u64(cli.limit_arg, &cli.limit) != 0)
        return usage_error(cmd, "--limit: '%s' is not a count", cli.limit_arg);
    if (cli.offset_arg != NULL && parse_u64(cli.offset_arg, &cli.offset) != 0)
        return usage_error(cmd, "--offset: '%s' is not a count",
                           cli.offset_arg);
    if (cli.watch_arg != NULL &&
        (parse_seconds(cli.watch_arg, &cli.watch_s) != 0 || cli.watch_s < 0.1))
        return usage_error(cmd,
                           "--watch: '%s' is not a number of seconds "
                           "(0.1 or more)",
                           cli.watch_arg);
    if (nargs < cmd->nmin)
        return usage_error(cmd, "%s: missing arguments", name);
    if (cmd->nmax >= 0 && nargs > cmd->nmax)
        return usage_error(cmd, "%s: too many arguments", name);
    st = cmd->run(&cli, args, nargs);
    conn_close(&cli);
    if (fflush(stdout) != 0 && st == 0) {
        fprintf(stderr, "folio: writing the output: %s\n", strerror(errno));
        st = FOLIO_CLI_ECONN;
    }
    return st;
}
