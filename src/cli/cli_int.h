/*
 * cli_int.h - the folio command-line client's private interfaces, from
 * the top down: main.c runs a command line (cli.c: the options, the
 * table of commands) or the interactive mode (repl.c, which runs each
 * line through cli.c); the commands call the server through conn.c and
 * print with show.c and stats.c, or as JSON (json.c); usage.c says what
 * a usage error is.  Calls go down this list, never back up.  Only the
 * client's own files include it.
 */
#ifndef FOLIO_CLI_INT_H
#define FOLIO_CLI_INT_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>
#include <msgpack.h>

#include "src/addr.h"
#include "src/mp.h"

/* Exit statuses (PROTOCOL.md section 5). */
enum {
    FOLIO_CLI_INTERACTIVE = -1, /* not one: the line asks for the REPL */
    FOLIO_CLI_OK = 0,
    FOLIO_CLI_ESERVER = 1, /* the server answered an error */
    FOLIO_CLI_EUSAGE = 2,  /* bad command line, bad JSON */
    FOLIO_CLI_ECONN = 3    /* cannot connect, timed out, connection lost */
};

/* Command options, as a bit set: which command takes which. */
#define O_LIMIT 0x1u
#define O_OFFSET 0x2u
#define O_WATCH 0x4u
#define O_RETRIES 0x8u
#define O_KEY 0x10u

/* comments post: tries after the first one, by default (folio(1)). */
#define FOLIO_CLI_RETRIES 5

struct folio_client;

/* One run of the client: its options, and the connection (cli.c). */
struct cli {
    const char *addr;      /* from -H, -h, -p or -U, in full; or NULL */
    const char *addr_from; /* the option that gave it: "-H", "-U", ... */
    char addr_buf[FOLIO_ADDR_TEXT + 8];
    char target_buf[FOLIO_ADDR_TEXT + 8];
    int json;
    int timeout_ms; /* < 0: none */
    double timeout_s;
    unsigned opts_seen; /* O_* given on the command line */
    const char *limit_arg, *offset_arg, *watch_arg, *retries_arg, *key_arg;
    uint64_t retries; /* comments post: --retries */
    uint64_t limit, offset;
    double watch_s;
    const struct cmd *cmd;
    int admin;          /* talk to the admin socket by default */
    const char *target; /* the address connected to */
    const char *target_from; /* where it came from: an option, a variable,
                                or NULL: the default */
    struct folio_client *c;
    uint32_t msgid;    /* of the request in flight */
    int last_code;     /* the server's error code of the last call, or 0 */
    int help;          /* --help: the command's help instead of a call */
    int interactive;   /* --interactive, or -i alone */
    int latency;       /* --latency */
    int64_t repeat;    /* -r N: runs (-1: until interrupted); 0: once */
    double interval_s; /* -i SEC: between runs, or pings */
    int have_interval;
    int in_repl; /* a line of the interactive mode */
};

/* A command: a row of cli.c's table. */
struct cmd {
    const char *name, *sub;
    int nmin, nmax; /* positional arguments after the name; -1: any */
    unsigned opts;  /* O_* allowed */
    int admin;
    const char *usage; /* after "folio [options] " */
    int (*run)(struct cli *cli, char **args, int nargs);
    const char *help; /* folio help CMD: what it does (NULL: usage only) */
};

/*
 * Usage messages (usage.c).
 * folio_cli_usage_line - "usage: folio [options] " and c's usage.
 * folio_cli_usage_error - "folio: REASON" and the usage line of `c` (or
 * the general one when NULL) on stderr; returns FOLIO_CLI_EUSAGE.
 */
void folio_cli_usage_line(FILE *f, const struct cmd *c);
int folio_cli_usage_error(const struct cmd *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * The connection and the call (conn.c).  Each returns 0, or an exit
 * status after printing why on stderr.
 * folio_cli_conn_open - connect to cli->addr, else $FOLIO_ADDR (or, for
 *   cli->admin, $FOLIO_ADMIN), else the default; kept open in cli->c
 *   until folio_cli_conn_close (a no-op if already open).
 * folio_cli_rpc_begin - connect if needed and start a request: pack
 *   `nparams` values with *pk, then call folio_cli_rpc_end.
 * folio_cli_rpc_end - send it and wait for the reply (cli->timeout_ms):
 *   *res is the result, valid until the next call; a server error is
 *   printed and is FOLIO_CLI_ESERVER.
 * folio_cli_rpc0 - a call without params.
 * folio_cli_print_result - the result as JSON (--json, or show_rc != 0:
 *   a printer that did not recognize it); else nothing (shown already).
 */
int folio_cli_conn_open(struct cli *cli);
void folio_cli_conn_close(struct cli *cli);
int folio_cli_rpc_begin(struct cli *cli, const char *method, uint32_t nparams,
                        msgpack_packer **pk);
int folio_cli_rpc_end(struct cli *cli, struct folio_mp_cur *res);
int folio_cli_rpc0(struct cli *cli, const char *method,
                   struct folio_mp_cur *res);
int folio_cli_print_result(struct cli *cli, struct folio_mp_cur res,
                           int show_rc);

/*
 * Calls repeated (conn.c): between folio_cli_catch_interrupts() and
 * folio_cli_release_interrupts(), SIGINT and SIGTERM set
 * folio_cli_interrupted() instead of ending the process (calls nest);
 * folio_cli_nap sleeps `s` seconds, or less when interrupted: 0, or -1
 * if interrupted.
 */
void folio_cli_catch_interrupts(void);
void folio_cli_release_interrupts(void);
int folio_cli_interrupted(void);
int folio_cli_nap(double s);

/*
 * folio_cli_latency - --latency: server.ping every cli->interval_s (10 ms
 * if not given) until interrupted or cli->repeat pings; on a terminal
 * the figures so far on one changing line; at the end the figures and
 * the histogram, or --json.  Returns the exit status (0 when stopped by
 * Ctrl-C).
 */
int folio_cli_latency(struct cli *cli);

/* folio_cli_shown - an address as the user knows it: "unix:" dropped. */
const char *folio_cli_shown(const char *addr);

/*
 * folio_cli_target - the address a call of cli goes to (admin or not),
 * as folio_cli_conn_open chooses it: -H, -h, -p or -U; else $FOLIO_ADDR
 * (or, for admin methods, $FOLIO_ADMIN); else the default: 127.0.0.1:7788,
 * or the admin socket of folio_default_paths (this user's foliod's, when
 * it is there, else the system's).  *from (may be NULL) is where it came
 * from, for messages: the option, the variable, or NULL for the default.
 */
const char *folio_cli_target(struct cli *cli, const char **from);

/*
 * folio_cli_default_admin - the admin socket a call goes to when nothing
 * names one: folio_default_paths()'s (this user's foliod's), unless only
 * the system's is there.
 */
const char *folio_cli_default_admin(void);

/*
 * folio_cli_json_emit - write the msgpack value at *c as JSON text to `f`
 * and advance the cursor past it.  indent < 0: compact on one line; else
 * pretty, `indent` spaces per level.  The mapping (folio(1), JSON):
 * integers exactly (all of int64 and uint64), floats in the shortest form
 * that reads back the same (NaN and infinities as the strings "NaN",
 * "Infinity", "-Infinity"), str as a JSON string (bytes that are not
 * UTF-8 become U+FFFD), bin as {"$bin": BASE64}, ext as
 * {"$ext": [TYPE, BASE64]}, map keys that are not str as the compact JSON
 * text of the key.  Returns 0, or -1 if the msgpack is malformed.
 */
int folio_cli_json_emit(FILE *f, struct folio_mp_cur *c, int indent);

/*
 * folio_cli_json_pack - pack a JSON value as msgpack: object -> map,
 * array -> array, string -> str, integer -> int, real -> float 64,
 * true/false/null; an object whose only key is "$bin" (a base64 string) is
 * packed as bin, one whose only key is "$ext" ([TYPE, BASE64]) as ext, so
 * that what folio_cli_json_emit() prints reads back the same.  Returns 0,
 * or -1 with a reason in `why` (bad base64, ext type out of range).
 */
int folio_cli_json_pack(msgpack_packer *pk, const json_t *j, char *why,
                        size_t whylen);

/*
 * Reading a result: each helper looks at a copy of a cursor.
 * folio_cli_get - in the map at `m`, the value of `key`: 0 with *out set,
 * or -1 (not a map, or no such key).
 */
int folio_cli_get(struct folio_mp_cur m, const char *key,
                  struct folio_mp_cur *out);
/* folio_cli_get_num - a number (int, uint or float) at `key` as double: 0 or
 * -1. */
int folio_cli_get_num(struct folio_mp_cur m, const char *key, double *v);
/* folio_cli_get_int - an integer at `key`: 0 or -1. */
int folio_cli_get_int(struct folio_mp_cur m, const char *key, int64_t *v);
/* folio_cli_get_str - a str at `key` (a span): 0 or -1. */
int folio_cli_get_str(struct folio_mp_cur m, const char *key, const char **s,
                      uint32_t *len);
/* folio_cli_num - the number at *c as double, consumed: 0 or -1. */
int folio_cli_num(struct folio_mp_cur *c, double *v);

/* folio_cli_put_text - write a span for a terminal: control bytes but \t as
 * '?'. */
void folio_cli_put_text(FILE *f, const char *s, size_t len);

/* folio_cli_fmt_money - "R$ 1.234,56" from centavos into buf. */
const char *folio_cli_fmt_money(char *buf, size_t len, int64_t cents);
/* folio_cli_fmt_duration - "45s", "3m12s", "2h03m", "3d04h". */
const char *folio_cli_fmt_duration(char *buf, size_t len, double seconds);
/* folio_cli_fmt_bytes - "512 B", "12.3 KiB", "1.2 MiB", "3.4 GiB". */
const char *folio_cli_fmt_bytes(char *buf, size_t len, double bytes);

/*
 * The human printers: each prints the result at `res` to stdout and
 * returns 0, or -1 when the result does not have the expected shape (the
 * caller then prints it as JSON).
 */
int folio_cli_show_count(struct folio_mp_cur res);
/*
 * `offset` is the --offset asked for, to number the lines shown; `limit`
 * the --limit (-1: not given), to say why none is shown.
 */
int folio_cli_show_search(struct folio_mp_cur res, uint64_t offset,
                          int64_t limit);
int folio_cli_show_quote(struct folio_mp_cur res);
int folio_cli_show_comments(struct folio_mp_cur res, const char *path);
int folio_cli_show_comment_posted(struct folio_mp_cur res);
int folio_cli_show_methods(struct folio_mp_cur res);

/*
 * folio_cli_show_stats - the server.stats table.  `prev` is the previous
 * sample (a copy of its bytes) or NULL: with it, REQ/S, CPU% and
 * ALLOC/REQ are computed over the interval between the two samples,
 * otherwise since each process started.
 */
int folio_cli_show_stats(struct folio_mp_cur res,
                         const struct folio_mp_cur *prev);

/*
 * --latency's samples (latency.c): count, minimum, maximum, sum, and
 * a histogram in powers of two of a microsecond (bucket b: up to 2^b us).
 */
#define FOLIO_CLI_LAT_BUCKETS 32

struct folio_cli_lat {
    uint64_t n, min_ns, max_ns;
    double sum_ns;
    uint64_t bucket[FOLIO_CLI_LAT_BUCKETS];
};

/* folio_cli_lat_add - count one round trip of `ns` (l zeroed at first). */
void folio_cli_lat_add(struct folio_cli_lat *l, uint64_t ns);
/* folio_cli_lat_line - "min 0.031 ms, avg 0.052 ms, max 0.402 ms, 9
 * samples", without a newline. */
void folio_cli_lat_line(FILE *f, const struct folio_cli_lat *l);
/* folio_cli_lat_histogram - one line per bucket from the first to the last
 * with samples: its bound, count, share and a bar; nothing if none. */
void folio_cli_lat_histogram(FILE *f, const struct folio_cli_lat *l);
/* folio_cli_lat_json - {"samples", "min_ms", "avg_ms", "max_ms",
 * "histogram": [{"le_ms", "samples"}...]} and a newline. */
void folio_cli_lat_json(FILE *f, const struct folio_cli_lat *l);

/*
 * folio_cli_words - split a line of the interactive mode into words as a
 * shell does ('...', "...", backslashes; no expansion).  *words is a
 * NULL-terminated array (NULL when the line is blank), free it with
 * folio_cli_words_free.  Returns 0, -1 out of memory, -2 for a quote that
 * does not end (nothing to free then).
 */
int folio_cli_words(const char *line, char ***words, int *n);
void folio_cli_words_free(char **words);

/*
 * folio_cli_interactive - the interactive mode (repl.c): a prompt
 * naming cli's server ("not connected> " while it does not answer), line
 * editing and history (libedit), completion of every word and a hint of
 * what a command takes next, when standard input is a terminal; plain
 * lines otherwise.  Each line is a command line run by
 * folio_cli_run_args on a copy of cli (its address, timeout, --json), or
 * one of the mode's own: help, clear, quit, exit.  Returns the status of
 * the last command.
 */
int folio_cli_interactive(struct cli *cli);

/*
 * The command line (cli.c).
 * folio_cli_init - cli with every option at its default.
 * folio_cli_run_args - one command line, argv[0] the program: options,
 *   then the command, its help or --latency, with cli's fields as the
 *   defaults.  Returns the exit status, or FOLIO_CLI_INTERACTIVE when the
 *   line asks for the interactive mode (never from a line of it): the
 *   caller then runs folio_cli_interactive(cli).
 * folio_cli_command_names - the commands' names, each once, in the
 *   order of the table; NULL-terminated, static.
 * folio_cli_commands - the table itself, its rows in *n (for the
 *   interactive mode's completion, hints and help); static.
 * folio_cli_options - the command line's long options (getopt_long's
 *   table, NULL-terminated) and, in *shorts, its short ones (getopt's
 *   string); for the interactive mode's completion.
 */
void folio_cli_init(struct cli *cli);
int folio_cli_run_args(struct cli *cli, int argc, char **argv);
const char *const *folio_cli_command_names(void);
const struct cmd *folio_cli_commands(size_t *n);
struct option;
const struct option *folio_cli_options(const char **shorts);

/*
 * profile.c: `folio profile`, which talks HTTP to the metrics
 * listener and has options of its own.  folio_cli_profile_wanted - 1 if
 * the command line's command is profile: folio_cli_run_args then hands
 * the whole line to folio_cli_profile_main, which returns the exit
 * status.  folio_cli_profile_usage and _help: its row of the table.
 */
int folio_cli_profile_wanted(int argc, char **argv);
int folio_cli_profile_main(int argc, char **argv);
extern const char folio_cli_profile_usage[];
extern const char folio_cli_profile_help[];

#endif
