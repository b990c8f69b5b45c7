/*
 * cli_util.h - run the built folio client in the end-to-end tests: its
 * exit status, standard output and standard error, each run under a
 * deadline; and golden files (tests/cli/NAME.ref) to compare output with.
 *
 * FOLIO_CLI_REGEN=1 in the environment writes the golden files instead of
 * comparing (then review them with git diff).
 */
#ifndef FOLIO_CLI_UTIL_H
#define FOLIO_CLI_UTIL_H

#include <stddef.h>
#include <stdint.h>

struct cli_run {
    int status; /* exit status; 128 + N if killed by signal N; -1 if hung */
    char *out;  /* standard output, NUL-terminated */
    char *err;  /* standard error, NUL-terminated */
    size_t outlen, errlen;
    uint64_t ms; /* how long it ran */
};

struct cli_opts {
    const char *const *env; /* "NAME=VALUE" entries to set, NULL-terminated */
    const char *input;      /* standard input (else /dev/null) */
    const char *until;      /* SIGINT folio once its stdout or stderr
                               contains this */
    int deadline_ms;        /* 0: 15 s; then SIGKILL and status -1 */
    const char *prog;       /* run this program instead of folio */
};

/*
 * cli_run - run folio (or o->prog) with the arguments `argv`
 * (NULL-terminated, without argv[0]).  FOLIO_ADDR and FOLIO_ADMIN are removed
 * from its environment unless `o->env` sets them.  `o` may be NULL.  Returns 0,
 * or -1 if it could not be run (reason printed).  Free with cli_run_free.
 */
int cli_run(struct cli_run *r, const struct cli_opts *o,
            const char *const *argv);

void cli_run_free(struct cli_run *r);

/*
 * In a Check test: cli_expect runs folio as cli_run does and asserts its
 * exit status (printing its output if not); cli_has asserts that `text`
 * holds `needle`.
 */
void cli_expect(struct cli_run *r, const struct cli_opts *o,
                const char *const *argv, int status);
void cli_has(const char *text, const char *needle);

/*
 * A folio on a pseudo-terminal, as a person runs it: cli_pty_start runs
 * it (FOLIO_ADDR, FOLIO_ADMIN unset; `env` entries set, may be NULL) and
 * returns 0 or -1; cli_pty_expect reads its output until it holds
 * `needle` since the last expect (0), or timeout_ms passes (-1, output
 * printed); cli_pty_send types `keys`; cli_pty_finish waits for the exit
 * (SIGKILL after timeout_ms): the status as cli_run's.  p->out holds
 * everything read.
 */
struct cli_pty {
    int pid, fd;
    char out[65536];
    size_t len, mark;
};

int cli_pty_start(struct cli_pty *p, const char *const *env,
                  const char *const *argv);
int cli_pty_expect(struct cli_pty *p, const char *needle, int timeout_ms);
void cli_pty_send(struct cli_pty *p, const char *keys);
int cli_pty_finish(struct cli_pty *p, int timeout_ms);

/*
 * cli_subst - a copy of `text` (malloc'ed) with every `from` replaced by
 * `to`, to make output that names a temporary address comparable.
 */
char *cli_subst(const char *text, const char *from, const char *to);

/*
 * cli_golden - 0 if `text` equals tests/cli/NAME.ref, else -1 with both
 * printed (with FOLIO_CLI_REGEN set: write the file and return 0).
 */
int cli_golden(const char *name, const char *text);

/*
 * A transcript of several runs for one golden file:
 *   $ folio ARGS
 *   <stdout><stderr>[exit N]
 * cli_transcript_add appends one run to *buf (malloc'ed, may start NULL).
 */
void cli_transcript_add(char **buf, const char *const *argv,
                        const struct cli_run *r);

#endif
