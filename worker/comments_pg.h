/*
 * comments_pg.h - the PostgreSQL backend of the comments service
 * (comments_backend = postgres): what the master checks before it forks.
 * The backend itself is folio_comments_pg (comments_backend.h).
 */
#ifndef FOLIO_COMMENTS_PG_H
#define FOLIO_COMMENTS_PG_H

#include <stddef.h>

/* The schema version this foliod creates and serves. */
#define FOLIO_COMMENTS_PG_SCHEMA 3

/*
 * folio_comments_pg_dsn_check - whether `dsn` (may be NULL: libpq's
 * defaults) is a connection string libpq accepts.  Says nothing of
 * whether the database answers.  Never copies the string (it may hold a
 * password) into `err`.  Returns 0, or FOLIO_ECONFIG with a message.
 */
int folio_comments_pg_dsn_check(const char *dsn, char *err, size_t errlen);

/*
 * folio_comments_pg_probe - connect to `dsn` (blocking, at most
 * timeout_s seconds) and describe what answers: server, database, user,
 * schema version, synchronous_commit.  For foliod --check-config only: it
 * blocks.  Returns 0 with the description in `msg`; FOLIO_ECONFIG when
 * the server answers but refuses (authentication, no such database) or
 * the user lacks the rights the workers need (CREATE in its schema, and
 * on the tables once they exist): the configuration is wrong; -1 when
 * nothing answers (the workers will keep trying).  The reason in `msg`.
 */
int folio_comments_pg_probe(const char *dsn, int timeout_s, char *msg,
                            size_t len);

#endif
