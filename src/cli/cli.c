/*
 * cli.c - folio, the msgpack-RPC command-line client (folio(1)): the
 * command line (the program's, or a line of the interactive mode, which
 * repl.c reads and main.c starts), one call per command, each command's
 * help, a command repeated (-r, -i), --latency; the exit statuses of
 * PROTOCOL.md section 5.  The connection and the call are conn.c's;
 * results are printed for people by show.c and stats.c, or as JSON by
 * json.c.
 */
#include "config.h"

#include <sys/random.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "src/addr.h"
#include "src/cli/cli_int.h"
#include "src/cli/help.h"
#include "src/client.h"
#include "src/clock.h"
#include "src/conf.h"
#include "src/defaults.h"
#include "src/err.h"
#include "src/page.h"
#include "src/rpc.h"
#include "src/suggest.h"

#define DEFAULT_TIMEOUT_S 5
#define KEY_MAX 128 /* idempotency_key: PROTOCOL.md section 3 */

enum {
    OPT_LIMIT = 256,
    OPT_OFFSET,
    OPT_WATCH,
    OPT_TIMEOUT,
    OPT_JSON,
    OPT_LATENCY,
    OPT_INTERACTIVE,
    OPT_RETRIES,
    OPT_KEY
};

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

/*
 * A duration in seconds: a number of them ("0.5"), or one with its unit
 * ("500ms", "2m"; folio_parse_duration's, as every folio program takes
 * them).  0, or -1.
 */
static int
parse_seconds(const char *s, double *v)
{
    uint64_t ns;

    if (folio_parse_duration(s, 1e9, &ns) != 0 ||
        ns > 86400ULL * 365 * 1000000000)
        return -1;
    *v = (double)ns / 1e9;
    return 0;
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
/* Commands                                                             */

static int
cmd_count(struct cli *cli, char **args, int nargs)
{
    struct folio_mp_cur res;
    msgpack_packer *pk;
    int st;

    if ((st = folio_cli_rpc_begin(cli, "corpus.match_count", 1, &pk)) != 0)
        return st;
    folio_pack_cstr(pk, args[0]);
    if ((st = folio_cli_rpc_end(cli, &res)) != 0)
        return st;
    return folio_cli_print_result(cli, res,
                                  cli->json ? 0 : folio_cli_show_count(res));
}

static int
cmd_search(struct cli *cli, char **args, int nargs)
{
    struct folio_mp_cur res;
    msgpack_packer *pk;
    unsigned o = cli->opts_seen & (O_LIMIT | O_OFFSET);
    int st;

    if ((st = folio_cli_rpc_begin(cli, "corpus.search", o ? 2 : 1, &pk)) != 0)
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
    if ((st = folio_cli_rpc_end(cli, &res)) != 0)
        return st;
    return folio_cli_print_result(
        cli, res,
        cli->json ? 0
                  : folio_cli_show_search(
                        res, cli->offset,
                        cli->opts_seen & O_LIMIT ? (int64_t)cli->limit : -1));
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
            st = folio_cli_usage_error(cli->cmd,
                                       "quote: bad ITEM '%s' (SKU[:QTY] or "
                                       "WEIGHTg[/LxWxH][:QTY], e.g. 1200g:2)",
                                       args[i + 1]);
            goto done;
        }
    }
    if ((st = folio_cli_rpc_begin(cli, "freight.quote", 2, &pk)) != 0)
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
    if ((st = folio_cli_rpc_end(cli, &res)) != 0)
        goto done;
    st = folio_cli_print_result(cli, res,
                                cli->json ? 0 : folio_cli_show_quote(res));
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
    if ((st = folio_cli_rpc_begin(cli, "comments.list", 1, &pk)) == 0) {
        folio_pack_cstr(pk, args[0]);
        if ((st = folio_cli_rpc_end(cli, &res)) == 0)
            st = folio_cli_print_result(
                cli, res, cli->json ? 0 : folio_cli_show_comments(res, page));
    }
    free(page);
    return st;
}

/* A random key, as a UUID (version 4): 36 characters and a NUL. */
static int
random_key(char *buf, size_t len)
{
    unsigned char u[16];

    if (getrandom(u, sizeof(u), 0) != (ssize_t)sizeof(u))
        return -1;
    u[6] = (unsigned char)((u[6] & 0x0f) | 0x40);
    u[8] = (unsigned char)((u[8] & 0x3f) | 0x80);
    snprintf(buf, len,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x"
             "%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10],
             u[11], u[12], u[13], u[14], u[15]);
    return 0;
}

/*
 * Whether a failed post may be sent again with its key: the server was
 * unavailable (14: a database or a writer lock away, or the post's fate
 * unknown), or the connection failed or timed out before the answer.
 */
static int
post_retryable(const struct cli *cli, int st)
{
    return st == FOLIO_CLI_ECONN ||
           (st == FOLIO_CLI_ESERVER && cli->last_code == FOLIO_ST_UNAVAILABLE);
}

/* One comments.post of args, with `key` (may be NULL). */
static int
post_once(struct cli *cli, char **args, const char *body, size_t len,
          const char *key, struct folio_mp_cur *res)
{
    msgpack_packer *pk;
    int st;

    if ((st = folio_cli_rpc_begin(cli, "comments.post", 1, &pk)) != 0)
        return st;
    msgpack_pack_map(pk, key != NULL ? 4 : 3);
    folio_pack_cstr(pk, "path");
    folio_pack_cstr(pk, args[0]);
    folio_pack_cstr(pk, "author");
    folio_pack_cstr(pk, args[1]);
    folio_pack_cstr(pk, "body");
    if (body != NULL)
        folio_pack_str(pk, body, len);
    else
        folio_pack_cstr(pk, args[2]);
    if (key != NULL) {
        folio_pack_cstr(pk, "idempotency_key");
        folio_pack_cstr(pk, key);
    }
    return folio_cli_rpc_end(cli, res);
}

/*
 * comments post: with a key (--idempotency-key, else a random one unless
 * --retries 0), sent again after an ambiguous failure, backing off from
 * 0.2 s (doubling, at most 3.2 s): the server answers a retry with the
 * comment the first try stored, if it did, never with a second one.  A
 * first connection that cannot be made is not retried: nothing was sent,
 * and a server that is not there (a wrong address, foliod stopped) is
 * said at once, as every other command says it.
 */
static int
cmd_comments_post(struct cli *cli, char **args, int nargs)
{
    struct folio_mp_cur res;
    char *body = NULL, gen[40];
    const char *key = cli->key_arg;
    double wait = 0.2;
    size_t len = 0;
    uint64_t tries;
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
    if (key == NULL && cli->retries > 0) {
        if (random_key(gen, sizeof(gen)) != 0) {
            fprintf(stderr, "folio: getrandom: %s\n", strerror(errno));
            st = FOLIO_CLI_ECONN;
            goto done;
        }
        key = gen;
    }
    if ((st = folio_cli_conn_open(cli)) != 0)
        goto done;
    for (tries = 0;; tries++) {
        st = post_once(cli, args, body, len, key, &res);
        if (st == 0 || tries >= cli->retries || key == NULL ||
            !post_retryable(cli, st))
            break;
        fprintf(stderr,
                "folio: trying again in %.1f s with idempotency key %s "
                "(retry %llu of %llu)\n",
                wait, key, (unsigned long long)tries + 1,
                (unsigned long long)cli->retries);
        if (folio_cli_nap(wait) != 0)
            break;
        if (wait < 3.2)
            wait *= 2;
    }
    if (st != 0)
        goto done;
    st = folio_cli_print_result(
        cli, res, cli->json ? 0 : folio_cli_show_comment_posted(res));
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
        return folio_cli_usage_error(cli->cmd,
                                     "comments delete: ID '%s' is not a "
                                     "comment id (an integer)",
                                     args[0]);
    if ((st = folio_cli_rpc_begin(cli, "comments.delete", 1, &pk)) != 0)
        return st;
    msgpack_pack_uint64(pk, id);
    if ((st = folio_cli_rpc_end(cli, &res)) != 0)
        return st;
    if (!cli->json)
        printf("comment #%" PRIu64 " deleted\n", id);
    return folio_cli_print_result(cli, res, 0);
}

static int
cmd_ping(struct cli *cli, char **args, int nargs)
{
    struct folio_mp_cur res;
    const char *s;
    uint64_t t0, t1;
    uint32_t len;
    int st;

    if ((st = folio_cli_conn_open(cli)) != 0)
        return st;
    t0 = folio_mono_ns();
    if ((st = folio_cli_rpc0(cli, "server.ping", &res)) != 0)
        return st;
    t1 = folio_mono_ns();
    if (cli->json)
        return folio_cli_print_result(cli, res, 0);
    if (folio_mp_read_str(&res, &s, &len) != 0)
        return folio_cli_print_result(cli, res, -1);
    folio_cli_put_text(stdout, s, len);
    printf(" from %s in %.3f ms\n", folio_cli_shown(cli->target),
           (double)(t1 - t0) / 1e6);
    return FOLIO_CLI_OK;
}

static int
cmd_methods(struct cli *cli, char **args, int nargs)
{
    struct folio_mp_cur res;
    int st;

    if ((st = folio_cli_rpc0(cli, "server.methods", &res)) != 0)
        return st;
    return folio_cli_print_result(cli, res,
                                  cli->json ? 0 : folio_cli_show_methods(res));
}

static int
cmd_stats(struct cli *cli, char **args, int nargs)
{
    struct folio_mp_cur res, end, prevcur;
    char *prev = NULL;
    size_t len;
    int st = 0, tty = isatty(STDOUT_FILENO);

    if (cli->opts_seen & O_WATCH)
        folio_cli_catch_interrupts();
    while (!folio_cli_interrupted()) {
        if ((st = folio_cli_rpc0(cli, "server.stats", &res)) != 0)
            break;
        if (cli->json) {
            /* --watch --json: one compact document per line. */
            end = res;
            if (folio_cli_json_emit(stdout, &end,
                                    cli->opts_seen & O_WATCH ? -1 : 2) != 0) {
                st = folio_cli_print_result(cli, res, -1);
                break;
            }
            putchar('\n');
        } else {
            if (tty && (cli->opts_seen & O_WATCH))
                fputs("\033[H\033[2J", stdout);
            if (folio_cli_show_stats(res, prev != NULL ? &prevcur : NULL) !=
                0) {
                st = folio_cli_print_result(cli, res, -1);
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
        folio_cli_conn_close(cli);
        if (folio_cli_nap(cli->watch_s) != 0)
            break;
    }
    if (cli->opts_seen & O_WATCH)
        folio_cli_release_interrupts();
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
            st = folio_cli_usage_error(
                cli->cmd, "call: JSON-PARAMS: %s (line %d, column %d)",
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
            st = folio_cli_usage_error(cli->cmd, "call: JSON-PARAMS: %s", why);
            goto done;
        }
    }
    cli->admin = cli->admin || admin_method(args[0]);
    if ((st = folio_cli_rpc_begin(cli, args[0], (uint32_t)n, &pk)) != 0)
        goto done;
    if (sb.size > 0)
        pk->callback(pk->data, sb.data, sb.size);
    if ((st = folio_cli_rpc_end(cli, &res)) != 0)
        goto done;
    st = folio_cli_print_result(cli, res, -1); /* call always prints JSON */
done:
    json_decref(j);
    free(text);
    msgpack_sbuffer_destroy(&sb);
    return st;
}

static int cmd_help(struct cli *cli, char **args, int nargs);
static int cmd_profile(struct cli *cli, char **args, int nargs);

static const struct cmd cmds[] = {
    {"count", NULL, 1, 1, 0, 0, "count QUERY", cmd_count, H_COUNT},
    {"search", NULL, 1, 1, O_LIMIT | O_OFFSET, 0,
     "search QUERY [--limit N] [--offset N]", cmd_search, H_SEARCH},
    {"quote", NULL, 2, -1, 0, 0, "quote CEP ITEM...", cmd_quote, H_QUOTE},
    {"comments", "list", 1, 1, 0, 0, "comments list PATH", cmd_comments_list,
     H_COMMENTS_LIST},
    {"comments", "post", 3, 3, O_RETRIES | O_KEY, 0,
     "comments post [--retries N] [--idempotency-key KEY] PATH AUTHOR BODY",
     cmd_comments_post, H_COMMENTS_POST},
    {"comments", "delete", 1, 1, 0, 1, "comments delete ID",
     cmd_comments_delete, H_COMMENTS_DELETE},
    {"stats", NULL, 0, 0, O_WATCH, 1, "stats [--watch SEC]", cmd_stats,
     H_STATS},
    {"ping", NULL, 0, 0, 0, 0, "ping", cmd_ping, H_PING},
    {"methods", NULL, 0, 0, 0, 0, "methods", cmd_methods, H_METHODS},
    {"call", NULL, 1, 2, 0, 0, "call METHOD [JSON-PARAMS]", cmd_call, H_CALL},
    {"profile", NULL, 1, -1, 0, 0, folio_cli_profile_usage, cmd_profile,
     folio_cli_profile_help},
    {"help", NULL, 0, -1, 0, 0, "help [COMMAND]", cmd_help, H_HELP},
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void
usage(FILE *f)
{
    size_t i;

    fputs("usage: folio [-H HOST:PORT | -h HOST -p PORT | -U SOCKET] [--json] "
          "[--timeout SEC]\n"
          "             [-r N] [-i SEC] COMMAND [ARG ...]\n",
          f);
    for (i = 0; i < NCMDS; i++)
        fprintf(f, "       folio [options] %s\n", cmds[i].usage);
    fputs("       folio [options]           (no command: the interactive "
          "mode)\n"
          "       folio [options] --latency [-i SEC] [-r N]\n"
          "       folio --help | --version\n"
          "\n"
          "options:\n"
          "  -H, --host HOST:PORT  the server: HOST:PORT, HOST (port 7788), PORT"
          " (on\n"
          "                        127.0.0.1), [V6ADDR]:PORT or unix:PATH\n"
          "  -h HOST, -p PORT      the same, apart, as redis-cli takes them"
          " (-h alone,\n"
          "                        or before a command, is --help)\n"
          "  -U, --socket SOCKET   the server's Unix socket (also --unix)\n"
          "      --json            print the result as JSON\n"
          "      --timeout SEC     for connecting and for each reply; 0: none"
          " [5]\n"
          "  -r, --repeat N        run the command N times; -1: until Ctrl-C\n"
          "  -i, --interval SEC    between two runs, or two pings [0; "
          "--latency 0.01]\n"
          "      --latency         ping on and on: min, avg, max, then a "
          "histogram\n"
          "      --interactive     a prompt with line editing and history"
          " (or -i alone,\n"
          "                        or no command)\n"
          "  -h, --help            this; after a command, its help (or: folio"
          " help CMD)\n"
          "\n"
          "The server: -H or -U, else $FOLIO_ADDR, else " FOLIO_DEFAULT_LISTEN
          ";\nfor stats and comments delete (admin methods): -H or -U, else"
          " $FOLIO_ADMIN,\nelse ",
          f);
    fprintf(f, "%s.\n", folio_cli_default_admin());
    fputs("\n"
          "SEC is seconds (0.5), or a number with its unit: 500ms, 2m, 1h.\n"
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

/* The usage lines of the commands named `name` (comments list|post|...). */
static void
group_usage(FILE *f, const char *name)
{
    size_t i;

    for (i = 0; i < NCMDS; i++)
        if (strcmp(cmds[i].name, name) == 0)
            folio_cli_usage_line(f, &cmds[i]);
}

/* A command not found: say why (exit status 2). */
static int
not_found(char **args, int nargs, const char *why)
{
    const char *const *names = folio_cli_command_names(), *near;
    const char *subnames[NCMDS];
    char subs[128];
    size_t i, n = 0, k = 0, len = 0;

    if (strcmp(why, "unknown command") == 0) {
        for (i = 0; names[i] != NULL; i++)
            ;
        if ((near = folio_suggest(args[0], names, i)) != NULL)
            return folio_cli_usage_error(NULL,
                                         "unknown command '%s', did you "
                                         "mean '%s'?",
                                         args[0], near);
        return folio_cli_usage_error(NULL, "unknown command '%s'", args[0]);
    }

    for (i = 0; i < NCMDS; i++)
        n += strcmp(cmds[i].name, args[0]) == 0;
    subs[0] = '\0';
    for (i = 0; i < NCMDS && len < sizeof(subs); i++) {
        if (strcmp(cmds[i].name, args[0]) != 0)
            continue;
        subnames[k++] = cmds[i].sub;
        len += (size_t)snprintf(subs + len, sizeof(subs) - len, "%s%s",
                                k == 1   ? ""
                                : k == n ? " or "
                                         : ", ",
                                cmds[i].sub);
    }
    if (nargs > 1 && (near = folio_suggest(args[1], subnames, k)) != NULL)
        fprintf(stderr, "folio: %s: %s '%s', did you mean '%s'? (%s)\n",
                args[0], why, args[1], near, subs);
    else if (nargs > 1)
        fprintf(stderr, "folio: %s: %s '%s' (%s)\n", args[0], why, args[1],
                subs);
    else
        fprintf(stderr, "folio: %s: %s (%s)\n", args[0], why, subs);
    group_usage(stderr, args[0]);
    return FOLIO_CLI_EUSAGE;
}

/* One command's help: its usage line, then what it does. */
static void
command_help(FILE *f, const struct cmd *c)
{
    folio_cli_usage_line(f, c);
    if (c->help != NULL)
        fprintf(f, "\n%s", c->help);
}

/*
 * The help of the command named by args (folio help ARGS, folio ARGS
 * --help): of the command, of each command of a group (comments), or the
 * whole usage when args are none.
 */
static int
help_for(char **args, int nargs)
{
    const struct cmd *c;
    const char *why;
    size_t i;
    int used, first = 1;

    if (nargs == 0) {
        usage(stdout);
        return FOLIO_CLI_OK;
    }
    if ((c = find_cmd(args, nargs, &used, &why)) != NULL) {
        command_help(stdout, c);
        return FOLIO_CLI_OK;
    }
    if (strcmp(why, "missing subcommand") != 0)
        return not_found(args, nargs, why);
    for (i = 0; i < NCMDS; i++) {
        if (strcmp(cmds[i].name, args[0]) != 0)
            continue;
        if (!first)
            putchar('\n');
        command_help(stdout, &cmds[i]);
        first = 0;
    }
    return FOLIO_CLI_OK;
}

static int
cmd_help(struct cli *cli, char **args, int nargs)
{
    return help_for(args, nargs);
}

/* folio_cli_run_args hands `profile` over before its options are parsed:
 * this row is for the usage, help, and a line that reached it anyway. */
static int
cmd_profile(struct cli *cli, char **args, int nargs)
{
    return folio_cli_profile_main(nargs + 1, args - 1);
}

/* -r: the command `n` times (-1: until interrupted), -i apart. */
static int
run_repeated(struct cli *cli, const struct cmd *cmd, char **args, int nargs)
{
    int64_t k;
    int st, failed = FOLIO_CLI_OK;

    folio_cli_catch_interrupts();
    for (k = 0;
         !folio_cli_interrupted() && (cli->repeat < 0 || k < cli->repeat);
         k++) {
        if (k > 0 && cli->interval_s > 0 && folio_cli_nap(cli->interval_s) != 0)
            break;
        st = cmd->run(cli, args, nargs);
        if (fflush(stdout) != 0)
            st = FOLIO_CLI_ECONN;
        if (st != FOLIO_CLI_OK)
            failed = st; /* the status of the last run that failed */
        if (st == FOLIO_CLI_EUSAGE)
            break;
    }
    folio_cli_release_interrupts();
    return failed;
}

/* The options of a command line (and of a line of the interactive mode). */
static const char shortopts[] = ":H:U:p:hVr:i:";
static const struct option longopts[] = {
    {"host", required_argument, NULL, 'H'},
    {"port", required_argument, NULL, 'p'},
    {"socket", required_argument, NULL, 'U'},
    {"unix", required_argument, NULL, 'U'}, /* folio-bench's old name */
    {"json", no_argument, NULL, OPT_JSON},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"limit", required_argument, NULL, OPT_LIMIT},
    {"offset", required_argument, NULL, OPT_OFFSET},
    {"watch", required_argument, NULL, OPT_WATCH},
    {"retries", required_argument, NULL, OPT_RETRIES},
    {"idempotency-key", required_argument, NULL, OPT_KEY},
    {"repeat", required_argument, NULL, 'r'},
    {"interval", required_argument, NULL, 'i'},
    {"latency", no_argument, NULL, OPT_LATENCY},
    {"interactive", no_argument, NULL, OPT_INTERACTIVE},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

const struct cmd *
folio_cli_commands(size_t *n)
{
    *n = NCMDS;
    return cmds;
}

const struct option *
folio_cli_options(const char **shorts)
{
    *shorts = shortopts;
    return longopts;
}

const char *const *
folio_cli_command_names(void)
{
    static const char *names[NCMDS + 1];
    size_t i, n = 0, k;

    if (names[0] != NULL)
        return names;
    for (i = 0; i < NCMDS; i++) {
        for (k = 0; k < n && strcmp(names[k], cmds[i].name) != 0; k++)
            ;
        if (k == n)
            names[n++] = cmds[i].name;
    }
    names[n] = NULL;
    return names;
}

/* "unknown option '--jsno'", and the long option it is near, if any. */
static int
unknown_option(const struct option *opts, const char *arg)
{
    const char *names[32], *near = NULL;
    char typed[64];
    size_t n;

    if (strncmp(arg, "--", 2) == 0) {
        snprintf(typed, sizeof(typed), "%.*s", (int)strcspn(arg + 2, "="),
                 arg + 2);
        for (n = 0; opts[n].name != NULL && n < 32; n++)
            names[n] = opts[n].name;
        near = folio_suggest(typed, names, n);
    }
    if (near != NULL)
        return folio_cli_usage_error(NULL,
                                     "unknown option '%s', did you mean "
                                     "'--%s'?",
                                     arg, near);
    return folio_cli_usage_error(NULL, "unknown option '%s'", arg);
}

/* "-i" with no value after it (the end, or an option) is --interactive. */
static void
interactive_alone(int argc, char **argv)
{
    static char interactive[] = "--interactive";
    int i;

    for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "-i") == 0 &&
            (i + 1 == argc || argv[i + 1][0] == '-'))
            argv[i] = interactive;
}

/*
 * redis-cli's -h HOST: "-h" before a word that is neither an option nor
 * a command's name is -h HOST (made -H here); else it is --help.  Returns
 * 1 if one was.
 */
static int
h_is_host(int argc, char **argv)
{
    static char host_opt[] = "-H";
    const char *const *names = folio_cli_command_names();
    int i, k, found = 0;

    for (i = 1; i + 1 < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "-h") != 0 || argv[i + 1][0] == '-')
            continue;
        for (k = 0; names[k] != NULL && strcmp(names[k], argv[i + 1]) != 0;
             k++)
            ;
        if (names[k] == NULL) {
            argv[i] = host_opt;
            found = 1;
        }
    }
    return found;
}

/*
 * The server of -H/-h HOST and -p PORT, in full, into cli->addr: a HOST
 * alone has port 7788, a PORT alone is 127.0.0.1's.  0, or the usage
 * error's status.
 */
static int
host_port(struct cli *cli, const char *host, const char *port,
          const char *hname)
{
    char spec[FOLIO_ADDR_TEXT + 8], why[256];
    const char *rb;

    if (host != NULL && port == NULL) {
        if (folio_addr_expand(host, FOLIO_DEFAULT_PORT, cli->addr_buf,
                              sizeof(cli->addr_buf), why, sizeof(why)) != 0)
            return folio_cli_usage_error(NULL, "bad address %s (%s)", why,
                                         hname);
        cli->addr = cli->addr_buf;
        cli->addr_from = hname;
        return 0;
    }
    if (*port == '\0' || port[strspn(port, "0123456789")] != '\0' ||
        strlen(port) > 5 || atol(port) > 65535)
        return folio_cli_usage_error(NULL,
                                     "-p: '%s' is not a port (0..65535)",
                                     port);
    if (host == NULL)
        host = "127.0.0.1";
    if (strncmp(host, "unix:", 5) == 0 || host[0] == '/')
        return folio_cli_usage_error(NULL, "-p goes with a host, not a Unix "
                                           "socket");
    rb = strchr(host, ']');
    if (host[0] == '[' ? rb != NULL && rb[1] == ':'
                       : strchr(host, ':') != NULL &&
                             strchr(host, ':') == strrchr(host, ':'))
        return folio_cli_usage_error(NULL,
                                     "-p %s, and %s %s has a port already",
                                     port, hname, host);
    /* An IPv6 address, bare (-h ::1): in brackets, as addresses write it. */
    snprintf(spec, sizeof(spec),
             host[0] != '[' && strchr(host, ':') != NULL ? "[%s]:%s" : "%s:%s",
             host, port);
    if (folio_addr_expand(spec, -1, cli->addr_buf, sizeof(cli->addr_buf), why,
                          sizeof(why)) != 0)
        return folio_cli_usage_error(NULL, "bad address %s (%s -p)", why,
                                     hname);
    cli->addr = cli->addr_buf;
    cli->addr_from = host != NULL && strcmp(host, "127.0.0.1") != 0 ? hname
                                                                    : "-p";
    return 0;
}

/* -r N: a count of 1 or more, or -1 (forever): 0, or -1. */
static int
parse_repeat(const char *s, int64_t *v)
{
    uint64_t n;

    if (strcmp(s, "-1") == 0) {
        *v = -1;
        return 0;
    }
    if (parse_u64(s, &n) != 0 || n == 0 || n > INT64_MAX)
        return -1;
    *v = (int64_t)n;
    return 0;
}

/*
 * One command line, argv[0] the program: the options, then the command
 * (or its help, --latency, the interactive mode).  Returns the exit
 * status.  cli holds the defaults (the session's, for a line of the
 * interactive mode).
 */
int
folio_cli_run_args(struct cli *cli, int argc, char **argv)
{
    const struct cmd *cmd;
    const char *why, *hopt = NULL, *uopt = NULL, *ropt = NULL, *iopt = NULL;
    const char *popt = NULL, *hname;
    char **args, name[32];
    int ch, nargs, used, st;

    /* profile talks HTTP, with options of its own (profile.c). */
    if (folio_cli_profile_wanted(argc, argv))
        return folio_cli_profile_main(argc, argv);
    interactive_alone(argc, argv);
    hname = h_is_host(argc, argv) ? "-h" : "-H";
    optind = 0; /* GNU getopt: start again (a line of the interactive mode) */
    opterr = 0;
    /* Options may come before or after the command (GNU getopt permutes). */
    while ((ch = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        switch (ch) {
        case 'H':
            hopt = optarg;
            break;
        case 'p':
            popt = optarg;
            break;
        case 'U':
            uopt = optarg;
            break;
        case OPT_JSON:
            cli->json = 1;
            break;
        case OPT_TIMEOUT:
            if (parse_seconds(optarg, &cli->timeout_s) != 0)
                return folio_cli_usage_error(
                    NULL,
                    "--timeout: '%s' is not a duration "
                    "(seconds, or 500ms, 2m...)",
                    optarg);
            break;
        case OPT_LIMIT: /* checked once the command is known */
            cli->limit_arg = optarg;
            cli->opts_seen |= O_LIMIT;
            break;
        case OPT_OFFSET:
            cli->offset_arg = optarg;
            cli->opts_seen |= O_OFFSET;
            break;
        case OPT_WATCH:
            cli->watch_arg = optarg;
            cli->opts_seen |= O_WATCH;
            break;
        case OPT_RETRIES:
            cli->retries_arg = optarg;
            cli->opts_seen |= O_RETRIES;
            break;
        case OPT_KEY:
            cli->key_arg = optarg;
            cli->opts_seen |= O_KEY;
            break;
        case 'r':
            ropt = optarg;
            break;
        case 'i':
            iopt = optarg;
            break;
        case OPT_LATENCY:
            cli->latency = 1;
            break;
        case OPT_INTERACTIVE:
            cli->interactive = 1;
            break;
        case 'h':
            cli->help = 1;
            break;
        case 'V':
            printf("folio %s\n", PACKAGE_VERSION);
            return FOLIO_CLI_OK;
        case ':':
            return folio_cli_usage_error(NULL, "option '%s' needs a value",
                                         argv[optind - 1]);
        default:
            return unknown_option(longopts, argv[optind - 1]);
        }
    }
    args = argv + optind;
    nargs = argc - optind;
    if (cli->help)
        return help_for(args, nargs);
    if ((hopt != NULL || popt != NULL) && uopt != NULL)
        return folio_cli_usage_error(NULL, "%s and -U exclude each other",
                                     hopt != NULL ? hname : "-p");
    if (uopt != NULL) {
        snprintf(cli->addr_buf, sizeof(cli->addr_buf), "%s%s",
                 strncmp(uopt, "unix:", 5) == 0 ? "" : "unix:", uopt);
        cli->addr = cli->addr_buf;
        cli->addr_from = "-U";
    } else if ((hopt != NULL || popt != NULL) &&
               (st = host_port(cli, hopt, popt, hname)) != 0) {
        return st;
    }
    cli->timeout_ms =
        cli->timeout_s > 0 ? (int)ceil(cli->timeout_s * 1000) : -1;
    if (ropt != NULL && parse_repeat(ropt, &cli->repeat) != 0)
        return folio_cli_usage_error(NULL,
                                     "-r: '%s' is not a count (1 or more, or "
                                     "-1: until interrupted)",
                                     ropt);
    if (iopt != NULL) {
        if (parse_seconds(iopt, &cli->interval_s) != 0)
            return folio_cli_usage_error(NULL,
                                         "-i: '%s' is not a duration "
                                         "(seconds, or 500ms, 2m...)",
                                         iopt);
        cli->have_interval = 1;
    }

    if (cli->latency) {
        if (nargs > 0 || cli->interactive)
            return folio_cli_usage_error(NULL, "--latency takes no command");
        st = folio_cli_latency(cli);
        folio_cli_conn_close(cli); /* a line of the interactive mode */
        return st;
    }
    if (cli->interactive || nargs == 0) {
        if (cli->in_repl)
            return folio_cli_usage_error(NULL, "already interactive");
        if (nargs > 0)
            return folio_cli_usage_error(NULL,
                                         "--interactive takes no command");
        if (ropt != NULL || iopt != NULL)
            return folio_cli_usage_error(NULL, "-r and -i go with a command or "
                                               "--latency");
        return FOLIO_CLI_INTERACTIVE; /* main() runs it */
    }
    if (iopt != NULL && ropt == NULL)
        return folio_cli_usage_error(NULL, "-i goes with -r or --latency");
    if ((cmd = find_cmd(args, nargs, &used, &why)) == NULL)
        return not_found(args, nargs, why);
    cli->cmd = cmd;
    cli->admin = cmd->admin;
    args += used;
    nargs -= used;
    snprintf(name, sizeof(name), "%s%s%s", cmd->name, cmd->sub ? " " : "",
             cmd->sub ? cmd->sub : "");
    if (cli->opts_seen & ~cmd->opts)
        return folio_cli_usage_error(
            cmd, "%s takes no %s", name,
            cli->opts_seen & ~cmd->opts & O_WATCH     ? "--watch"
            : cli->opts_seen & ~cmd->opts & O_LIMIT   ? "--limit"
            : cli->opts_seen & ~cmd->opts & O_RETRIES ? "--retries"
            : cli->opts_seen & ~cmd->opts & O_KEY     ? "--idempotency-key"
                                                      : "--offset");
    cli->retries = FOLIO_CLI_RETRIES;
    if (cli->retries_arg != NULL &&
        (parse_u64(cli->retries_arg, &cli->retries) != 0 || cli->retries > 100))
        return folio_cli_usage_error(cmd,
                                     "--retries: '%s' is not a count of 0 "
                                     "to 100",
                                     cli->retries_arg);
    if (cli->key_arg != NULL &&
        (cli->key_arg[0] == '\0' || strlen(cli->key_arg) > KEY_MAX))
        return folio_cli_usage_error(cmd, "--idempotency-key: 1 to %d bytes",
                                     KEY_MAX);
    if (cli->limit_arg != NULL && parse_u64(cli->limit_arg, &cli->limit) != 0)
        return folio_cli_usage_error(cmd, "--limit: '%s' is not a count",
                                     cli->limit_arg);
    if (cli->offset_arg != NULL &&
        parse_u64(cli->offset_arg, &cli->offset) != 0)
        return folio_cli_usage_error(cmd, "--offset: '%s' is not a count",
                                     cli->offset_arg);
    if (cli->watch_arg != NULL &&
        (parse_seconds(cli->watch_arg, &cli->watch_s) != 0 ||
         cli->watch_s < 0.1))
        return folio_cli_usage_error(cmd,
                                     "--watch: '%s' is not a duration "
                                     "of 0.1 s or more (seconds, or 500ms, "
                                     "2m...)",
                                     cli->watch_arg);
    if (ropt != NULL && (cli->opts_seen & O_WATCH))
        return folio_cli_usage_error(cmd, "-r or --watch, not both");
    if (nargs < cmd->nmin)
        return folio_cli_usage_error(cmd, "%s: missing arguments", name);
    if (cmd->nmax >= 0 && nargs > cmd->nmax)
        return folio_cli_usage_error(cmd, "%s: too many arguments", name);
    if (ropt != NULL)
        st = run_repeated(cli, cmd, args, nargs);
    else
        st = cmd->run(cli, args, nargs);
    folio_cli_conn_close(cli);
    return st;
}

void
folio_cli_init(struct cli *cli)
{
    memset(cli, 0, sizeof(*cli));
    cli->timeout_s = DEFAULT_TIMEOUT_S;
}
