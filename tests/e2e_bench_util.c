/*
 * e2e_bench_util.c - folio-bench as a subprocess of the end-to-end suites
 * (see e2e_bench_util.h).  Every wait has a deadline.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/e2e_bench_util.h"
#include "tests/e2e_util.h"

static const char *
bench_path(void)
{
    const char *p = getenv("FOLIO_BENCH");

    return p != NULL && *p != '\0' ? p : FOLIO_BUILDDIR "/folio-bench";
}

/* Start folio-bench with `argv`; its stdout to `out` (a file) or a pipe. */
static void
spawn(struct bproc *b, const char *const *argv, const char *out)
{
    const char *args[64];
    int o[2], e[2], n = 0, fd;

    memset(b, 0, sizeof(*b));
    args[n++] = bench_path();
    while (*argv != NULL && n < 63)
        args[n++] = *argv++;
    args[n] = NULL;
    ck_assert_int_eq(pipe(o), 0);
    ck_assert_int_eq(pipe(e), 0);
    b->pid = fork();
    ck_assert_int_ne(b->pid, -1);
    if (b->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (out != NULL && (fd = open(out, O_WRONLY)) >= 0) {
            dup2(fd, STDOUT_FILENO);
            close(fd);
        } else {
            dup2(o[1], STDOUT_FILENO);
        }
        dup2(e[1], STDERR_FILENO);
        close(o[0]);
        close(o[1]);
        close(e[0]);
        close(e[1]);
        execv(args[0], (char *const *)args);
        fprintf(stderr, "exec %s: %s\n", args[0], strerror(errno));
        _exit(127);
    }
    close(o[1]);
    close(e[1]);
    b->ofd = o[0];
    b->efd = e[0];
    b->status = -1;
}

void
bspawn(struct bproc *b, const char *const *argv)
{
    spawn(b, argv, NULL);
}

int
bspawn_out(struct bproc *b, const char *const *argv, const char *out)
{
    spawn(b, argv, out);
    return bfinish(b, 30000);
}

static void
slurp(int *fd, char *buf, size_t *len)
{
    ssize_t n;

    n = read(*fd, buf + *len, BPROC_OUT_MAX - 1 - *len);
    if (n <= 0) {
        close(*fd);
        *fd = -1;
        return;
    }
    *len += (size_t)n;
    buf[*len] = '\0';
}

/*
 * Read its output until stderr holds `needle` (NULL: until both pipes
 * close) or `timeout_ms` passes.  Returns 0 when found (or closed).
 */
int
bpump(struct bproc *b, const char *needle, int timeout_ms)
{
    uint64_t deadline = e2e_now_ms() + (uint64_t)timeout_ms;
    struct pollfd p[2];
    int np, left;

    for (;;) {
        if (needle != NULL && strstr(b->err, needle) != NULL)
            return 0;
        if (b->ofd == -1 && b->efd == -1)
            return needle == NULL ? 0 : -1;
        left = (int)(deadline - e2e_now_ms());
        if ((int64_t)(deadline - e2e_now_ms()) <= 0)
            return -1;
        np = 0;
        if (b->ofd != -1)
            p[np++] = (struct pollfd){b->ofd, POLLIN, 0};
        if (b->efd != -1)
            p[np++] = (struct pollfd){b->efd, POLLIN, 0};
        if (poll(p, (nfds_t)np, left) <= 0)
            continue;
        for (int i = 0; i < np; i++) {
            if (p[i].revents == 0)
                continue;
            if (p[i].fd == b->ofd)
                slurp(&b->ofd, b->out, &b->olen);
            else
                slurp(&b->efd, b->err, &b->elen);
        }
    }
}

/* Wait for the end; returns the exit status. */
int
bfinish(struct bproc *b, int timeout_ms)
{
    int st;

    if (bpump(b, NULL, timeout_ms) != 0) {
        fprintf(stderr, "folio-bench did not finish in %d ms: killed\n",
                timeout_ms);
        kill(b->pid, SIGKILL);
    }
    if (b->ofd != -1)
        close(b->ofd);
    if (b->efd != -1)
        close(b->efd);
    ck_assert_int_eq(waitpid(b->pid, &st, 0), b->pid);
    b->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return b->status;
}

/* Run folio-bench to the end: its exit status. */
int
brun(struct bproc *b, ...)
{
    const char *argv[64];
    va_list ap;
    int n = 0;

    va_start(ap, b);
    while (n < 63 && (argv[n] = va_arg(ap, const char *)) != NULL)
        n++;
    va_end(ap);
    argv[n] = NULL;
    bspawn(b, argv);
    return bfinish(b, 30000);
}

/* A number from the JSON summary: the first "key": in it, NAN if none. */
double
jnum(const char *json, const char *key)
{
    char pat[96];
    const char *p;

    snprintf(pat, sizeof(pat), "\"%s\":", key);
    if ((p = strstr(json, pat)) == NULL)
        return NAN;
    return strtod(p + strlen(pat), NULL);
}

/*
 * Copy into sub the flat object that starts at the first `pat` of json
 * (up to its first '}'): 0, or -1 if there is none.
 */
static int
object_at(const char *json, const char *pat, char *sub, size_t len)
{
    const char *p, *end;
    size_t n;

    if ((p = strstr(json, pat)) == NULL || (end = strchr(p, '}')) == NULL)
        return -1;
    n = (size_t)(end - p) < len - 1 ? (size_t)(end - p) : len - 1;
    memcpy(sub, p, n);
    sub[n] = '\0';
    return 0;
}

/* A number inside the object "obj":{...} (not nested further). */
double
jnum_in(const char *json, const char *obj, const char *key)
{
    char pat[96], sub[4096];

    snprintf(pat, sizeof(pat), "\"%s\":{", obj);
    if (object_at(json, pat, sub, sizeof(sub)) != 0)
        return NAN;
    return jnum(sub + strlen(pat), key);
}

/* The JSON summary is the last line of stdout. */
const char *
json_of(const struct bproc *b)
{
    const char *p = strrchr(b->out, '{');

    while (p != NULL && p > b->out && p[-1] != '\n')
        p--;
    ck_assert_msg(p != NULL && strstr(p, "\"mode\"") != NULL,
                  "no JSON summary in: %s", b->out);
    return p;
}

/*
 * sent = ok + wrong + errors, errors = error replies + lost,
 * requests = answers (ok + wrong + error replies).
 */
void
assert_counts_add_up(const char *j)
{
    double sent = jnum(j, "sent"), ok = jnum(j, "ok"), err = jnum(j, "errors"),
           rep = jnum(j, "error_replies"), lost = jnum(j, "lost"),
           req = jnum(j, "requests"), wrong = jnum(j, "wrong");

    ck_assert_msg(!isnan(sent) && !isnan(ok) && !isnan(err) && !isnan(wrong),
                  "%s", j);
    ck_assert_msg(sent == ok + wrong + err,
                  "sent %.0f != ok %.0f + wrong %.0f + errors %.0f", sent, ok,
                  wrong, err);
    ck_assert_msg(err == rep + lost, "errors %.0f != replies %.0f + lost %.0f",
                  err, rep, lost);
    ck_assert_msg(req == ok + wrong + rep,
                  "requests %.0f != ok + wrong + error replies", req);
}

/* A field of the threshold `name` in the JSON summary's "thresholds". */
double
jcheck(const char *json, const char *name, const char *key)
{
    char pat[96], sub[1024];

    snprintf(pat, sizeof(pat), "{\"threshold\":\"%s\"", name);
    if (object_at(json, pat, sub, sizeof(sub)) != 0)
        return NAN;
    if (strcmp(key, "passed") == 0)
        return strstr(sub, "\"passed\":true") != NULL    ? 1
               : strstr(sub, "\"passed\":false") != NULL ? 0
                                                         : NAN;
    snprintf(pat, sizeof(pat), "\"%s\":null", key);
    return strstr(sub, pat) != NULL ? NAN : jnum(sub, key);
}

int
count_lines_with(const char *text, const char *needle)
{
    int n = 0;

    for (const char *p = text; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}
