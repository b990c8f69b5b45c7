/*
 * pg_util.h - a real PostgreSQL for the tests that need one: a cluster
 * made by initdb in a temporary directory and served on a Unix socket
 * there (no TCP port), started and stopped by the test.
 *
 * The binaries are looked for in $FOLIO_PG_BINDIR, on PATH, then in
 * /usr/lib/postgresql/N/bin (Debian's place, not on PATH), newest first.
 * PostgreSQL refuses to run as root: a test run as root (CI) runs initdb,
 * postgres and pg_ctl as `nobody'.  The server dies with the process that
 * started it (a parent-death signal, and an atexit handler that also runs
 * when a Check assertion fails); forked test children leave it alone.
 */
#ifndef FOLIO_PG_UTIL_H
#define FOLIO_PG_UTIL_H

#include <sys/types.h>

#include <stddef.h>

struct pg_cluster {
    char dir[256];  /* temporary directory: data/, sock/, postgres.log */
    char data[300];
    char sock[300];
    char log[300];
    char bin[512];  /* where initdb, postgres and pg_ctl are */
    pid_t pid;      /* the postmaster, or 0 */
    pid_t owner;    /* the process that started it */
    uid_t uid;      /* who runs the server (nobody, when we are root) */
    gid_t gid;
    int drop;       /* run it as uid/gid */
    unsigned ndb;   /* databases made by pg_new_db */
};

/*
 * pg_bindir - the directory of the PostgreSQL server binaries, or NULL
 * (with the reason on stderr) when there are none.
 */
const char *pg_bindir(void);

/*
 * pg_require - in main(): the PostgreSQL server binaries' directory
 * (pg_bindir), required as e2e_require does: without them the suite is
 * skipped (exit 77), or fails when CI is set.
 */
const char *pg_require(void);

/*
 * pg_start - initdb a new cluster (`conf`: extra postgresql.conf lines,
 * may be NULL) and start it; waits until it accepts connections.
 * Returns 0, or -1 with the reason (and the server's log) on stderr.
 */
int pg_start(struct pg_cluster *c, const char *conf);

/*
 * pg_stop_immediate - `pg_ctl stop -m immediate` (every server process
 * killed, no checkpoint: a crash for the data), and wait for the
 * postmaster to be gone.  0 or -1.
 */
int pg_stop_immediate(struct pg_cluster *c);

/*
 * pg_kill9 - kill -9 the postmaster and every process it started: a
 * crash, and wait until they are all gone.  0 or -1.
 */
int pg_kill9(struct pg_cluster *c);

/* pg_restart - start the stopped cluster again (crash recovery). 0 or -1. */
int pg_restart(struct pg_cluster *c);

/* pg_destroy - stop the server and remove the directory. */
void pg_destroy(struct pg_cluster *c);

/* pg_dsn - a libpq connection string for database `db`. */
void pg_dsn(const struct pg_cluster *c, const char *db, char *buf,
            size_t len);

/*
 * pg_new_db - CREATE DATABASE with a name not used before; the name into
 * name[len].  0 or -1 (reason on stderr).
 */
int pg_new_db(struct pg_cluster *c, char *name, size_t len);

/*
 * pg_new_db_conf - pg_new_db, then foliod.conf text in buf[len]: the
 * comments on that database (comments_backend, comments_dsn), followed by
 * `conf` (may be NULL).  0 or -1 (reason on stderr).
 */
int pg_new_db_conf(struct pg_cluster *c, char *name, size_t namelen,
                   const char *conf, char *buf, size_t len);

/*
 * pg_query - run `sql` in `db`; the first column of the first row (if
 * any) into out[len] ("" for none or NULL).  Returns the number of rows,
 * or -1 with the error on stderr.
 */
int pg_query(const struct pg_cluster *c, const char *db, const char *sql,
             char *out, size_t len);

#endif
