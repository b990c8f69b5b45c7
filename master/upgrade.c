/*
 * upgrade.c - a new foliod binary taken up at a SIGHUP, as HAProxy's
 * master-worker mode does it: the master re-executes itself.  It keeps
 * its pid, its listening sockets (and systemd's), the metrics socket, the
 * shared stats region (a memory file) and its workers, which stay its
 * children and go on serving through the exec: they never see it.  The
 * new image takes the state over (folio_upgrade_resume), then reloads as
 * for any SIGHUP: its own new generation, from the new binary, replaces
 * the old one without a failed request.
 *
 * Before the exec, the new binary runs `--check-config` with the same
 * arguments in a child: a binary that does not start, or cannot take the
 * state over (it must answer "handover N" with our N), or a configuration
 * it rejects, fails the reload there, and the old image keeps serving.
 *
 * The state travels in a memory file whose descriptor is named by
 * FOLIO_HANDOVER: lines of "key values", then decide.c's saved state, then
 * the serving generation's configuration as foliod.conf text (so the new
 * image knows what the running workers were started with even if the file
 * on disk changed).  Every descriptor it names is inherited (not
 * close-on-exec); everything else is closed by the exec.
 */
#include "config.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "master/master_int.h"
#include "src/alloc.h"
#include "src/clock.h"
#include "src/err.h"
#include "src/log.h"
#include "src/prof/prof.h"

#define HANDOVER_ENV "FOLIO_HANDOVER"
#define HANDOVER_MAGIC "folio-handover 1"
#define CHECK_TIMEOUT_MS 60000 /* the new binary's --check-config */
#define STATE_MAX (1u << 20)

extern char **environ;

int
folio_upgrade_init(struct folio_master *m)
{
    struct stat st;
    ssize_t n;

    m->exe.known = 0;
    n = readlink("/proc/self/exe", m->exe.path, sizeof(m->exe.path) - 1);
    if (n <= 0 || stat("/proc/self/exe", &st) != 0)
        return -1;
    m->exe.path[n] = '\0';
    /* Started from a file already replaced: nothing to compare with. */
    if (n > 10 && strcmp(m->exe.path + n - 10, " (deleted)") == 0)
        return -1;
    m->exe.dev = st.st_dev;
    m->exe.ino = st.st_ino;
    m->exe.known = 1;
    return 0;
}

int
folio_upgrade_changed(const struct folio_master *m)
{
    struct stat st;

    if (!m->exe.known || stat(m->exe.path, &st) != 0)
        return 0;
    return st.st_dev != m->exe.dev || st.st_ino != m->exe.ino;
}

int
folio_upgrade_pending(void)
{
    const char *v = getenv(HANDOVER_ENV);

    return v != NULL && *v != '\0';
}

/* ---- the check: the new binary, --check-config, in a child ---- */

const char *
folio_upgrade_token(char *buf, size_t len)
{
    /*
     * An image maps the region as its own structs describe it: one whose
     * slot or header differs (a statistic added) cannot take it over.
     */
    snprintf(buf, len, "handover 1 stats %zu/%zu/%u",
             sizeof(struct folio_worker_slot),
             sizeof(struct folio_stats_header), (unsigned)FOLIO_MAX_SLOTS);
    return buf;
}

static int
check_binary(struct folio_master *m, char *err, size_t errlen)
{
    char out[2048], *argv[FOLIO_MAX_SOCKETS * 2 + 64], *nl, want[100];
    struct pollfd pfd;
    uint64_t deadline;
    size_t len = 0;
    sigset_t none;
    ssize_t r;
    pid_t pid;
    int p[2], i, n = 0, st = 0, done = 0;

    argv[n++] = m->exe.path;
    for (i = 1; i < m->argc && n < (int)(sizeof(argv) / sizeof(argv[0])) - 2;
         i++)
        argv[n++] = m->argv[i];
    argv[n++] = (char *)"--check-config";
    argv[n] = NULL;
    if (pipe2(p, O_CLOEXEC) == -1) {
        snprintf(err, errlen, "pipe2: %s", strerror(errno));
        return -1;
    }
    if ((pid = fork()) == -1) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        dup2(p[1], STDOUT_FILENO);
        dup2(p[1], STDERR_FILENO);
        setenv("FOLIO_UPGRADE_CHECK", "1", 1);
        execv(argv[0], argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(p[1]);
    deadline = folio_mono_ms() + CHECK_TIMEOUT_MS;
    pfd.fd = p[0];
    pfd.events = POLLIN;
    while (!done) {
        uint64_t now = folio_mono_ms();

        if (now >= deadline)
            break;
        if (poll(&pfd, 1, (int)(deadline - now)) <= 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        r = read(p[0], out + len, sizeof(out) - 1 - len);
        if (r > 0 && len + (size_t)r < sizeof(out) - 1)
            len += (size_t)r;
        else if (r > 0)
            len = sizeof(out) - 1;
        else if (r == 0 || errno != EINTR)
            done = 1;
    }
    close(p[0]);
    out[len] = '\0';
    if (!done) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        snprintf(err, errlen, "the new binary %s: --check-config took over %d "
                 "s",
                 m->exe.path, CHECK_TIMEOUT_MS / 1000);
        return -1;
    }
    while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
        ;
    folio_upgrade_token(want, sizeof(want) - 1);
    strcat(want, "\n");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || strstr(out, want) == NULL) {
        char how[96];

        /* Its first line says why. */
        if ((nl = strchr(out, '\n')) != NULL)
            *nl = '\0';
        folio_dec_describe(st, how, sizeof(how));
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
            snprintf(err, errlen, "the new binary %s cannot take over a "
                     "running foliod (restart it instead)",
                     m->exe.path);
        else
            snprintf(err, errlen, "the new binary %s %s: %.400s", m->exe.path,
                     how, out[0] != '\0' ? out : "(no output)");
        return -1;
    }
    return 0;
}

/* ---- the state, written ---- */

static int
set_cloexec(int fd, int on)
{
    int fl = fcntl(fd, F_GETFD);

    if (fl == -1)
        return -1;
    return fcntl(fd, F_SETFD, on ? fl | FD_CLOEXEC : fl & ~FD_CLOEXEC);
}

struct keep {
    int fds[FOLIO_MAX_SLOTS + 3 * FOLIO_MAX_SOCKETS + 16];
    int n;
};

static void
keep(struct keep *k, int fd)
{
    /* 0, 1 and 2 are inherited anyway. */
    if (fd > STDERR_FILENO && k->n < (int)(sizeof(k->fds) / sizeof(k->fds[0])))
        k->fds[k->n++] = fd;
}

/* The state as text into f; the descriptors it names into k. */
static int
write_state(struct folio_master *m, FILE *f, struct keep *k)
{
    static char dec[STATE_MAX];
    const struct folio_gen *g = m->cur;
    char *conf = NULL;
    size_t conflen = 0;
    FILE *cf;
    int i, afds[FOLIO_MAX_SOCKETS], na;

    fprintf(f, "%s\n", HANDOVER_MAGIC);
    fprintf(f, "seqs %llu %llu\n", (unsigned long long)m->next_gen_id,
            (unsigned long long)m->spawn_seq);
    fprintf(f, "stats %d\n", folio_stats_fd(m->stats));
    keep(k, folio_stats_fd(m->stats));
    fprintf(f, "log %d %s\n", folio_log_fd(),
            g->cfg.log_file != NULL ? g->cfg.log_file : "-");
    keep(k, folio_log_fd());
    if (m->metrics_fd != -1) {
        fprintf(f, "metrics %d\n", m->metrics_fd);
        keep(k, m->metrics_fd);
    }
    if (m->ready_fd != -1) {
        fprintf(f, "ready %d %s\n", m->ready_fd, m->ready_path);
        keep(k, m->ready_fd);
    }
    if (m->pid_file[0] != '\0')
        fprintf(f, "pidfile %s\n", m->pid_file);
    na = folio_activate_fds(afds, FOLIO_MAX_SOCKETS);
    for (i = 0; i < na; i++) {
        fprintf(f, "activate %d\n", afds[i]);
        keep(k, afds[i]);
    }
    fprintf(f, "gen %llu %d\n", (unsigned long long)g->id, g->nworkers);
    for (i = 0; i < g->nlisteners; i++) {
        const struct folio_listener *l = &g->listeners[i];

        if (l->fd == -1)
            continue;
        /* Its kind: 0 msgpack-RPC, 1 admin, 2 HTTP. */
        fprintf(f, "listener %d %d %d %s\t%s\n", l->fd,
                l->http ? 2 : l->admin, l->passed, l->name, l->spec);
        keep(k, l->fd);
    }
    for (i = 0; i < FOLIO_MAX_SLOTS; i++)
        if (folio_dec_live(&m->dec, i) && m->procs[i].chan != -1) {
            fprintf(f, "chan %d %d %llu\n", i, m->procs[i].chan,
                    (unsigned long long)m->procs[i].seq);
            keep(k, m->procs[i].chan);
        }
    if (folio_dec_save(&m->dec, dec, sizeof(dec)) == 0)
        return -1;
    fprintf(f, "dec\n%s", dec);
    /* Last: the configuration the serving workers run, as file text. */
    if ((cf = open_memstream(&conf, &conflen)) == NULL)
        return -1;
    folio_config_write(&g->cfg, cf);
    fclose(cf);
    fprintf(f, "config %zu\n", conflen);
    fwrite(conf, 1, conflen, f);
    free(conf);
    return ferror(f) ? -1 : 0;
}

int
folio_upgrade_exec(struct folio_master *m, char *err, size_t errlen)
{
    struct keep k;
    char num[32];
    FILE *f;
    int fd, i, e;

    if (!m->exe.known) {
        snprintf(err, errlen, "the running binary is unknown");
        return -1;
    }
    if (folio_stats_fd(m->stats) == -1) {
        snprintf(err, errlen, "the stats region is not a memory file: "
                 "cannot upgrade without a restart");
        return -1;
    }
    if (check_binary(m, err, errlen) != 0)
        return -1;
    if ((fd = memfd_create("folio-handover", 0)) == -1) {
        snprintf(err, errlen, "memfd_create: %s", strerror(errno));
        return -1;
    }
    k.n = 0;
    if ((f = fdopen(dup(fd), "w")) == NULL || write_state(m, f, &k) != 0 ||
        fclose(f) != 0) {
        snprintf(err, errlen, "writing the state for the new image failed");
        close(fd);
        return -1;
    }
    /*
     * Everything else closes at the exec (the metrics clients, libevent's
     * own descriptors); what the state names stays open.
     */
#ifdef CLOSE_RANGE_CLOEXEC
    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
#endif
    keep(&k, fd);
    for (i = 0; i < k.n; i++)
        set_cloexec(k.fds[i], 0);
    snprintf(num, sizeof(num), "%d", fd);
    setenv(HANDOVER_ENV, num, 1);
    folio_log_notice("upgrading: executing %s (pid %ld stays the master)",
                     m->exe.path, (long)getpid());
    /* An interval timer survives exec: no SIGPROF for the new image. */
    folio_prof_cpu_stop();
    execve(m->exe.path, m->argv, environ);
    e = errno;
    /* Still the old image: as it was. */
    unsetenv(HANDOVER_ENV);
    for (i = 0; i < k.n; i++)
        set_cloexec(k.fds[i], 1);
    close(fd);
    snprintf(err, errlen, "execve(%s): %s", m->exe.path, strerror(e));
    return -1;
}

/* ---- the state, read by the next image ---- */

static int
adopt_fd(int fd)
{
    return fd >= 0 && set_cloexec(fd, 1) == 0 ? 0 : -1;
}

static int
read_all(int fd, char **out, size_t *len)
{
    struct stat st;
    char *buf;
    ssize_t r;
    size_t n = 0;

    if (fstat(fd, &st) != 0 || st.st_size <= 0 || st.st_size > STATE_MAX * 4)
        return -1;
    if ((buf = folio_malloc((size_t)st.st_size + 1)) == NULL)
        return -1;
    while (n < (size_t)st.st_size &&
           (r = pread(fd, buf + n, (size_t)st.st_size - n, (off_t)n)) > 0)
        n += (size_t)r;
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return n == (size_t)st.st_size ? 0 : -1;
}

static int
parse_line(struct folio_master *m, struct folio_gen *g, char *line,
           char *err, size_t errlen)
{
    unsigned long long a, b;
    int fd, x, y, off = 0;

    if (sscanf(line, "seqs %llu %llu", &a, &b) == 2) {
        m->next_gen_id = a;
        m->spawn_seq = b;
    } else if (sscanf(line, "stats %d", &fd) == 1) {
        if (adopt_fd(fd) != 0 || folio_stats_attach(fd, &m->stats) != 0) {
            snprintf(err, errlen, "the stats region (descriptor %d)", fd);
            return -1;
        }
    } else if (sscanf(line, "log %d %n", &fd, &off) == 1 && off > 0) {
        if (fd > STDERR_FILENO)
            folio_log_adopt(fd, strcmp(line + off, "-") == 0 ? NULL
                                                             : line + off);
    } else if (sscanf(line, "metrics %d", &fd) == 1) {
        if (adopt_fd(fd) == 0)
            m->metrics_fd = fd;
    } else if (sscanf(line, "ready %d %n", &fd, &off) == 1 && off > 0) {
        if (adopt_fd(fd) == 0) {
            m->ready_fd = fd;
            snprintf(m->ready_path, sizeof(m->ready_path), "%s", line + off);
        }
    } else if (strncmp(line, "pidfile ", 8) == 0) {
        snprintf(m->pid_file, sizeof(m->pid_file), "%s", line + 8);
    } else if (sscanf(line, "activate %d", &fd) == 1) {
        if (folio_activate_adopt(fd) != 0)
            close(fd);
    } else if (sscanf(line, "gen %llu %d", &a, &x) == 2) {
        g->id = a;
        g->nworkers = x;
    } else if (sscanf(line, "listener %d %d %d %n", &fd, &x, &y, &off) == 3 &&
               off > 0) {
        struct folio_listener *l = &g->listeners[g->nlisteners];
        char *tab = strchr(line + off, '\t');

        if (g->nlisteners >= FOLIO_MAX_SOCKETS || tab == NULL ||
            adopt_fd(fd) != 0) {
            snprintf(err, errlen, "a listening socket: '%s'", line);
            return -1;
        }
        *tab = '\0';
        l->fd = fd;
        l->admin = x == 1;
        l->http = x == 2;
        l->passed = y;
        snprintf(l->name, sizeof(l->name), "%s", line + off);
        snprintf(l->spec, sizeof(l->spec), "%s", tab + 1);
        g->nlisteners++;
    } else if (sscanf(line, "chan %d %d %llu", &x, &fd, &a) == 3) {
        if (x < 0 || x >= FOLIO_MAX_SLOTS || adopt_fd(fd) != 0) {
            snprintf(err, errlen, "a worker's channel: '%s'", line);
            return -1;
        }
        m->procs[x].chan = fd;
        m->procs[x].seq = a;
    } else {
        snprintf(err, errlen, "unknown line '%.200s'", line);
        return -1;
    }
    return 0;
}

int
folio_upgrade_resume(struct folio_master *m, char *err, size_t errlen)
{
    struct folio_gen *g;
    char *text = NULL, *p, *nl, *dec, *conf;
    size_t len = 0, conflen;
    int fd, i, rc = -1;

    fd = atoi(getenv(HANDOVER_ENV));
    unsetenv(HANDOVER_ENV);
    if (read_all(fd, &text, &len) != 0) {
        snprintf(err, errlen, "cannot read the state (descriptor %d)", fd);
        close(fd);
        folio_free(text);
        return -1;
    }
    close(fd);
    if ((g = folio_calloc(1, sizeof(*g))) == NULL) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    for (i = 0; i < FOLIO_MAX_SOCKETS; i++)
        g->listeners[i].fd = -1;
    folio_config_init(&g->cfg);
    m->cur = g;
    if (strncmp(text, HANDOVER_MAGIC "\n", sizeof(HANDOVER_MAGIC)) != 0) {
        snprintf(err, errlen, "not a state this image knows");
        goto done;
    }
    /* Key lines up to "dec", decide.c's up to "end", then the config. */
    for (p = text + sizeof(HANDOVER_MAGIC);;) {
        if ((nl = strchr(p, '\n')) == NULL) {
            snprintf(err, errlen, "the state is cut short");
            goto done;
        }
        *nl = '\0';
        if (strcmp(p, "dec") == 0)
            break;
        if (parse_line(m, g, p, err, errlen) != 0)
            goto done;
        p = nl + 1;
    }
    dec = nl + 1;
    if ((conf = strstr(dec, "\nend\nconfig ")) == NULL ||
        sscanf(conf + 12, "%zu", &conflen) != 1 ||
        (p = strchr(conf + 12, '\n')) == NULL ||
        (size_t)(text + len - (p + 1)) != conflen) {
        snprintf(err, errlen, "the state's configuration is cut short");
        goto done;
    }
    conf[5] = '\0'; /* decide.c's text ends with "end\n" */
    if (m->stats == NULL) {
        snprintf(err, errlen, "the state names no stats region");
        goto done;
    }
    if (folio_dec_restore(&m->dec, dec, err, errlen) != 0 ||
        folio_config_parse_text(&g->cfg, p + 1, conflen, "the state", err,
                                errlen) != 0)
        goto done;
    for (i = 0; i < FOLIO_MAX_SLOTS; i++) {
        if (m->procs[i].chan != -1 && !folio_dec_live(&m->dec, i)) {
            close(m->procs[i].chan); /* gone during the exec */
            m->procs[i].chan = -1;
        }
        if (m->procs[i].chan != -1 && folio_proc_watch(m, i) != 0)
            goto done;
    }
    rc = 0;
done:
    folio_free(text);
    return rc;
}
