/*
 * conf.h - foliod's configuration: command-line options and the
 * configuration file (foliod.conf(5)), from one table of options.
 * Every option has a file key: the long name with '-' written '_'.
 * The command line overrides the file; a list option given on the
 * command line replaces the file's list.
 */
#ifndef FOLIO_CONF_H
#define FOLIO_CONF_H

#include <stdint.h>
#include <stdio.h>

#include "src/defaults.h"

#define FOLIO_MAX_LISTEN 16
/* Every listening socket a generation may have: listen, http_listen, the
 * admin socket. */
#define FOLIO_MAX_SOCKETS (2 * FOLIO_MAX_LISTEN + 1)
#define FOLIO_MAX_WORKERS 128
#define FOLIO_CONFIG_MAX_OPTS 128 /* room for the table's options */

struct folio_config {
    char *conf_file;    /* the file read, or NULL */
    int foreground;
    int check_only;     /* --check-config: validate and exit */
    int per_user;       /* a path is the user's default (folio_default_paths) */
    char *build_data;   /* --build-data DIR: build shipped data and exit */
    char *listen[FOLIO_MAX_LISTEN];
    int nlisten;
    char *http_listen[FOLIO_MAX_LISTEN]; /* the HTTP face; none: off */
    int nhttp_listen;
    char *http_cors_origins; /* "*", origins; NULL: no CORS headers */
    char *admin_socket; /* NULL: off */
    int workers;        /* 0: auto */
    char *corpus;       /* "auto": the installed corpus, if any; NULL: off */
    char *data_dir;
    uint64_t comments_max_size; /* LMDB map ceiling of the comments store */
    int comments_group_commit;  /* one synced commit for concurrent posts */
    int comments_backend;       /* enum folio_comments_backend_kind */
    char *comments_dsn;         /* libpq conninfo (postgres); NULL: libpq's
                                   defaults (PG* variables) */
    uint64_t comments_cache_size; /* postgres: per-worker page cache bytes */
    uint32_t comments_timeout_ms; /* postgres: longest wait for an answer */
    uint32_t comments_key_window_ms; /* idempotency keys are kept so long */
    char *freight_dir;  /* NULL: off; "auto": installed, else the build's */
    char *catalog;      /* NULL: off; "auto": installed, else the build's */
    char *metrics_listen; /* NULL: off */
    uint32_t metrics_max_connections;   /* open HTTP connections at once */
    uint32_t metrics_header_timeout_ms; /* a request's header within; 0: never */
    uint32_t metrics_idle_timeout_ms;   /* no traffic this long: close */
    int log_level;
    char *log_file;     /* NULL: stderr */
    char *pid_file;
    char *user;
    char *ready_file;
    uint64_t max_message_bytes;
    uint32_t max_depth;
    uint32_t max_connections;   /* per worker */
    uint32_t admin_max_connections; /* admin socket, beyond max_connections */
    uint64_t max_output_bytes;  /* per connection: requests wait above */
    uint64_t max_output_hard_bytes; /* per connection: never grows past */
    uint64_t max_output_total;  /* per worker, beyond base buffers; 0: none */
    uint64_t admin_max_output_bytes;      /* the same, admin connections */
    uint64_t admin_max_output_hard_bytes;
    uint32_t send_timeout_ms;   /* replies unmoved this long: close; 0: never */
    uint32_t idle_timeout_ms;   /* 0: never */
    uint32_t request_timeout_ms; /* a message must complete within; 0: never */
    uint32_t shutdown_timeout_ms;
    uint32_t worker_timeout_ms; /* watchdog: a stalled loop; 0: off */
    uint32_t slow_request_ms;   /* log requests slower; 0: off */
    uint32_t busy_poll_us;      /* a worker's poll without sleep; 0: off */
    int poll_yield;             /* sched_yield before a worker's poll */
    uint64_t max_requests_per_worker; /* 0: never recycle */
    uint32_t cubic_threshold_g;
    uint32_t backlog;
    int stats;          /* per-request counters and histograms on */
    uint32_t stats_log_interval_ms; /* a counters line per worker; 0: off */
    int profiling;      /* enum folio_profiling: /debug/pprof/ */
    uint64_t profile_heap_rate; /* bytes between heap samples; 0: none */
    /* Each option (the table's order): 1 if conf_file set it, for messages. */
    unsigned char from_file[FOLIO_CONFIG_MAX_OPTS];
};

/* profiling = on|off|auto: the order of the option's choices. */
enum folio_profiling {
    FOLIO_PROFILING_ON = 0,
    FOLIO_PROFILING_OFF,
    FOLIO_PROFILING_AUTO /* on where metrics_listen is a loopback address */
};

/* comments_backend: the order of the option's "lmdb|postgres". */
enum folio_comments_backend_kind {
    FOLIO_COMMENTS_LMDB = 0,    /* data_dir/comments, this host only */
    FOLIO_COMMENTS_POSTGRES = 1 /* one database for every host */
};

enum folio_config_action {
    FOLIO_CONFIG_RUN = 0,
    FOLIO_CONFIG_HELP,
    FOLIO_CONFIG_VERSION
};

/* folio_config_init - every option at its default. */
void folio_config_init(struct folio_config *cfg);

/* folio_config_free - release the strings; cfg may be half-built. */
void folio_config_free(struct folio_config *cfg);

/*
 * folio_config_load - defaults, then the file (-c FILE, or the default
 * file when it exists), then the command line.  On success returns 0 and
 * sets *action.  On error returns FOLIO_ECONFIG with a message in `err`.
 * Uses getopt_long: not reentrant.
 */
int folio_config_load(struct folio_config *cfg, int argc, char *const argv[],
                      int *action, char *err, size_t errlen);

/*
 * folio_config_parse_file - apply the settings of `path` to cfg.
 * Returns 0 or FOLIO_ECONFIG with "FILE:LINE: message" in `err`.
 */
int folio_config_parse_file(struct folio_config *cfg, const char *path,
                            char *err, size_t errlen);

/*
 * folio_config_parse_text - the same for `len` bytes of file text at
 * `text` (not NUL-terminated), called `name` in messages: how a master
 * hands the configuration it serves to its next image (an upgrade).
 */
int folio_config_parse_text(struct folio_config *cfg, const char *text,
                            size_t len, const char *name, char *err,
                            size_t errlen);

/*
 * folio_config_set - apply one setting by file key or long name.
 * Returns 0 or FOLIO_ECONFIG with a message in `err`.
 */
int folio_config_set(struct folio_config *cfg, const char *key,
                     const char *value, char *err, size_t errlen);

/*
 * folio_config_name - what messages call option `name` (its long name,
 * "data-dir") of cfg: "data_dir in FILE" when the file set it, else
 * "--data-dir"; into buf.  Returns buf.
 */
const char *folio_config_name(const struct folio_config *cfg,
                              const char *name, char *buf, size_t len);

/*
 * folio_config_hint - the option with its argument, "--data-dir DIR", as
 * advice says how to change it; into buf.  Returns buf.
 */
const char *folio_config_hint(const char *name, char *buf, size_t len);

/* folio_config_usage - the --help text, mirroring foliod(8)'s synopsis. */
void folio_config_usage(FILE *f);

/* folio_config_write - every setting as "key = value" lines (foliod.conf(5)). */
void folio_config_write(const struct folio_config *cfg, FILE *f);

/*
 * folio_config_write_defaults - the default configuration file: for every
 * setting, its help as a comment and "#key = default", so that removing
 * the '#' of any line changes nothing until the value is edited.
 * `version` goes into the header.  Installed as foliod.conf.
 */
void folio_config_write_defaults(FILE *f, const char *version);

/*
 * folio_parse_duration - a duration, a number and its unit ("1.5s",
 * "250ms", "2m" or "2min", "100us", "5ns", "1h"), into *ns; a bare number is
 * `bare_ns` nanoseconds each (1e9: seconds), or refused where bare_ns is
 * 0 (where seconds are not meant: folio-bench's --max-p99).  0, or -1.
 */
int folio_parse_duration(const char *s, double bare_ns, uint64_t *ns);

/* folio_default_conf_file - the file read when -c is not given. */
const char *folio_default_conf_file(void);

/*
 * folio_conf_duration_ms - a duration as the configuration writes one
 * ("60", "1.5s", "500ms", "2m", "1h": folio_parse_duration's, a bare
 * number seconds) into *out milliseconds, for the clients' options too;
 * one that is not a whole number of them ("100us") is refused.  Returns
 * 0, or -1.
 */
int folio_conf_duration_ms(const char *s, uint64_t *out);

#endif
