/*
 * log.h - the only way folio writes log lines.
 * Each line: UTC time, role and index ("M", "W3"), pid, [level], message.
 * One write(2) per line, so lines of the master and its workers sharing
 * stderr never interleave.  The level is checked before formatting.
 * Not async-signal-safe: never call from a signal handler.
 */
#ifndef FOLIO_LOG_H
#define FOLIO_LOG_H

#include <stdarg.h>
#include <stdint.h>

enum folio_log_level {
    FOLIO_LOG_DEBUG = 0,
    FOLIO_LOG_INFO,
    FOLIO_LOG_NOTICE,
    FOLIO_LOG_WARN,
    FOLIO_LOG_ERROR,
    FOLIO_LOG_CRIT
};

/* Lines below this level are dropped.  Default FOLIO_LOG_INFO. */
extern int folio_log_level;

/*
 * folio_log_set_role - set the role tag of this process: 'M' for the master,
 * 'W' with index >= 0 for worker `index`, 'C' for a client.
 */
void folio_log_set_role(char role, int index);

/*
 * folio_log_open - send lines to the file `path` (appended, created 0640),
 * or to stderr when `path` is NULL.  Returns 0 or FOLIO_ESYS (logged to
 * the previous destination).
 */
int folio_log_open(const char *path);

/*
 * folio_log_adopt - write lines to the descriptor `fd` (already open:
 * inherited across an exec), made close-on-exec, reopened later by
 * `path` (NULL or "": stderr's, never reopened).  Returns 0 or FOLIO_ESYS.
 */
int folio_log_adopt(int fd, const char *path);

/*
 * folio_log_mirror - also write warnings and worse to `fd` (-1: stop):
 * a detaching foliod shows the terminal why it could not start, while
 * its log goes to a file.
 */
void folio_log_mirror(int fd);

/* folio_log_reopen - reopen the log file (SIGUSR1).  No-op on stderr. */
int folio_log_reopen(void);

/*
 * folio_log_libevent - send libevent's own messages through folio's log
 * (its warnings as [warn], its fatal errors as [crit]).
 */
void folio_log_libevent(void);

/* folio_log_parse_level - "debug|info|notice|warn|error" to a level, -1 if unknown. */
int folio_log_parse_level(const char *s);

/*
 * folio_log_fd - the descriptor lines are written to; a forked child that
 * execs keeps it.
 */
int folio_log_fd(void);

/*
 * A warning that can come thousands of times a second (accept failing
 * for want of descriptors) is told once per interval, with a count:
 *
 *     if ((n = folio_log_rate_hit(&r, now_ms, 10000)) > 0)
 *         folio_log_warnx("...: %llu in the last 10 s", n);
 *
 * and, from a timer, folio_log_rate_due() for what the last line left.
 */
struct folio_log_rate {
    uint64_t next_ms; /* no line before then */
    uint64_t count;   /* occurrences not yet told */
};

/*
 * folio_log_rate_hit - count one occurrence at now_ms (monotonic).
 * Returns how many to tell in a line now (this one and those the
 * interval held back), or 0: say nothing.
 */
uint64_t folio_log_rate_hit(struct folio_log_rate *r, uint64_t now_ms,
                            uint32_t interval_ms);

/* folio_log_rate_due - what is left to tell once the interval is over, or 0. */
uint64_t folio_log_rate_due(struct folio_log_rate *r, uint64_t now_ms,
                            uint32_t interval_ms);

void folio_log_write(int level, int with_errno, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void folio_log_vwrite(int level, int with_errno, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#define FOLIO_LOG_(lvl, err, ...)                                              \
    do {                                                                       \
        if ((lvl) >= folio_log_level)                                          \
            folio_log_write((lvl), (err), __VA_ARGS__);                        \
    } while (0)

#ifdef FOLIO_DEBUG
#define folio_log_debug(...) FOLIO_LOG_(FOLIO_LOG_DEBUG, 0, __VA_ARGS__)
#else
#define folio_log_debug(...)                                                   \
    do {                                                                       \
    } while (0)
#endif
#define folio_log_info(...) FOLIO_LOG_(FOLIO_LOG_INFO, 0, __VA_ARGS__)
#define folio_log_notice(...) FOLIO_LOG_(FOLIO_LOG_NOTICE, 0, __VA_ARGS__)
/* folio_log_warn appends ": strerror(errno)"; folio_log_warnx does not. */
#define folio_log_warn(...) FOLIO_LOG_(FOLIO_LOG_WARN, 1, __VA_ARGS__)
#define folio_log_warnx(...) FOLIO_LOG_(FOLIO_LOG_WARN, 0, __VA_ARGS__)
#define folio_log_error(...) FOLIO_LOG_(FOLIO_LOG_ERROR, 1, __VA_ARGS__)
#define folio_log_errorx(...) FOLIO_LOG_(FOLIO_LOG_ERROR, 0, __VA_ARGS__)
#define folio_log_crit(...) folio_log_write(FOLIO_LOG_CRIT, 0, __VA_ARGS__)

/*
 * folio_fatal, folio_fatalx - log at [crit] (with or without errno) and
 * exit(FOLIO_EXIT_FATAL).  Start-up paths and the master's setup only.
 */
void folio_fatal(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
void folio_fatalx(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

#endif
