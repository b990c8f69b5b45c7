/*
 * main.c - foliod: start-up and shutdown.  The master reads the
 * configuration, builds what is shared (listening sockets, data, the stats
 * region), applies the first generation's settings (gen.c), drops its
 * privileges, and hands over to cycle.c, whose loop carries out decide.c's
 * decisions (forking the workers, supervising them) until it stops.  An
 * image started by an upgrade (upgrade.c) takes the running state over
 * instead.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
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
#include "src/prof/prof.h"
#include "src/title.h"

static void
version(void)
{
    printf("foliod (%s) %s\nlibevent %s, msgpack-c %s, %s\n", PACKAGE_NAME,
           PACKAGE_VERSION, event_get_version(), msgpack_version(),
           mdb_version(NULL, NULL, NULL));
}

static void
write_pid_file(struct folio_master *m, const char *path)
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
    if (folio_announce_write_file(path, text) != 0)
        folio_fatal("cannot write pid file %s", path);
    snprintf(m->pid_file, sizeof(m->pid_file), "%s", path);
}

/*
 * Detach: the parent stays until the daemon is ready (exit 0) or has
 * failed (its exit status, foliod(8) EXIT STATUS), so `foliod &&
 * next-step` works.
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
        int st;

        close(p[1]);
        if (read(p[0], &c, 1) == 1)
            exit(FOLIO_EXIT_OK);
        exit(waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st)
                                                           : FOLIO_EXIT_FATAL);
    }
    close(p[0]);
    m->ready_pipe = p[1];
    m->tell_mainpid = 1;
    if (setsid() == -1)
        folio_fatal("setsid");
    if ((devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) != -1) {
        dup2(devnull, STDIN_FILENO);
        dup2(devnull, STDOUT_FILENO);
        close(devnull);
    }
}

/* The directory a file option's path is in exists: 0 or FOLIO_ECONFIG. */
static int
check_file_dir(const struct folio_config *cfg, const char *option,
               const char *path, char *err, size_t errlen)
{
    char dir[4096], name[300];
    const char *slash;

    if (path == NULL || (slash = strrchr(path, '/')) == NULL || slash == path)
        return 0;
    snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    if (access(dir, F_OK) == 0)
        return 0;
    snprintf(err, errlen, "%s %.300s: the directory %.300s: %s",
             folio_config_name(cfg, option, name, sizeof(name)), path, dir,
             strerror(errno));
    return FOLIO_ECONFIG;
}

/*
 * What foliod was told, checked before anything is bound or created: the
 * addresses, the paths it reads and the directories of those it writes.
 * A failure is a configuration error (exit 1; foliod(8) EXIT STATUS) and
 * leaves nothing behind.
 */
static int
preflight(const struct folio_config *cfg, char *err, size_t errlen)
{
    int rc;

    if ((rc = folio_listen_check(cfg, err, errlen)) != 0 ||
        (rc = folio_metrics_check(cfg, err, errlen)) != 0 ||
        (rc = folio_data_check(cfg, err, errlen)) != 0 ||
        (rc = check_file_dir(cfg, "pid-file", cfg->pid_file, err, errlen)) !=
            0 ||
        (rc = check_file_dir(cfg, "log-file", cfg->log_file, err, errlen)) !=
            0 ||
        (rc = check_file_dir(cfg, "ready-file", cfg->ready_file, err,
                             errlen)) != 0)
        return rc;
    return 0;
}

static int
check_config(const struct folio_config *cfg)
{
    struct folio_worker_data data;
    struct folio_priv priv;
    char err[1024];

    if (folio_priv_init(&priv, cfg->user, 1, err, sizeof(err)) != 0 ||
        preflight(cfg, err, sizeof(err)) != 0) {
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
    /* Asked by a running master before it upgrades to this binary. */
    if (getenv("FOLIO_UPGRADE_CHECK") != NULL) {
        char token[96];

        printf("foliod: upgrade %s\n",
               folio_upgrade_token(token, sizeof(token)));
    }
    return FOLIO_EXIT_OK;
}

/*
 * A per-user data directory is the user's alone (one under /tmp could
 * have been made by someone else first), or the start stops (exit 2).
 */
static void
user_dir_check(const struct folio_config *cfg)
{
    struct stat st;

    if (stat(cfg->data_dir, &st) != 0)
        folio_fatal("the data directory %s", cfg->data_dir);
    if (st.st_uid != geteuid() || (st.st_mode & 022) != 0)
        folio_fatalx("the data directory %s is not yours alone (owner uid "
                     "%ld, mode %03o): set --data-dir DIR",
                     cfg->data_dir, (long)st.st_uid,
                     (unsigned)(st.st_mode & 0777));
}

/*
 * A start that fails once something is bound: said as a fatal error is,
 * and nothing left behind (the Unix sockets' files, the pid file); exit 2.
 */
static void __attribute__((format(printf, 2, 3), noreturn))
start_failed(struct folio_master *m, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    folio_log_vwrite(FOLIO_LOG_CRIT, 0, fmt, ap);
    va_end(ap);
    folio_gen_free(m->cur, NULL);
    m->cur = NULL;
    if (m->pid_file[0] != '\0')
        unlink(m->pid_file);
    exit(FOLIO_EXIT_FATAL);
}

static void
cleanup(struct folio_master *m)
{
    size_t i;

    folio_proc_release(m);
    folio_gen_free(m->next, NULL);
    folio_gen_free(m->cur, NULL);
    m->cur = m->next = NULL;
    for (i = 0; i < sizeof(m->ev_sig) / sizeof(m->ev_sig[0]); i++)
        if (m->ev_sig[i] != NULL)
            event_free(m->ev_sig[i]);
    for (i = 0; i < FOLIO_T_MAX; i++)
        if (m->timers[i].ev != NULL)
            event_free(m->timers[i].ev);
    if (m->ring.wake != NULL)
        event_free(m->ring.wake);
    folio_metrics_stop(m);
    if (m->ev_stats_log != NULL)
        event_free(m->ev_stats_log);
    folio_stats_destroy(m->stats);
    if (m->pid_file[0] != '\0')
        unlink(m->pid_file);
    if (m->ready_fd != -1)
        close(m->ready_fd);
    folio_activate_close();
    event_base_free(m->base);
}

/*
 * The image an upgrade executed: the old one's state is taken over
 * (upgrade.c), its generation's data mapped again for respawns, and the
 * loop resumes, starting the next generation from this binary.
 */
static int
resume(struct folio_master *m)
{
    char err[1024];
    int rc;

    if ((m->base = event_base_new()) == NULL)
        folio_fatalx("event_base_new failed");
    if (folio_upgrade_resume(m, err, sizeof(err)) != 0)
        /* The workers see us go and drain: a restart starts clean. */
        folio_fatalx("upgrade: cannot take over the running server: %s", err);
    if (folio_gen_apply(m, NULL, err, sizeof(err)) != 0)
        folio_log_errorx("%s", err);
    folio_title_set("foliod: master (generation %llu)",
                    (unsigned long long)m->cur->id);
    if (folio_data_load(&m->cur->cfg, &m->cur->data, err, sizeof(err)) != 0)
        folio_log_errorx("upgrade: generation %llu's data: %s (its workers "
                         "serve on; one that dies cannot be replaced until "
                         "a reload)",
                         (unsigned long long)m->cur->id, err);
    folio_upgrade_init(m);
    folio_worker_preload();
    folio_log_notice("upgraded: foliod %s now runs as the master (pid %ld), "
                     "with the %d workers of generation %llu",
                     PACKAGE_VERSION, (long)getpid(),
                     m->cur->nworkers, (unsigned long long)m->cur->id);
    rc = folio_cycle_run(m, 1);
    folio_log_notice("stopped");
    cleanup(m);
    return rc;
}

int
main(int argc, char *argv[])
{
    static struct folio_master master;
    struct folio_master *m = &master;
    struct folio_config probe;
    char err[1024], logpath[4200];
    int action, i, rc;

    /* First: the copy of argv everything uses; argv's memory is the title. */
    m->argv = folio_title_init(argc, argv);
    m->argc = argc;
    m->ready_pipe = -1;
    m->ready_fd = -1;
    m->metrics_fd = -1;
    m->adopter = -1;
    folio_dec_init(&m->dec);
    for (i = 0; i < FOLIO_MAX_SLOTS; i++) {
        m->procs[i].m = m;
        m->procs[i].slot = i;
        m->procs[i].chan = -1;
    }
    folio_log_set_role('M', -1);
    /* Heap samples from the first allocation on (the rate: see below). */
    folio_prof_init(FOLIO_PROF_HEAP_RATE);
    folio_alloc_route_libevent();
    folio_log_libevent();
    if (folio_upgrade_pending())
        return resume(m);

    if (folio_config_load(&probe, m->argc, m->argv, &action, err,
                          sizeof(err)) != 0) {
        fprintf(stderr, "foliod: %s\n", err);
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
    /* Until the first generation serves: for what start-up logs. */
    folio_gen_apply_process(&probe);
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
    folio_title_set("foliod: master (starting)");

    /* Whom to become, if anyone (priv.c); then all we were told. */
    if (folio_priv_init(&m->priv, probe.user, 0, err, sizeof(err)) != 0 ||
        preflight(&probe, err, sizeof(err)) != 0) {
        fprintf(stderr, "foliod: %s\n", err);
        folio_config_free(&probe);
        return FOLIO_EXIT_FAILURE;
    }

    if (folio_priv_mkdirs(&m->priv, probe.data_dir,
                          probe.per_user ? 0700 : 0750) != 0)
        folio_fatal("cannot create the data directory %s (%s; set %s)",
                    probe.data_dir,
                    folio_config_name(&probe, "data-dir", err, sizeof(err)),
                    folio_config_hint("data-dir", logpath, sizeof(logpath)));
    if (probe.per_user)
        user_dir_check(&probe);
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
    /* Detached, until ready: why it cannot start shows on the terminal. */
    if (!probe.foreground)
        folio_log_mirror(STDERR_FILENO);
    if (geteuid() == 0 && !m->priv.active)
        folio_log_warnx("serving as root: a bug in foliod would be a bug "
                        "with every privilege (set --user USER to drop "
                        "privileges once the sockets are bound)");
    if (probe.per_user)
        folio_log_notice("not root: per-user paths: data directory %s "
                         "(--data-dir DIR), admin socket %s "
                         "(--admin-socket PATH|off)",
                         probe.data_dir,
                         probe.admin_socket != NULL ? probe.admin_socket
                                                    : "off");
    /* Sockets from systemd: LISTEN_PID names us, not the daemon child. */
    if (folio_activate_init(err, sizeof(err)) != 0)
        folio_fatalx("%s", err);
    if (!probe.foreground)
        daemonize(m);
    if (probe.pid_file != NULL)
        write_pid_file(m, probe.pid_file);

    /* As root: the sockets (admin socket group-owned by the user). */
    if ((m->base = event_base_new()) == NULL)
        folio_fatalx("event_base_new failed");
    if ((m->cur = folio_gen_open(m, err, sizeof(err))) == NULL)
        folio_fatalx("%s", err); /* what it bound is closed again */
    folio_activate_report();
    if ((rc = folio_stats_create(FOLIO_MAX_SLOTS, &m->stats)) != 0)
        start_failed(m, "cannot create the stats region: %s",
                     folio_strerror(rc));
    /* As root too: the metrics listener's port may be privileged. */
    if (folio_gen_apply(m, NULL, err, sizeof(err)) != 0)
        start_failed(m, "%s", err);
    folio_announce_open(m, probe.ready_file);

    /* For good: the user loads the data and runs the workers. */
    if (folio_priv_drop(&m->priv, err, sizeof(err)) != 0)
        start_failed(m, "%s", err);
    if (m->priv.dropped && access(probe.data_dir, W_OK | X_OK) != 0)
        start_failed(m, "the data directory %s is not writable by user %s: "
                        "%s (give it to the user, or set --data-dir DIR)",
                     probe.data_dir, m->priv.name, strerror(errno));
    folio_config_free(&probe);
    if (folio_gen_load(m, m->cur, err, sizeof(err)) != 0)
        start_failed(m, "%s", err);
    /* Said once the data is in: a start that fails does not listen. */
    for (i = 0; i < m->cur->nlisteners; i++)
        folio_log_notice("listening on %s%s", m->cur->listeners[i].name,
                         m->cur->listeners[i].admin  ? " (admin)"
                         : m->cur->listeners[i].http ? " (http)"
                                                     : "");
    folio_stat_set(&folio_stats_header_of(m->stats)->sh_start_ms,
                   folio_unix_ms());
    folio_upgrade_init(m);
    folio_worker_preload();
    folio_log_notice("foliod %s starting %d worker%s", PACKAGE_VERSION,
                     m->cur->nworkers, m->cur->nworkers == 1 ? "" : "s");
    rc = folio_cycle_run(m, 0);
    folio_log_notice("stopped");
    cleanup(m);
    return rc;
}
