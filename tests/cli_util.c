/*
 * cli_util.c - running the folio client under test (see cli_util.h).
 * Output is read through pipes with poll() under a deadline: a client
 * that hangs fails the test instead of stalling it.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/cli_util.h"
#include "tests/e2e_util.h"

/* The folio under test: $FOLIO or the build's. */
static const char *
cli_folio(void)
{
    const char *p = getenv("FOLIO");

    return p != NULL && *p != '\0' ? p : FOLIO_BUILDDIR "/folio";
}

/* Append what fd has to *buf; 0 at EOF, 1 if more may come. */
static int
drain(int fd, char **buf, size_t *len, size_t *cap)
{
    char tmp[65536];
    ssize_t n = read(fd, tmp, sizeof(tmp));

    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 1 : 0;
    if (n == 0)
        return 0;
    if (*len + (size_t)n + 1 > *cap) {
        *cap = (*len + (size_t)n + 1) * 2;
        if ((*buf = realloc(*buf, *cap)) == NULL)
            abort();
    }
    memcpy(*buf + *len, tmp, (size_t)n);
    *len += (size_t)n;
    (*buf)[*len] = '\0';
    return 1;
}

int
cli_run(struct cli_run *r, const struct cli_opts *o, const char *const *argv)
{
    static const struct cli_opts none;
    const char *args[64];
    int out[2], err[2], in[2], i, n = 0, st, sent = 0, open_fds = 2;
    size_t outcap = 1, errcap = 1, inlen, inoff = 0;
    uint64_t t0 = e2e_now_ms(), deadline;
    struct pollfd p[3];
    pid_t pid;

    if (o == NULL)
        o = &none;
    memset(r, 0, sizeof(*r));
    r->out = calloc(1, 1);
    r->err = calloc(1, 1);
    args[n++] = o->prog != NULL ? o->prog : cli_folio();
    for (i = 0; argv[i] != NULL && n < 63; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    if (pipe(out) != 0 || pipe(err) != 0 || pipe(in) != 0) {
        perror("pipe");
        return -1;
    }
    if ((pid = fork()) == -1) {
        perror("fork");
        return -1;
    }
    if (pid == 0) {
        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        dup2(err[1], STDERR_FILENO);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        close(err[0]);
        close(err[1]);
        unsetenv("FOLIO_ADDR");
        unsetenv("FOLIO_ADMIN");
        for (i = 0; o->env != NULL && o->env[i] != NULL; i++)
            putenv((char *)o->env[i]);
        execvp(args[0], (char *const *)args); /* o->prog on PATH */
        fprintf(stderr, "exec %s: %s\n", args[0], strerror(errno));
        _exit(127); /* not exit(): the test's atexit handlers are not ours */
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    /* Standard input: the given text, else EOF at once. */
    inlen = o->input != NULL ? strlen(o->input) : 0;
    if (inlen == 0) {
        close(in[1]);
        in[1] = -1;
    } else {
        fcntl(in[1], F_SETFL, O_NONBLOCK);
    }
    deadline = t0 + (uint64_t)(o->deadline_ms > 0 ? o->deadline_ms : 15000);
    while (open_fds > 0) {
        uint64_t now = e2e_now_ms();

        if (now >= deadline) {
            kill(pid, SIGKILL);
            break;
        }
        p[0] = (struct pollfd){out[0] >= 0 ? out[0] : -1, POLLIN, 0};
        p[1] = (struct pollfd){err[0] >= 0 ? err[0] : -1, POLLIN, 0};
        p[2] = (struct pollfd){in[1], POLLOUT, 0};
        if (poll(p, 3, (int)(deadline - now)) < 0 && errno != EINTR)
            break;
        if (p[0].revents && !drain(out[0], &r->out, &r->outlen, &outcap)) {
            close(out[0]);
            out[0] = -1;
            open_fds--;
        }
        if (p[1].revents && !drain(err[0], &r->err, &r->errlen, &errcap)) {
            close(err[0]);
            err[0] = -1;
            open_fds--;
        }
        if (p[2].revents) {
            ssize_t w = write(in[1], o->input + inoff, inlen - inoff);

            if (w > 0)
                inoff += (size_t)w;
            if (w < 0 || inoff == inlen) {
                close(in[1]);
                in[1] = -1;
            }
        }
        if (o->until != NULL && !sent &&
            (strstr(r->out, o->until) != NULL ||
             strstr(r->err, o->until) != NULL)) {
            kill(pid, SIGINT);
            sent = 1;
        }
    }
    if (out[0] >= 0)
        close(out[0]);
    if (err[0] >= 0)
        close(err[0]);
    if (in[1] >= 0)
        close(in[1]);
    while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
        ;
    r->ms = e2e_now_ms() - t0;
    if (open_fds > 0)
        r->status = -1;
    else if (WIFEXITED(st))
        r->status = WEXITSTATUS(st);
    else
        r->status = 128 + WTERMSIG(st);
    return 0;
}

void
cli_expect(struct cli_run *r, const struct cli_opts *o, const char *const *argv,
           int status)
{
    ck_assert_int_eq(cli_run(r, o, argv), 0);
    ck_assert_msg(r->status == status,
                  "%s %s...: exit %d, expected %d\nstdout: %s\nstderr: %s",
                  o != NULL && o->prog != NULL ? o->prog : "folio", argv[0],
                  r->status, status, r->out, r->err);
}

void
cli_has(const char *text, const char *needle)
{
    ck_assert_msg(strstr(text, needle) != NULL, "'%s' not in:\n%s", needle,
                  text);
}

void
cli_run_free(struct cli_run *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

int
cli_pty_start(struct cli_pty *p, const char *const *env,
              const char *const *argv)
{
    const char *args[64];
    int i, n = 0;
    pid_t pid;

    memset(p, 0, sizeof(*p));
    args[n++] = cli_folio();
    for (i = 0; argv[i] != NULL && n < 63; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    if ((pid = forkpty(&p->fd, NULL, NULL, NULL)) == -1) {
        perror("forkpty");
        return -1;
    }
    if (pid == 0) {
        unsetenv("FOLIO_ADDR");
        unsetenv("FOLIO_ADMIN");
        setenv("TERM", "vt100", 1);
        for (i = 0; env != NULL && env[i] != NULL; i++)
            putenv((char *)env[i]);
        execv(args[0], (char *const *)args);
        fprintf(stderr, "exec %s: %s\n", args[0], strerror(errno));
        _exit(127);
    }
    p->pid = (int)pid;
    return 0;
}

/*
 * Read what the terminal shows into p->out, dropping the NULs that
 * terminfo pads escape sequences with (vt100's): they would end the
 * text for strstr.  Returns read's result.
 */
static ssize_t
pty_read(struct cli_pty *p)
{
    char buf[4096];
    ssize_t n, i;

    n = read(p->fd, buf, sizeof(buf));
    for (i = 0; i < n && p->len < sizeof(p->out) - 1; i++)
        if (buf[i] != '\0')
            p->out[p->len++] = buf[i];
    p->out[p->len] = '\0';
    return n;
}

int
cli_pty_expect(struct cli_pty *p, const char *needle, int timeout_ms)
{
    uint64_t deadline = e2e_now_ms() + (uint64_t)timeout_ms;
    struct pollfd pf;
    const char *hit;

    for (;;) {
        if ((hit = strstr(p->out + p->mark, needle)) != NULL) {
            p->mark = (size_t)(hit - p->out) + strlen(needle);
            return 0;
        }
        if (e2e_now_ms() >= deadline || p->len >= sizeof(p->out) - 1)
            break;
        pf.fd = p->fd;
        pf.events = POLLIN;
        pf.revents = 0;
        if (poll(&pf, 1, (int)(deadline - e2e_now_ms())) <= 0)
            continue;
        if (pty_read(p) <= 0)
            break; /* EIO: the other side is closed */
    }
    fprintf(stderr, "---- no '%s' on the terminal; it shows ----\n%s\n----\n",
            needle, p->out);
    return -1;
}

void
cli_pty_send(struct cli_pty *p, const char *keys)
{
    size_t len = strlen(keys), off = 0;
    ssize_t n;

    while (off < len && (n = write(p->fd, keys + off, len - off)) > 0)
        off += (size_t)n;
}

int
cli_pty_finish(struct cli_pty *p, int timeout_ms)
{
    uint64_t deadline = e2e_now_ms() + (uint64_t)timeout_ms;
    struct pollfd pf;
    int st;
    pid_t r;

    for (;;) {
        if ((r = waitpid(p->pid, &st, WNOHANG)) == p->pid)
            break;
        if (r == -1 || e2e_now_ms() >= deadline) {
            kill(p->pid, SIGKILL);
            waitpid(p->pid, &st, 0);
            close(p->fd);
            return -1;
        }
        /* Keep reading: a full terminal would block its writes. */
        pf.fd = p->fd;
        pf.events = POLLIN;
        pf.revents = 0;
        if (poll(&pf, 1, 10) > 0)
            pty_read(p);
    }
    close(p->fd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

char *
cli_subst(const char *text, const char *from, const char *to)
{
    size_t fl = strlen(from), tl = strlen(to), n = 0, cap;
    const char *p, *q;
    char *out;

    cap = strlen(text) + 1;
    for (p = text; fl > 0 && (q = strstr(p, from)) != NULL; p = q + fl)
        cap += tl;
    if ((out = malloc(cap)) == NULL)
        abort();
    for (p = text; fl > 0 && (q = strstr(p, from)) != NULL; p = q + fl) {
        memcpy(out + n, p, (size_t)(q - p));
        n += (size_t)(q - p);
        memcpy(out + n, to, tl);
        n += tl;
    }
    strcpy(out + n, p);
    return out;
}

int
cli_golden(const char *name, const char *text)
{
    char path[1024];
    char *want;
    int rc;

    snprintf(path, sizeof(path), "%s/tests/cli/%s.ref", FOLIO_SRCDIR, name);
    if (getenv("FOLIO_CLI_REGEN") != NULL) {
        if (e2e_write_file(path, text) != 0) {
            perror(path);
            return -1;
        }
        return 0;
    }
    if ((want = e2e_read_file(path)) == NULL) {
        fprintf(stderr, "%s: cannot read (FOLIO_CLI_REGEN=1 writes it)\n",
                path);
        return -1;
    }
    rc = strcmp(want, text) == 0 ? 0 : -1;
    if (rc != 0)
        fprintf(stderr, "---- %s (expected) ----\n%s---- got ----\n%s----\n",
                path, want, text);
    free(want);
    return rc;
}

void
cli_transcript_add(char **buf, const char *const *argv, const struct cli_run *r)
{
    size_t len = *buf != NULL ? strlen(*buf) : 0, need;
    int i;

    need = len + r->outlen + r->errlen + 64;
    for (i = 0; argv[i] != NULL; i++)
        need += strlen(argv[i]) + 3;
    if ((*buf = realloc(*buf, need)) == NULL)
        abort();
    len += (size_t)sprintf(*buf + len, "$ folio");
    for (i = 0; argv[i] != NULL; i++) {
        const char *a = argv[i];
        int quote = strpbrk(a, " \"{[") != NULL || *a == '\0';

        need += strlen(a) * 4;
        if ((*buf = realloc(*buf, need)) == NULL)
            abort();
        len += (size_t)sprintf(*buf + len, quote ? " '" : " ");
        /* Control characters as \xNN, so the file stays text. */
        for (; *a != '\0'; a++)
            len += (size_t)sprintf(*buf + len,
                                   (unsigned char)*a < 0x20 ? "\\x%02x" : "%c",
                                   (unsigned char)*a);
        if (quote)
            (*buf)[len++] = '\'';
    }
    len += (size_t)sprintf(*buf + len, "\n%s%s[exit %d]\n", r->out, r->err,
                           r->status);
}
