/*
 * log.c - log lines for the master, the workers and the tools.
 * Shaped after OpenBSD httpd's log.c: a few printf-like entry points,
 * errno appended by the *warn variants, fatal exits.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "src/clock.h"
#include "src/err.h"
#include "src/log.h"

int folio_log_level = FOLIO_LOG_INFO;

static int log_fd = STDERR_FILENO;
static int mirror_fd = -1; /* warnings and errors also go here, or -1 */
static char log_path[4096];
static char log_role[16] = "M";

static const char *const level_tags[] = {
    "debug", "info", "notice", "warn", "error", "crit",
};

void
folio_log_set_role(char role, int index)
{
    if (index >= 0)
        snprintf(log_role, sizeof(log_role), "%c%d", role, index);
    else
        snprintf(log_role, sizeof(log_role), "%c", role);
}

int
folio_log_open(const char *path)
{
    int fd;

    if (path == NULL || *path == '\0') {
        if (log_fd != STDERR_FILENO)
            close(log_fd);
        log_fd = STDERR_FILENO;
        log_path[0] = '\0';
        return 0;
    }
    fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd == -1) {
        folio_log_warn("open(%s)", path);
        return FOLIO_ESYS;
    }
    if (log_fd != STDERR_FILENO)
        close(log_fd);
    log_fd = fd;
    snprintf(log_path, sizeof(log_path), "%s", path);
    return 0;
}

int
folio_log_adopt(int fd, const char *path)
{
    int fl;

    if (fd < 0 || (fl = fcntl(fd, F_GETFD)) == -1 ||
        fcntl(fd, F_SETFD, fl | FD_CLOEXEC) == -1)
        return FOLIO_ESYS;
    if (log_fd != STDERR_FILENO && log_fd != fd)
        close(log_fd);
    log_fd = fd;
    snprintf(log_path, sizeof(log_path), "%s", path != NULL ? path : "");
    return 0;
}

void
folio_log_mirror(int fd)
{
    mirror_fd = fd;
}

int
folio_log_reopen(void)
{
    char path[sizeof(log_path)];

    if (log_path[0] == '\0')
        return 0;
    memcpy(path, log_path, sizeof(path));
    return folio_log_open(path);
}

int
folio_log_fd(void)
{
    return log_fd;
}

int
folio_log_parse_level(const char *s)
{
    size_t i;

    for (i = 0; i < sizeof(level_tags) / sizeof(level_tags[0]) - 1; i++)
        if (strcasecmp(s, level_tags[i]) == 0)
            return (int)i;
    if (strcasecmp(s, "warning") == 0)
        return FOLIO_LOG_WARN;
    return -1;
}

void
folio_log_vwrite(int level, int with_errno, const char *fmt, va_list ap)
{
    char line[2048];
    uint64_t ms = folio_unix_ms();
    time_t sec = (time_t)(ms / 1000);
    struct tm tm;
    int saved = errno;
    size_t n;
    int r;

    gmtime_r(&sec, &tm);
    r = snprintf(line, sizeof(line),
                 "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %ld [%s] ",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec, (long)(ms % 1000), log_role,
                 (long)getpid(), level_tags[level]);
    n = r > 0 ? (size_t)r : 0;
    r = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
    if (r > 0)
        n += (size_t)r;
    if (n > sizeof(line) - 2)
        n = sizeof(line) - 2;
    if (with_errno) {
        r = snprintf(line + n, sizeof(line) - n, ": %s", strerror(saved));
        if (r > 0)
            n += (size_t)r;
        if (n > sizeof(line) - 2)
            n = sizeof(line) - 2;
    }
    line[n++] = '\n';
    /* One write per line: lines of several processes never interleave. */
    while (write(log_fd, line, n) == -1 && errno == EINTR)
        ;
    if (mirror_fd >= 0 && mirror_fd != log_fd && level >= FOLIO_LOG_WARN)
        while (write(mirror_fd, line, n) == -1 && errno == EINTR)
            ;
    errno = saved;
}

void
folio_log_write(int level, int with_errno, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    folio_log_vwrite(level, with_errno, fmt, ap);
    va_end(ap);
}

void
folio_fatal(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    folio_log_vwrite(FOLIO_LOG_CRIT, 1, fmt, ap);
    va_end(ap);
    exit(FOLIO_EXIT_FATAL);
}

void
folio_fatalx(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    folio_log_vwrite(FOLIO_LOG_CRIT, 0, fmt, ap);
    va_end(ap);
    exit(FOLIO_EXIT_FATAL);
}

static void
libevent_log(int severity, const char *msg)
{
    int level = severity == EVENT_LOG_DEBUG ? FOLIO_LOG_DEBUG
                : severity == EVENT_LOG_MSG ? FOLIO_LOG_INFO
                : severity == EVENT_LOG_WARN ? FOLIO_LOG_WARN
                                              : FOLIO_LOG_ERROR;

    if (level >= folio_log_level)
        folio_log_write(level, 0, "libevent: %s", msg);
}

static void
libevent_fatal(int err)
{
    folio_log_crit("libevent: fatal error %d", err);
    abort();
}

void
folio_log_libevent(void)
{
    event_set_log_callback(libevent_log);
    event_set_fatal_callback(libevent_fatal);
}

uint64_t
folio_log_rate_due(struct folio_log_rate *r, uint64_t now_ms,
                   uint32_t interval_ms)
{
    uint64_t n = r->count;

    if (n == 0 || now_ms < r->next_ms)
        return 0;
    r->count = 0;
    r->next_ms = now_ms + interval_ms;
    return n;
}

uint64_t
folio_log_rate_hit(struct folio_log_rate *r, uint64_t now_ms,
                   uint32_t interval_ms)
{
    r->count++;
    return folio_log_rate_due(r, now_ms, interval_ms);
}
