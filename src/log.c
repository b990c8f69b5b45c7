/*
 * log.c - log lines for the master, the workers and the tools.
 * Shaped after OpenBSD httpd's log.c: a few printf-like entry points,
 * errno appended by the *warn variants, fatal exits.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "src/clock.h"
#include "src/err.h"
#include "src/hash.h"
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

/*
 * Every process's log is rate-limited: a line repeated more than
 * REPEAT_BURST times in REPEAT_WINDOW_MS (its text after the level, so
 * the same message from the same call with the same values) is held
 * back, and the next line written once the window is over says how many
 * were, as syslogd's "message repeated" does.  An accept failing in a
 * loop wrote 5.7 million identical lines (541 MB) in 17 s.  [crit] lines
 * are never held back.
 */
#define REPEAT_BURST 10
#define REPEAT_WINDOW_MS 1000
#define REPEAT_SLOTS 16

static struct repeat {
    uint64_t hash;     /* of the message, 0: free */
    uint64_t start_ms; /* its window's start (monotonic) */
    uint64_t n;        /* lines of it in the window */
    uint64_t held;     /* held back, not yet told */
    int level;
    char text[96]; /* its beginning, for the line that tells */
} repeats[REPEAT_SLOTS];
static atomic_flag repeats_busy = ATOMIC_FLAG_INIT;

static void write_line(int level, const char *line, size_t n);

static size_t
stamp(char *line, size_t len, uint64_t ms, int level)
{
    time_t sec = (time_t)(ms / 1000);
    struct tm tm;
    int r;

    gmtime_r(&sec, &tm);
    r = snprintf(line, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %ld [%s] ",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec, (long)(ms % 1000), log_role,
                 (long)getpid(), level_tags[level]);
    return r > 0 ? (size_t)r : 0;
}

/* What slot r held back: one line. */
static void
tell_held(struct repeat *r)
{
    char line[256];
    size_t n;
    int k;

    n = stamp(line, sizeof(line), folio_unix_ms(), r->level);
    k = snprintf(line + n, sizeof(line) - n,
                 "%llu more line%s like \"%s\" held back in %d s (the log's "
                 "rate limit)\n",
                 (unsigned long long)r->held, r->held == 1 ? "" : "s",
                 r->text, REPEAT_WINDOW_MS / 1000);
    if (k > 0)
        n = n + (size_t)k < sizeof(line) ? n + (size_t)k : sizeof(line) - 1;
    line[n - 1] = '\n';
    write_line(r->level, line, n);
    r->held = 0;
}

/*
 * Count the message `text` (len bytes) at `level`: 1 if it is to be
 * written, 0 if held back.  Tells what windows now over held back.
 */
static int
repeat_pass(int level, const char *text, size_t len)
{
    static unsigned evict;
    uint64_t now = folio_mono_ms(), h;
    struct repeat *r, *found = NULL, *freed = NULL;
    size_t i;
    int pass = 1;

    if (level >= FOLIO_LOG_CRIT || atomic_flag_test_and_set(&repeats_busy))
        return 1; /* another thread is here: no limit for this line */
    h = folio_fnv1a64(text, len) | 1;
    for (i = 0; i < REPEAT_SLOTS; i++) {
        r = &repeats[i];
        if (r->hash != 0 && now - r->start_ms >= REPEAT_WINDOW_MS) {
            if (r->held > 0)
                tell_held(r);
            r->start_ms = now;
            r->n = 0;
            if (r->hash != h)
                r->hash = 0; /* its window is over: free */
        }
        if (r->hash == h)
            found = r;
        else if (r->hash == 0 && freed == NULL)
            freed = r;
    }
    if ((r = found) == NULL) {
        /* A new message: a free slot, else one in turn (told first). */
        r = freed != NULL ? freed : &repeats[evict++ % REPEAT_SLOTS];
        if (r->held > 0)
            tell_held(r);
        r->hash = h;
        r->start_ms = now;
        r->n = 0;
        r->level = level;
        snprintf(r->text, sizeof(r->text), "%.*s", (int)len, text);
    }
    if (++r->n > REPEAT_BURST) {
        r->held++;
        pass = 0;
    }
    atomic_flag_clear(&repeats_busy);
    return pass;
}

static void
write_line(int level, const char *line, size_t n)
{
    /* One write per line: lines of several processes never interleave. */
    while (write(log_fd, line, n) == -1 && errno == EINTR)
        ;
    if (mirror_fd >= 0 && mirror_fd != log_fd && level >= FOLIO_LOG_WARN)
        while (write(mirror_fd, line, n) == -1 && errno == EINTR)
            ;
}

void
folio_log_vwrite(int level, int with_errno, const char *fmt, va_list ap)
{
    char line[2048];
    uint64_t ms = folio_unix_ms();
    int saved = errno;
    size_t n, head;
    int r;

    n = head = stamp(line, sizeof(line), ms, level);
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
    if (repeat_pass(level, line + head, n - 1 - head))
        write_line(level, line, n);
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
