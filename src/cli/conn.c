/*
 * conn.c - the folio client's connection and call: the address of
 * the server (or of its admin socket) from -H, -U and the environment,
 * connecting, sending one request and waiting for its reply under
 * --timeout, and the messages and exit statuses of PROTOCOL.md section 5
 * when that fails or the server answers an error.  Then calls repeated:
 * the waits between them, which SIGINT (Ctrl-C) and SIGTERM end, and
 * --latency's pings.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/addr.h"
#include "src/cli/cli_int.h"
#include "src/client.h"
#include "src/clock.h"
#include "src/defaults.h"
#include "src/err.h"
#include "src/rpc.h"

const char *
folio_cli_default_admin(void)
{
    const struct folio_paths *p = folio_default_paths();

    if (p->per_user && access(p->admin_socket, F_OK) != 0 &&
        access(FOLIO_DEFAULT_ADMIN, F_OK) == 0)
        return FOLIO_DEFAULT_ADMIN; /* the system's foliod, then */
    return p->admin_socket;
}

const char *
folio_cli_target(struct cli *cli, const char **from)
{
    const char *name = cli->admin ? FOLIO_ADMIN_ENV : FOLIO_ADDR_ENV;
    const char *env = getenv(name), *t;
    char why[256];

    if (from != NULL)
        *from = NULL;
    if (cli->addr != NULL) {
        if (from != NULL)
            *from = cli->addr_from;
        return cli->addr;
    }
    if (env != NULL && *env != '\0') {
        if (from != NULL)
            *from = name;
        /* FOLIO_ADMIN is a socket path, as -U takes; FOLIO_ADDR as -H. */
        if (cli->admin && strncmp(env, "unix:", 5) != 0)
            snprintf(cli->target_buf, sizeof(cli->target_buf), "unix:%s", env);
        else if (folio_addr_expand(env, FOLIO_DEFAULT_PORT, cli->target_buf,
                                   sizeof(cli->target_buf), why,
                                   sizeof(why)) != 0)
            return env; /* said when connecting */
        return cli->target_buf;
    }
    if (!cli->admin)
        return FOLIO_DEFAULT_LISTEN;
    t = folio_cli_default_admin();
    snprintf(cli->target_buf, sizeof(cli->target_buf), "unix:%s", t);
    return cli->target_buf;
}

/* The address as the user knows it, for messages. */
const char *
folio_cli_shown(const char *addr)
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
    char full[FOLIO_ADDR_TEXT + 8], why[256];

    return folio_addr_expand(addr, -1, full, sizeof(full), why,
                             sizeof(why)) != 0;
}

/*
 * "(the default; set by -H, FOLIO_ADDR)" or "(from FOLIO_ADDR)": where the
 * address of a call came from, and so how to give another.
 */
static const char *
origin(const struct cli *cli, char *buf, size_t len)
{
    if (cli->target_from == NULL)
        snprintf(buf, len, "(the default%s; set by %s, %s)",
                 cli->admin ? " admin socket" : "", cli->admin ? "-U" : "-H",
                 cli->admin ? FOLIO_ADMIN_ENV : FOLIO_ADDR_ENV);
    else if (cli->target_from[0] == '-')
        snprintf(buf, len, "(%s)", cli->target_from);
    else
        snprintf(buf, len, "(from %s)", cli->target_from);
    return buf;
}

int
folio_cli_conn_open(struct cli *cli)
{
    char err[256], from[64];
    int rc, e;

    if (cli->c != NULL)
        return 0;
    cli->target = folio_cli_target(cli, &cli->target_from);
    rc = folio_client_open(cli->target, cli->timeout_ms, &cli->c, err,
                           sizeof(err));
    e = errno;
    if (rc == 0)
        return 0;
    if (rc == FOLIO_EINVAL && addr_malformed(cli->target))
        return folio_cli_usage_error(NULL, "bad address %s %s", err,
                                     origin(cli, from, sizeof(from)));
    if (rc == FOLIO_EINVAL) /* a host name that does not resolve */
        fprintf(stderr, "folio: cannot connect to %s %s\n", err,
                origin(cli, from, sizeof(from)));
    else if (rc == FOLIO_ETIMEDOUT)
        fprintf(stderr,
                "folio: cannot connect to %s %s: timed out after %g s\n",
                folio_cli_shown(cli->target), origin(cli, from, sizeof(from)),
                cli->timeout_s);
    else if (rc == FOLIO_ESYS)
        fprintf(stderr, "folio: cannot connect to %s %s: %s%s\n",
                folio_cli_shown(cli->target), origin(cli, from, sizeof(from)),
                strerror(e),
                e == ECONNREFUSED || e == ENOENT
                    ? cli->target_from == NULL ? ": is foliod running?"
                                               : ": is foliod running there?"
                : e == EACCES && cli->admin
                    ? " (the admin socket is for foliod's user and group)"
                    : "");
    else
        fprintf(stderr, "folio: %s\n", err);
    return FOLIO_CLI_ECONN;
}

void
folio_cli_conn_close(struct cli *cli)
{
    folio_client_close(cli->c);
    cli->c = NULL;
}

/*
 * folio_cli_rpc_begin - connect if needed and start a request: the caller packs
 * `nparams` values with *pk, then calls folio_cli_rpc_end().  Returns 0 or an
 * exit status (the message printed).
 */
int
folio_cli_rpc_begin(struct cli *cli, const char *method, uint32_t nparams,
                    msgpack_packer **pk)
{
    int st;

    if ((st = folio_cli_conn_open(cli)) != 0)
        return st;
    *pk = folio_client_request(cli->c, 0, method, nparams, &cli->msgid);
    return 0;
}

/* A failure to send (sending != 0) or to receive: print it, close, exit 3. */
static int
transport_error(struct cli *cli, int rc, int sending)
{
    const char *a = folio_cli_shown(cli->target);

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
    folio_cli_conn_close(cli);
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
        fprintf(stderr,
                "folio: admin methods take foliod's admin socket (its "
                "--admin-socket, by default %s): give it with -U SOCKET or "
                "%s=SOCKET\n",
                folio_cli_default_admin(), FOLIO_ADMIN_ENV);
    return FOLIO_CLI_ESERVER;
}

/*
 * folio_cli_rpc_end - send the request and wait for its reply.  Returns 0 with
 * *res the result (valid until the next call), or an exit status (the
 * message printed).
 */
int
folio_cli_rpc_end(struct cli *cli, struct folio_mp_cur *res)
{
    struct folio_reply r;
    int rc;

    cli->last_code = 0;
    if ((rc = folio_client_flush(cli->c)) != 0)
        return transport_error(cli, rc, 1);
    if ((rc = folio_client_reply(cli->c, &r)) != 1)
        return transport_error(cli, rc, 0);
    if (r.msgid != cli->msgid)
        return transport_error(cli, FOLIO_EPROTO, 0);
    if (r.code != 0) {
        cli->last_code = (int)r.code;
        return server_error(&r);
    }
    *res = r.result;
    return 0;
}

/* A call without params. */
int
folio_cli_rpc0(struct cli *cli, const char *method, struct folio_mp_cur *res)
{
    msgpack_packer *pk;
    int st;

    if ((st = folio_cli_rpc_begin(cli, method, 0, &pk)) != 0)
        return st;
    return folio_cli_rpc_end(cli, res);
}

/* Print a result as JSON (--json, call), or with `show` for people. */
int
folio_cli_print_result(struct cli *cli, struct folio_mp_cur res, int show_rc)
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
/* Calls repeated                                                       */

static volatile sig_atomic_t interrupted;

static void
on_signal(int sig)
{
    interrupted = 1;
}

static struct sigaction old_int, old_term;
static int catching;

/*
 * While a command repeats (--watch, -r, --latency), SIGINT and SIGTERM
 * stop it instead of the process: no SA_RESTART, so a nap wakes.
 */
void
folio_cli_catch_interrupts(void)
{
    struct sigaction sa;

    if (catching++ > 0)
        return;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
}

/* The command is over: the signals act as before (at a prompt: leave). */
void
folio_cli_release_interrupts(void)
{
    if (--catching > 0)
        return;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    interrupted = 0;
}

/* Sleep `s` seconds or until SIGINT/SIGTERM: 0, or -1 if interrupted. */
int
folio_cli_nap(double s)
{
    struct timespec ts;

    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    while (!interrupted && nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
    return interrupted ? -1 : 0;
}

int
folio_cli_interrupted(void)
{
    return interrupted != 0;
}

/*
 * --latency: server.ping on one connection every -i seconds (10 ms by
 * default) until Ctrl-C, or -r pings; the figures so far on one line
 * that a terminal sees change, then the histogram (or --json).
 */
int
folio_cli_latency(struct cli *cli)
{
    struct folio_cli_lat lat;
    struct folio_mp_cur res;
    uint64_t t0;
    int st = FOLIO_CLI_OK, live = isatty(STDOUT_FILENO) && !cli->json;
    double every = cli->have_interval ? cli->interval_s : 0.01; /* redis-cli */

    memset(&lat, 0, sizeof(lat));
    folio_cli_catch_interrupts();
    while (!interrupted && (cli->repeat <= 0 || (int64_t)lat.n < cli->repeat)) {
        if (lat.n > 0 && folio_cli_nap(every) != 0)
            break;
        t0 = folio_mono_ns();
        if ((st = folio_cli_rpc0(cli, "server.ping", &res)) != 0)
            break;
        folio_cli_lat_add(&lat, folio_mono_ns() - t0);
        if (live) {
            fputs("\r\033[K", stdout);
            folio_cli_lat_line(stdout, &lat);
            fflush(stdout);
        }
    }
    folio_cli_release_interrupts();
    if (cli->json) {
        folio_cli_lat_json(stdout, &lat);
        return st;
    }
    if (live)
        fputs("\r\033[K", stdout);
    folio_cli_lat_line(stdout, &lat);
    fputs(lat.n > 0 ? ":\n" : "\n", stdout);
    folio_cli_lat_histogram(stdout, &lat);
    return st;
}
