/*
 * pg_util.c - a real PostgreSQL cluster for the tests (see pg_util.h).
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "tests/e2e_util.h"
#include "tests/pg_util.h"

#define START_MS 30000

static struct pg_cluster *live;

static int
has_server(const char *dir)
{
    char p[512];

    snprintf(p, sizeof(p), "%s/postgres", dir);
    if (access(p, X_OK) != 0)
        return 0;
    snprintf(p, sizeof(p), "%s/initdb", dir);
    if (access(p, X_OK) != 0)
        return 0;
    snprintf(p, sizeof(p), "%s/pg_ctl", dir);
    return access(p, X_OK) == 0;
}

const char *
pg_bindir(void)
{
    static char found[512];
    const char *env = getenv("FOLIO_PG_BINDIR"), *path = getenv("PATH");
    char dir[512];
    struct dirent *de;
    int best = -1, v;
    DIR *d;

    if (found[0] != '\0')
        return found;
    if (env != NULL && *env != '\0' && has_server(env)) {
        snprintf(found, sizeof(found), "%s", env);
        return found;
    }
    while (path != NULL && *path != '\0') {
        size_t n = strcspn(path, ":");

        snprintf(dir, sizeof(dir), "%.*s", (int)n, path);
        if (n > 0 && has_server(dir)) {
            snprintf(found, sizeof(found), "%s", dir);
            return found;
        }
        path += n + (path[n] == ':');
    }
    /* Debian: /usr/lib/postgresql/15/bin, not on PATH */
    if ((d = opendir("/usr/lib/postgresql")) != NULL) {
        while ((de = readdir(d)) != NULL) {
            v = atoi(de->d_name);
            snprintf(dir, sizeof(dir), "/usr/lib/postgresql/%s/bin",
                     de->d_name);
            if (v > best && has_server(dir)) {
                best = v;
                snprintf(found, sizeof(found), "%s", dir);
            }
        }
        closedir(d);
    }
    return found[0] != '\0' ? found : NULL;
}

const char *
pg_require(void)
{
    return e2e_require_at("postgresql", pg_bindir(),
                          "no initdb, postgres and pg_ctl in "
                          "$FOLIO_PG_BINDIR, on PATH or in "
                          "/usr/lib/postgresql/*/bin: apt-get install "
                          "postgresql");
}

/* Runs at exit in the process that started the cluster. */
static void
cleanup(void)
{
    if (live != NULL && live->owner == getpid())
        pg_destroy(live);
}

/*
 * Run argv (as the cluster's user), output appended to c->log.  wait:
 * return its exit status (-1 if it did not exit); else its pid, which dies
 * with us.
 */
static pid_t
run(struct pg_cluster *c, const char *const *argv, int wait)
{
    pid_t pid;
    int fd, st;

    fflush(NULL);
    if ((pid = fork()) == -1) {
        perror("fork");
        return -1;
    }
    if (pid == 0) {
        if ((fd = open(c->log, O_WRONLY | O_CREAT | O_APPEND, 0666)) >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
            close(fd);
        }
        if (c->drop && (setgroups(0, NULL) != 0 || setgid(c->gid) != 0 ||
                        setuid(c->uid) != 0)) {
            perror("dropping to the cluster's user");
            _exit(126);
        }
        /* After setuid, which clears it: the server dies with the test. */
        if (!wait)
            prctl(PR_SET_PDEATHSIG, SIGQUIT);
        if (chdir(c->dir) != 0)
            _exit(126);
        execv(argv[0], (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    if (!wait)
        return pid;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

static void
print_log(const struct pg_cluster *c)
{
    char line[1024];
    FILE *f = fopen(c->log, "r");

    if (f == NULL)
        return;
    fprintf(stderr, "---- %s ----\n", c->log);
    while (fgets(line, sizeof(line), f) != NULL)
        fputs(line, stderr);
    fclose(f);
}

/* Wait until the server accepts connections (or died). */
static int
wait_up(struct pg_cluster *c)
{
    char dsn[512];
    uint64_t deadline = e2e_now_ms() + START_MS;
    int st;

    pg_dsn(c, "postgres", dsn, sizeof(dsn));
    do {
        if (PQping(dsn) == PQPING_OK)
            return 0;
        if (waitpid(c->pid, &st, WNOHANG) == c->pid) {
            fprintf(stderr, "postgres exited while starting (status 0x%x)\n",
                    st);
            c->pid = 0;
            print_log(c);
            return -1;
        }
    } while (e2e_wait_more(deadline));
    fprintf(stderr, "postgres did not accept connections in %d ms\n", START_MS);
    print_log(c);
    return -1;
}

static int
spawn_server(struct pg_cluster *c)
{
    char postgres[600];
    const char *argv[16];
    int n = 0;

    snprintf(postgres, sizeof(postgres), "%s/postgres", c->bin);
    argv[n++] = postgres;
    argv[n++] = "-D";
    argv[n++] = c->data;
    argv[n++] = "-k";
    argv[n++] = c->sock;
    argv[n++] = "-c";
    argv[n++] = "listen_addresses=";
    argv[n] = NULL;
    if ((c->pid = run(c, argv, 0)) <= 0) {
        c->pid = 0;
        return -1;
    }
    return wait_up(c);
}

int
pg_start(struct pg_cluster *c, const char *conf)
{
    static int registered;
    char initdb[600], path[400];
    const char *argv[16];
    struct passwd *pw;
    FILE *f;
    int n = 0;

    memset(c, 0, sizeof(*c));
    if (pg_bindir() == NULL) {
        fprintf(stderr, "no PostgreSQL binaries\n");
        return -1;
    }
    snprintf(c->bin, sizeof(c->bin), "%s", pg_bindir());
    snprintf(c->dir, sizeof(c->dir), "%s/folio-pg.XXXXXX",
             getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(c->dir) == NULL) {
        perror("mkdtemp");
        return -1;
    }
    c->owner = getpid();
    live = c;
    if (!registered) {
        atexit(cleanup);
        registered = 1;
    }
    snprintf(c->data, sizeof(c->data), "%s/data", c->dir);
    snprintf(c->sock, sizeof(c->sock), "%s/sock", c->dir);
    snprintf(c->log, sizeof(c->log), "%s/postgres.log", c->dir);
    if (mkdir(c->data, 0700) != 0 || mkdir(c->sock, 0755) != 0) {
        perror("mkdir");
        goto fail;
    }
    if (geteuid() == 0) {
        /* PostgreSQL will not run as root. */
        if ((pw = getpwnam("nobody")) == NULL) {
            fprintf(stderr, "running as root, and no user `nobody' to run "
                            "PostgreSQL as\n");
            goto fail;
        }
        c->uid = pw->pw_uid;
        c->gid = pw->pw_gid;
        c->drop = 1;
        if (chmod(c->dir, 0755) != 0 || chown(c->data, c->uid, c->gid) != 0 ||
            chown(c->sock, c->uid, c->gid) != 0) {
            perror("handing the cluster to nobody");
            goto fail;
        }
        /* the log, written by them */
        if ((f = fopen(c->log, "a")) != NULL)
            fclose(f);
        if (chown(c->log, c->uid, c->gid) != 0)
            goto fail;
    }
    snprintf(initdb, sizeof(initdb), "%s/initdb", c->bin);
    argv[n++] = initdb;
    argv[n++] = "-D";
    argv[n++] = c->data;
    argv[n++] = "-U";
    argv[n++] = "folio";
    argv[n++] = "--auth=trust";
    argv[n++] = "-E";
    argv[n++] = "UTF8";
    argv[n++] = "--locale=C";
    argv[n++] = "-N"; /* no fsync of the new cluster: it is thrown away */
    argv[n] = NULL;
    if (run(c, argv, 1) != 0) {
        fprintf(stderr, "initdb failed\n");
        print_log(c);
        goto fail;
    }
    snprintf(path, sizeof(path), "%s/postgresql.conf", c->data);
    if ((f = fopen(path, "a")) == NULL) {
        perror(path);
        goto fail;
    }
    /*
     * Small and quick: the data is thrown away, but commits still go
     * through the WAL (fsync off: an immediate stop kills the server,
     * not the kernel, so written WAL survives it).
     */
    fprintf(f,
            "\n# the tests\nfsync = off\nfull_page_writes = off\n"
            "shared_buffers = 16MB\nmax_connections = 100\n"
            "unix_socket_permissions = 0777\n%s\n",
            conf != NULL ? conf : "");
    fclose(f);
    if (spawn_server(c) != 0)
        goto fail;
    return 0;
fail:
    pg_destroy(c);
    return -1;
}

int
pg_stop_immediate(struct pg_cluster *c)
{
    char pg_ctl[600];
    const char *argv[] = {pg_ctl,      "-D", c->data, "-m",
                          "immediate", "-w", "stop",  NULL};
    int st;

    snprintf(pg_ctl, sizeof(pg_ctl), "%s/pg_ctl", c->bin);
    if (run(c, argv, 1) != 0) {
        fprintf(stderr, "pg_ctl stop -m immediate failed\n");
        print_log(c);
        return -1;
    }
    if (c->pid > 0 && waitpid(c->pid, &st, 0) == c->pid)
        c->pid = 0;
    return c->pid == 0 ? 0 : -1;
}

int
pg_kill9(struct pg_cluster *c)
{
    uint64_t deadline = e2e_now_ms() + START_MS;
    pid_t kids[256];
    char path[64], buf[4096], *p, *end;
    int fd, n = 0, i, st, left;
    ssize_t len;

    if (c->pid <= 0)
        return -1;
    /*
     * Its children (each in a session of its own: setsid), listed before
     * the postmaster goes and they are handed to init.
     */
    snprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", (long)c->pid,
             (long)c->pid);
    if ((fd = open(path, O_RDONLY)) >= 0) {
        if ((len = read(fd, buf, sizeof(buf) - 1)) > 0) {
            buf[len] = '\0';
            for (p = buf; n < 256; p = end) {
                long v = strtol(p, &end, 10);

                if (end == p)
                    break;
                kids[n++] = (pid_t)v;
            }
        }
        close(fd);
    }
    if (kill(c->pid, SIGKILL) != 0) {
        perror("kill -9 postgres");
        return -1;
    }
    for (i = 0; i < n; i++)
        kill(kids[i], SIGKILL);
    /* not our child (started before a fork): gone is gone */
    if (waitpid(c->pid, &st, 0) != c->pid && errno != ECHILD) {
        perror("pg_kill9: waitpid");
        return -1;
    }
    c->pid = 0;
    /* all of them, or the restart finds its shared memory in use */
    do {
        for (i = 0, left = 0; i < n; i++)
            left += !e2e_pid_gone(kids[i]);
    } while (left > 0 && e2e_wait_more(deadline));
    if (left > 0)
        fprintf(stderr, "pg_kill9: %d postgres processes still there\n", left);
    return left > 0 ? -1 : 0;
}

int
pg_restart(struct pg_cluster *c)
{
    if (c->pid > 0) {
        fprintf(stderr, "pg_restart: the server is running\n");
        return -1;
    }
    return spawn_server(c);
}

void
pg_destroy(struct pg_cluster *c)
{
    int st;

    if (c->pid > 0) {
        kill(c->pid, SIGQUIT); /* immediate shutdown */
        if (waitpid(c->pid, &st, 0) != c->pid)
            kill(c->pid, SIGKILL);
        c->pid = 0;
    }
    e2e_rm_rf(c->dir);
    c->dir[0] = '\0';
    if (live == c)
        live = NULL;
}

void
pg_dsn(const struct pg_cluster *c, const char *db, char *buf, size_t len)
{
    snprintf(buf, len, "host=%s port=5432 user=folio dbname=%s", c->sock, db);
}

int
pg_query(const struct pg_cluster *c, const char *db, const char *sql, char *out,
         size_t len)
{
    char dsn[512];
    PGresult *res;
    PGconn *conn;
    int n = -1;

    if (out != NULL && len > 0)
        out[0] = '\0';
    pg_dsn(c, db, dsn, sizeof(dsn));
    conn = PQconnectdb(dsn);
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "pg_query: %s", PQerrorMessage(conn));
        PQfinish(conn);
        return -1;
    }
    res = PQexec(conn, sql);
    switch (PQresultStatus(res)) {
    case PGRES_TUPLES_OK:
        n = PQntuples(res);
        if (n > 0 && PQnfields(res) > 0 && out != NULL && len > 0)
            snprintf(out, len, "%s", PQgetvalue(res, 0, 0));
        break;
    case PGRES_COMMAND_OK:
        n = 0;
        break;
    default:
        fprintf(stderr, "pg_query: %s: %s", sql, PQresultErrorMessage(res));
    }
    PQclear(res);
    PQfinish(conn);
    return n;
}

int
pg_new_db(struct pg_cluster *c, char *name, size_t len)
{
    char sql[128];

    snprintf(name, len, "t%ld_%u", (long)getpid(), ++c->ndb);
    snprintf(sql, sizeof(sql), "CREATE DATABASE %s", name);
    return pg_query(c, "postgres", sql, NULL, 0) < 0 ? -1 : 0;
}

int
pg_new_db_conf(struct pg_cluster *c, char *name, size_t namelen,
               const char *conf, char *buf, size_t len)
{
    char dsn[512];

    if (pg_new_db(c, name, namelen) != 0)
        return -1;
    pg_dsn(c, name, dsn, sizeof(dsn));
    snprintf(buf, len, "comments_backend = postgres\ncomments_dsn = \"%s\"\n%s",
             dsn, conf != NULL ? conf : "");
    return 0;
}
