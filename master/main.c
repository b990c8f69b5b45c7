/*
 * main.c - foliod: start-up, the master's loop, shutdown.
 * The master reads the configuration, builds what is shared (listening
 * sockets, data, the stats region), forks the workers and then only
 * supervises: signals, reaping, reloads (see proc.c, reload.c, signal.c).
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <lmdb.h>
#include <msgpack.h>

#include "master/master_int.h"
#include "src/alloc.h"
#include "src/clock.h"
#include "src/err.h"
#include "src/log.h"

struct folio_master *folio_master;

static char pid_file[4096];

uint64_t
folio_master_now_ms(void)
{
    return folio_mono_ms();
}

static void
version(void)
{
    printf("foliod (%s) %s\nlibevent %s, msgpack-c %s, %s\n", PACKAGE_NAME,
           PACKAGE_VERSION, event_get_version(), msgpack_version(),
           mdb_version(NULL, NULL, NULL));
}

/* Write `text` to `path` atomically: a temporary name, then rename. */
static int
write_file_atomic(const char *path, const char *text)
{
    char tmp[4200];
    size_t len = strlen(text);
    int fd, ok;

    snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) ==
        -1)
        return -1;
    ok = write(fd, text, len) == (ssize_t)len;
    if (close(fd) != 0 || !ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

static void
write_pid_file(const char *path)
{
    char text[32], old[32];
    ssize_t n;
    long pid;
    int fd;

    /* Refuse to run beside a live foliod that owns the file. */
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) != -1) {
        n = read(fd, old, sizeof(old) - 1);
        close(fd);
        if (n > 0) {
            old[n] = '\0';
            pid = strtol(old, NULL, 10);
            if (pid > 0 && pid != (long)getpid() &&
                (kill((pid_t)pid, 0) == 0 || errno == EPERM))
                folio_fatalx("pid file %s: foliod is already running as pid "
                             "%ld",
                             path, pid);
        }
    }
    snprintf(text, sizeof(text), "%ld\n", (long)getpid());
    if (write_file_atomic(path, text) != 0)
        folio_fatal("cannot write pid file %s", path);
    snprintf(pid_file, sizeof(pid_file), "%s", path);
}

static void
write_ready_file(struct folio_master *m)
{
    const struct folio_gen *g = m->cur;
    char text[4096];
    size_t n = 0;
    int i;

    n += (size_t)snprintf(text + n, sizeof(text) - n,
                          "pid %ld\ngeneration %llu\nworkers %d\n",
                          (long)getpid(), (unsigned long long)g->id,
                          g->nworkers);
    for (i = 0; i < g->nlisteners && n < sizeof(text); i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "%s %s\n",
                              g->listeners[i].admin ? "admin" : "listen",
                              g->listeners[i].name);
    if (m->metrics_name[0] != '\0' && n < sizeof(text))
        snprintf(text + n, sizeof(text) - n, "metrics %s\n", m->metrics_name);
    if (write_file_atomic(g->cfg.ready_file, text) != 0)
        folio_log_error("cannot write ready file %s", g->cfg.ready_file);
}

void
folio_master_ready(struct folio_master *m)
{
    if (m->ready_reported)
        return;
    m->ready_reported = 1;
    if (m->cur->id == 1)
        folio_log_notice("ready");
    /* A daemon's master is not the process systemd started: say who. */
    if (m->ready_pipe != -1)
        folio_notify("READY=1\nMAINPID=%ld\nSTATUS=serving generation %llu "
                     "with %d workers",
                     (long)getpid(), (unsigned long long)m->cur->id,
                     m->cur->nworkers);
    else
        folio_notify("READY=1\nSTATUS=serving generation %llu with %d "
                     "workers",
                     (unsigned long long)m->cur->id, m->cur->nworkers);
    if (m->cur->cfg.ready_file != NULL)
        write_ready_file(m);
    if (m->ready_pipe != -1) {
        /* Daemon: the parent waiting in the terminal may exit 0 now. */
        int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

        if (write(m->ready_pipe, "R", 1) != 1)
            folio_log_warn("telling the parent we are ready");
        close(m->ready_pipe);
        m->ready_pipe = -1;
        if (devnull != -1) {
            if (folio_log_fd() != STDERR_FILENO)
                dup2(devnull, STDERR_FILENO);
            close(devnull);
        }
    }
}

void
folio_master_check_done(struct folio_master *m)
{
    int i;

    if (!m->stopping)
        return;
    for (i = 0; i < FOLIO_MAX_SLOTS; i++)
        if (m->procs[i].pid != 0)
            return;
    event_base_loopbreak(m->base);
}

/*
 * Detach: the parent stays until the daemon is ready (exit 0) or has
 * failed (exit 1), so `foliod && next-step` works.
 */
static void
daemonize(struct folio_master *m)
{
    int p[2], devnull;
    char c;
    pid_t pid;

    if (pipe2(p, O_CLOEXEC) == -1)
        folio_fatal("pipe2");
    if ((pid = fork()) == -1)
        folio_fatal("fork");
    if (pid > 0) {
        close(p[1]);
        exit(read(p[0], &c, 1) == 1 ? FOLIO_EXIT_OK : FOLIO_EXIT_FAILURE);
    }
    close(p[0]);
    m->ready_pipe = p[1];
    if (setsid() == -1)
        folio_fatal("setsid");
    if ((devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) != -1) {
        dup2(devnull, STDIN_FILENO);
        dup2(devnull, STDOUT_FILENO);
        close(devnull);
    }
}

static int
check_config(const struct folio_config *cfg)
{
    struct folio_worker_data data;
    struct folio_priv priv;
    struct folio_addr a;
    char err[1024];
    int i;

    for (i = 0; i < cfg->nlisten; i++) {
        if (folio_addr_parse(cfg->listen[i], &a, err, sizeof(err)) != 0) {
            fprintf(stderr, "foliod: listen address %s\n", err);
            return FOLIO_EXIT_FAILURE;
        }
    }
    if (cfg->metrics_listen != NULL &&
        folio_addr_parse(cfg->metrics_listen, &a, err, sizeof(err)) != 0) {
        fprintf(stderr, "foliod: metrics address %s\n", err);
        return FOLIO_EXIT_FAILURE;
    }
    if (folio_priv_init(&priv, cfg->user, 1, err, sizeof(err)) != 0) {
        fprintf(stderr, "foliod: %s\n", err);
        return FOLIO_EXIT_FAILURE;
    }
    if (folio_data_load(cfg, &data, err, sizeof(err)) != 0) {
        fprintf(stderr, "foliod: %s\n", err);
        return FOLIO_EXIT_FAILURE;
    }
    folio_data_free(&data);
    printf("foliod: configuration %s is OK\n",
           cfg->conf_file != NULL ? cfg->conf_file : "(built-in defaults)");
    return FOLIO_EXIT_OK;
}

static void
cleanup(struct folio_master *m)
{
    size_t i;

    folio_gen_free(m->next, NULL);
    folio_gen_free(m->cur, NULL);
    m->cur = m->next = NULL;
    for (i = 0; i < FOLIO_MAX_WORKERS; i++)
        if (m->idx[i].ev_respawn != NULL)
            event_free(m->idx[i].ev_respawn);
    for (i = 0; i < sizeof(m->ev_sig) / sizeof(m->ev_sig[0]); i++)
        if (m->ev_sig[i] != NULL)
            event_free(m->ev_sig[i]);
    if (m->ev_deadline != NULL)
        event_free(m->ev_deadline);
    folio_metrics_stop(m);
    if (m->ev_stats_log != NULL)
        event_free(m->ev_stats_log);
    folio_stats_destroy(m->stats);
    if (pid_file[0] != '\0')
        unlink(pid_file);
    folio_activate_close();
    event_base_free(m->base);
}

int
main(int argc, char *argv[])
{
    static struct folio_master master;
    struct folio_master *m = &master;
    struct folio_config probe;
    char err[1024], logpath[4200];
    int action, i, rc;

    folio_master = m;
    m->argc = argc;
    m->argv = argv;
    m->ready_pipe = -1;
    m->metrics_fd = -1;
    for (i = 0; i < FOLIO_MAX_SLOTS; i++) {
        m->procs[i].chan = -1;
        m->procs[i].replaces = -1;
    }
    folio_log_set_role('M', -1);
    folio_alloc_route_libevent();
    folio_log_libevent();

    if (folio_config_load(&probe, argc, argv, &action, err, sizeof(err)) !=
        0) {
        fprintf(stderr, "foliod: %s\n(see foliod --help)\n", err);
        folio_config_free(&probe);
        return FOLIO_EXIT_FAILURE;
    }
    if (action == FOLIO_CONFIG_HELP) {
        folio_config_usage(stdout);
        folio_config_free(&probe);
        return FOLIO_EXIT_OK;
    }
    if (action == FOLIO_CONFIG_VERSION) {
        version();
        folio_config_free(&probe);
        return FOLIO_EXIT_OK;
    }
    folio_log_level = probe.log_level;
    if (probe.build_data != NULL) {
        rc = folio_data_build(&probe, probe.build_data, err, sizeof(err));
        if (rc != 0)
            fprintf(stderr, "foliod: --build-data %s: %s\n", probe.build_data,
                    err);
        folio_config_free(&probe);
        return rc == 0 ? FOLIO_EXIT_OK : FOLIO_EXIT_FAILURE;
    }
    if (probe.check_only) {
        rc = check_config(&probe);
        folio_config_free(&probe);
        return rc;
    }

    /* Whom to become, if anyone (priv.c). */
    if (folio_priv_init(&m->priv, probe.user, 0, err, sizeof(err)) != 0) {
        fprintf(stderr, "foliod: %s\n", err);
        folio_config_free(&probe);
        return FOLIO_EXIT_FAILURE;
    }

    if (folio_priv_mkdirs(&m->priv, probe.data_dir, 0750) != 0)
        folio_fatal("cannot create data directory %s", probe.data_dir);
    if (probe.log_file != NULL) {
        if (folio_log_open(probe.log_file) != 0)
            folio_fatalx("cannot open log file %s", probe.log_file);
        folio_priv_own_fd(&m->priv, folio_log_fd(), probe.log_file);
    } else if (!probe.foreground) {
        snprintf(logpath, sizeof(logpath), "%s/foliod.log", probe.data_dir);
        if (folio_log_open(logpath) != 0)
            folio_fatalx("cannot open log file %s", logpath);
        folio_priv_own_fd(&m->priv, folio_log_fd(), logpath);
    }
    if (geteuid() == 0 && !m->priv.active)
        folio_log_warnx("serving as root: a bug in foliod would be a bug "
                        "with every privilege (set --user USER to drop "
                        "privileges once the sockets are bound)");
    /* Sockets from systemd: LISTEN_PID names us, not the daemon child. */
    if (folio_activate_init(err, sizeof(err)) != 0)
        folio_fatalx("%s", err);
    if (!probe.foreground)
        daemonize(m);
    if (probe.pid_file != NULL)
        write_pid_file(probe.pid_file);

    /* As root: the sockets (admin socket group-owned by the user). */
    if ((m->base = event_base_new()) == NULL)
        folio_fatalx("event_base_new failed");
    if ((m->cur = folio_gen_open(m, err, sizeof(err))) == NULL)
        folio_fatalx("%s", err);
    folio_activate_report();
    for (i = 0; i < m->cur->nlisteners; i++)
        folio_log_notice("listening on %s%s", m->cur->listeners[i].name,
                         m->cur->listeners[i].admin ? " (admin)" : "");
    if ((rc = folio_stats_create(FOLIO_MAX_SLOTS, &m->stats)) != 0)
        folio_fatalx("cannot create the stats region: %s",
                     folio_strerror(rc));
    if (folio_metrics_start(m, err, sizeof(err)) != 0)
        folio_fatalx("%s", err);

    /* For good: the user loads the data and runs the workers. */
    if (folio_priv_drop(&m->priv, err, sizeof(err)) != 0)
        folio_fatalx("%s", err);
    if (m->priv.dropped && access(probe.data_dir, W_OK | X_OK) != 0)
        folio_fatal("data directory %s is not writable by user %s",
                    probe.data_dir, m->priv.name);
    folio_config_free(&probe);
    if (folio_gen_load(m, m->cur, err, sizeof(err)) != 0)
        folio_fatalx("%s", err);
    folio_stat_set(&folio_stats_header_of(m->stats)->sh_start_ms,
                   folio_unix_ms());
    folio_stats_publish(m);
    if (folio_stats_log_start(m) != 0)
        folio_fatalx("cannot start the counters log");
    if (folio_signals_init(m) != 0)
        folio_fatalx("cannot set up signal handling");
    folio_log_notice("foliod %s starting %d workers", PACKAGE_VERSION,
                     m->cur->nworkers);
    for (i = 0; i < m->cur->nworkers; i++)
        if (folio_proc_spawn(m, m->cur, i, -1) != 0)
            folio_fatalx("cannot start worker %d", i);

    if (event_base_dispatch(m->base) < 0)
        folio_log_errorx("event loop failed");
    folio_log_notice("stopped");
    cleanup(m);
    return m->exit_code;
}
