/*
 * bench.h - folio-bench's modules, from the top down: the run (main.c)
 * and its command line (opts.c); the request pool (pool.c) that the
 * workloads (workload.c) and the other protocols (peer.c) fill; the
 * modes (modes.c) and the engine that puts the pool on the wire
 * (engine.c, engine_int.h); the server's counters (server.c); the totals'
 * arithmetic (totals.c), the verdict (judge.c), the series (series.c)
 * and the reports (report.c, report_html.c); the server's profile
 * (profile.c).  Calls go down, never back up (make lint-calls).
 * Private to the program: nothing outside bench/ includes it.
 *
 * The hot path allocates nothing and encodes nothing: every request is
 * encoded once, at start-up, into the pool; sending one is a memcpy and
 * four bytes of msgid.
 */
#ifndef FOLIO_BENCH_H
#define FOLIO_BENCH_H

#include <sys/types.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "src/addr.h"
#include "src/buf.h"
#include "src/err.h"
#include "src/hist.h"
#include "src/stat.h"

#define BENCH_MAX_DEPTH 4096   /* -P */
#define BENCH_MAX_CONNS 100000 /* -c, and virtual users */
#define BENCH_POOL_SIZE 8192   /* requests drawn for a random workload */
#define BENCH_MSGID_OFF 3      /* 0x94 0x00 0xce [msgid: 4 bytes] ... */
#define BENCH_MAX_STAGES 64

/* Exit status (folio-bench(1), EXIT STATUS). */
#define BENCH_EXIT_OK 0
#define BENCH_EXIT_THRESHOLD 1 /* --max-p99 or --max-errors missed */
#define BENCH_EXIT_USAGE 2     /* also: a pre-run check, the report unwritten */
#define BENCH_EXIT_CONNECT 3   /* cannot connect, or a connection failed */
#define BENCH_EXIT_WRONG 4     /* an answer contradicted the expected one */

enum bench_mode {
    BENCH_CLOSED = 0, /* -c connections, -P each, send on every answer */
    BENCH_OPEN,       /* -R requests/s on a schedule (wrk2) */
    BENCH_RAMP,       /* --stages: virtual users ramped (k6, JMeter) */
    BENCH_ROUNDS      /* shakesapp's client: rounds of -n requests */
};
#define BENCH_NMODES (BENCH_ROUNDS + 1)

/* What a request asks; a row of the per-method report. */
enum bench_kind {
    BENCH_K_PING = 0,
    BENCH_K_MATCH_COUNT,
    BENCH_K_QUOTE,
    BENCH_K_LIST,
    BENCH_K_POST,
    BENCH_K_PEER, /* a request of another protocol (--proto): its name */
    BENCH_K_SEARCH,
    BENCH_NKINDS
};

/*
 * The protocol spoken (--proto): folio's msgpack-RPC, or a peer's, so
 * that one client drives every server of a comparison (bench/peer.c).
 */
enum bench_proto {
    BENCH_P_MSGPACK = 0,
    BENCH_P_RESP,     /* Redis: RESP replies, inline or RESP requests */
    BENCH_P_MEMCACHE, /* memcached's text protocol */
    BENCH_P_RAW,      /* a fixed request; a reply of fixed length or end */
    BENCH_P_HTTP      /* HTTP/1.1, keep-alive: a GET or POST of --path */
};

/* The method each kind calls (pool.c). */
extern const char *const folio_bench_kind_method[BENCH_NKINDS];

struct bench_stage {
    uint64_t dur_ns;
    uint32_t target; /* virtual users at the end of the stage */
};

#define BENCH_DEFAULT_KEY "folio-bench:key" /* --key */

/* The command line (opts.c), all of it: the options and the mode. */
struct bench_opts {
    enum bench_mode mode;
    char addr[FOLIO_ADDR_TEXT + 8]; /* HOST:PORT or unix:PATH */
    const char *addr_from;          /* the option that set addr, for errors */
    int conns;                      /* -c */
    int threads;                    /* -t (0: the CPUs) */
    int pipeline;                   /* -P */
    uint64_t duration_ns;           /* -d (0: use -n, or forever in rounds) */
    uint64_t warmup_ns;
    uint64_t timeout_ns; /* an answer later than this fails its connection */
    uint64_t total;      /* -n: requests (rounds: per round) */
    uint64_t rounds;     /* --rounds (0: forever) */
    double rate;         /* -R: requests/s over all connections */
    struct bench_stage stages[BENCH_MAX_STAGES];
    int nstages;
    const char *workload; /* -w */
    const char *queries;  /* --queries FILE */
    const char *corpus;   /* --corpus DIR */
    const char *catalog;  /* --catalog FILE */
    double uncovered;     /* percent of CEPs outside every band */
    double write_ratio;   /* share of comments.post among comments calls */
    uint32_t pages;       /* distinct comment pages */
    double zipf;          /* popularity exponent of the pages */
    const char *mix;      /* --mix: workload:weight,... */
    const char *admin;    /* --admin SOCKET: server.stats */
    pid_t server_pid;     /* --server-pid: /proc fallback */
    int json;
    int quiet;
    const char *hgrm;      /* --hgrm FILE */
    FILE *hgrm_f;          /* ... opened before the run (main.c) */
    const char *html;      /* --html FILE */
    FILE *html_f;
    const char *baseline;  /* --baseline FILE: an earlier --html report */
    char *baseline_page;   /* ... read before the run (report_html.c) */
    const char *csv;       /* --csv FILE */
    FILE *csv_f;
    char cmdline[1024];    /* the command, for the report */
    uint64_t max_p99_ns;   /* 0: no threshold */
    uint64_t max_errors;   /* unexpected errors allowed */
    double max_errors_pct; /* >= 0: a percentage of the sent requests */
    uint64_t seed;
    /* other protocols (bench/peer.c) */
    enum bench_proto proto; /* --proto */
    int send_each;          /* --send-each: a send(2) per request */
    uint32_t value_size;    /* --value-size: GET/SET value bytes */
    const char *key;        /* --key */
    const char *path;       /* --path: the HTTP request-target */
    const char *body;       /* --body: POSTed; NULL: a GET */
    const char *raw_request;  /* --raw-request, C escapes decoded */
    size_t raw_request_len;
    uint32_t raw_reply_len;   /* --raw-reply-len (0: use the end) */
    const char *raw_reply_end; /* --raw-reply-end, decoded */
    size_t raw_reply_end_len;
    const char *profile; /* --profile FILE: the server's CPU profile */
    const char *metrics; /* --metrics HOST:PORT: where it comes from */
};

/*
 * folio_bench_opts_init - every option at its default.
 * folio_bench_opts_parse - the command line (the mode first, if named),
 * checked, with the defaults that depend on the mode and the protocol
 * set: 0 to run, 1 after --help or --version (printed), -1 after a usage
 * error (said, with the usage, on stderr).  Uses getopt_long.
 */
void folio_bench_opts_init(struct bench_opts *o);
int folio_bench_opts_parse(int argc, char *argv[], struct bench_opts *o);

/* ------------------------------------------------------------------ */
/* The request pool (pool.c), filled by the workloads (workload.c).     */

enum bench_expect {
    BENCH_X_NONE = 0, /* any answer is right */
    BENCH_X_INT,      /* an int equal to x_int */
    BENCH_X_STR,      /* a str equal to x_str */
    BENCH_X_BYTES,    /* peers: the reply is x_str's x_int bytes */
    BENCH_X_PREFIX,   /* peers: the reply starts with x_str's x_int bytes */
    BENCH_X_LEN       /* peers: the reply is x_int bytes long */
};

#define BENCH_CODES (FOLIO_ST_MAX + 1) /* [FOLIO_ST_MAX]: any other code */

/* A set of status codes (bit k: code k), the errors a request expects. */
#define BENCH_CODE(k) (1u << (k))

struct bench_req {
    uint32_t off; /* into pool bytes: [0, msgid, method, params] */
    uint32_t len;
    uint8_t kind;      /* enum bench_kind */
    uint8_t expect;    /* enum bench_expect */
    uint32_t ok_codes; /* BENCH_CODE()s of the errors that are expected */
    int64_t x_int;
    const char *x_str; /* static */
};

struct bench_pool {
    struct folio_buf bytes;
    struct bench_req *reqs;
    uint32_t n;
    uint32_t cap;
    uint32_t maxlen;   /* the longest request */
    uint32_t ok_codes; /* every code some request expects */
    const char *code_why[BENCH_CODES]; /* static: which requests expect it */
    char desc[160];    /* what the workload is, for the report */
};

/*
 * folio_bench_pool_build - encode the requests of o->workload into p
 * (zeroed by the caller), or those of another protocol (peer.c).  Reads
 * --queries, --corpus, --catalog (which must be a catalog: its header, then
 * rows of six fields with numbers where numbers go).  Returns 0, or
 * FOLIO_EINVAL / FOLIO_ESYS / FOLIO_ENOMEM with a message in err (file:line for
 * a bad row).
 */
int folio_bench_pool_build(const struct bench_opts *o, struct bench_pool *p,
                           char *err, size_t errlen);

/* folio_bench_pool_free - release p; accepts a zeroed pool. */
void folio_bench_pool_free(struct bench_pool *p);

/*
 * folio_bench_req_label - a short description of request r for messages:
 * its method and first param ("corpus.match_count \"hello\"").
 */
void folio_bench_req_label(const struct bench_pool *p,
                           const struct bench_req *r, char *buf, size_t len);

/*
 * folio_bench_pool_push - add to p the request whose bytes were appended
 * to p->bytes from `start` on.  0, or -1 out of memory.
 */
int folio_bench_pool_push(struct bench_pool *p, uint32_t start,
                          enum bench_kind kind, enum bench_expect expect,
                          int64_t x_int, const char *x_str,
                          uint32_t ok_codes);

/* ------------------------------------------------------------------ */
/* Other protocols (peer.c).                                           */

/* folio_bench_proto_name - "msgpack", "resp", "memcache", "raw", "http". */
const char *folio_bench_proto_name(enum bench_proto p);

/* folio_bench_proto_parse - the protocol named s; 0, or -1 if none. */
int folio_bench_proto_parse(const char *s, enum bench_proto *out);

/*
 * folio_bench_peer_pool - the requests of workload o->workload in
 * protocol o->proto (ping, get, set; version for memcached; the fixed
 * request of raw).  Returns 0, or FOLIO_EINVAL / FOLIO_ENOMEM with the
 * reason in err.
 */
int folio_bench_peer_pool(const struct bench_opts *o, struct bench_pool *p,
                          char *err, size_t errlen);

/*
 * folio_bench_peer_setup - before the run: store the value that the get
 * workload reads (SET, or memcached's set), blocking, on one connection
 * of its own.  0, or -1 with the reason in err.  Main thread only.
 */
int folio_bench_peer_setup(const struct bench_opts *o,
                           const struct folio_addr *a, char *err,
                           size_t errlen);

/* What folio_bench_peer_frame found at the head of the input. */
enum bench_frame {
    BENCH_F_MORE = 0, /* not a whole reply yet */
    BENCH_F_OK,       /* a reply of *len bytes */
    BENCH_F_ERROR,    /* a reply of *len bytes that is an error */
    BENCH_F_BAD       /* not a reply of this protocol */
};

/*
 * folio_bench_peer_frame - the first reply of the avail bytes at p, in
 * protocol o->proto (not msgpack).  Sets *len for OK and ERROR.
 */
enum bench_frame folio_bench_peer_frame(const struct bench_opts *o,
                                        const char *p, size_t avail,
                                        size_t *len);

/*
 * --proto http's framing, with the parser's state kept in the
 * connection: folio_bench_http_init before each reply, then
 * folio_bench_http_frame as bytes come (p is rewritten in place for a
 * chunked body).  BENCH_F_OK for 2xx and 3xx, BENCH_F_ERROR for 4xx and
 * 5xx and a JSON-RPC error (len set), BENCH_F_MORE, BENCH_F_BAD.
 */
struct folio_http_req;
void folio_bench_http_init(struct folio_http_req *r);
enum bench_frame folio_bench_http_frame(struct folio_http_req *r, char *p,
                                        size_t avail, size_t *len);

/*
 * folio_bench_http_of_pool - -w WORKLOAD --proto http: rewrite the
 * msgpack-RPC requests of p as the HTTP requests of foliod's HTTP face
 * (folio-http(7)) that ask the same: server.ping GET /status,
 * comments.list GET /v1/comments?uri=, comments.post POST /v1/comments,
 * freight.quote POST /v1/freight/quote, any other method POST /rpc
 * (JSON-RPC 2.0).  Kinds and expected codes are kept, and a list may be
 * NOT_FOUND (mouthful's 404 for a page without comments); answers are not
 * compared.  0, or FOLIO_ENOMEM with the reason in err.
 */
int folio_bench_http_of_pool(const struct bench_opts *o, struct bench_pool *p,
                             char *err, size_t errlen);

/*
 * folio_bench_http_code - the folio status code of an HTTP error reply
 * (len bytes at p) from foliod's face: its JSON body's "code" (a
 * JSON-RPC error's data.code); without one, the code folio-http(7) maps
 * to its status (404: NOT_FOUND, ...); FOLIO_ST_MAX for another status.
 */
int folio_bench_http_code(const char *p, size_t len);

/* ------------------------------------------------------------------ */
/* Counters.  Each thread writes its own block (one writer:           */
/* folio_stat_add, src/stat.h); the main thread reads them for the     */
/* progress line and sums them at the end (totals.c).                  */

struct bench_counts {
    /* sent = ok + wrong + err_replies + lost */
    _Atomic uint64_t sent;        /* measured requests written */
    _Atomic uint64_t ok;          /* answered without error, and right */
    _Atomic uint64_t wrong;       /* answered, but not what was expected */
    _Atomic uint64_t err_replies; /* answered with an error */
    _Atomic uint64_t expected;    /* ... whose code the workload expected */
    _Atomic uint64_t lost;        /* never answered: connection failed */
    _Atomic uint64_t behind;      /* open loop: due but never sent */
    _Atomic uint64_t codes[BENCH_CODES];
    _Atomic uint64_t codes_expected[BENCH_CODES];
    _Atomic uint64_t kind_sent[BENCH_NKINDS];
    _Atomic uint64_t kind_err[BENCH_NKINDS];
    /* Latencies by kind (the totals' are their sum). */
    _Atomic uint64_t kind_hist[BENCH_NKINDS][FOLIO_LAT_BUCKETS];
    _Atomic uint64_t kind_max_ns[BENCH_NKINDS];
    _Atomic uint64_t kind_sum_ns[BENCH_NKINDS];
    _Atomic uint64_t last_ns;  /* time of the last measured answer */
    _Atomic uint64_t conn_failures;
    _Atomic uint64_t vus;   /* ramp: virtual users running */
    _Atomic uint64_t paced; /* open loop: schedule slots sent so far */
    _Atomic uint64_t bytes_out, bytes_in; /* written and read, warm-up too */
};

/* A plain copy of the counters, summed over threads. */
struct bench_totals {
    uint64_t sent, ok, wrong, err_replies, expected, lost, behind;
    uint64_t codes[BENCH_CODES];
    uint64_t codes_expected[BENCH_CODES];
    uint64_t kind_sent[BENCH_NKINDS];
    uint64_t kind_err[BENCH_NKINDS];
    uint64_t kind_hist[BENCH_NKINDS][FOLIO_LAT_BUCKETS];
    uint64_t kind_max_ns[BENCH_NKINDS], kind_sum_ns[BENCH_NKINDS];
    uint64_t hist[FOLIO_LAT_BUCKETS]; /* every kind's */
    uint64_t max_ns, sum_ns, last_ns;
    uint64_t conn_failures, vus, paced;
    uint64_t bytes_out, bytes_in;
};

/*
 * The totals' arithmetic (totals.c).
 * folio_bench_counts_sum - add c into t (t zeroed by the caller).
 * folio_bench_answered - the answers: ok + wrong + error replies.
 * folio_bench_unexpected - errors counted against --max-errors.
 * folio_bench_pct - the q-quantile of the latencies (ns): the upper bound
 *   of its histogram bucket, at most the largest latency seen.
 * folio_bench_pct_of - the same of histogram `hist` whose largest latency
 *   is max_ns.
 * folio_bench_kind_answered - the measured answers of kind k.
 */
void folio_bench_counts_sum(struct bench_totals *t,
                            const struct bench_counts *c);
uint64_t folio_bench_answered(const struct bench_totals *t);
uint64_t folio_bench_unexpected(const struct bench_totals *t);
uint64_t folio_bench_pct(const struct bench_totals *t, double q);
uint64_t folio_bench_pct_of(const uint64_t *hist, uint64_t max_ns, double q);
uint64_t folio_bench_kind_answered(const struct bench_totals *t, int k);

/* ------------------------------------------------------------------ */
/* The modes (modes.c) and the engine (engine.c).                      */

/* folio_bench_mode_name - "closed", "open", "ramp", "rounds". */
const char *folio_bench_mode_name(enum bench_mode m);

/* folio_bench_mode_parse - the mode named s: 0, or -1 if none. */
int folio_bench_mode_parse(const char *s, enum bench_mode *out);

struct bench_thread;

struct bench_run {
    const struct bench_opts *o;
    const struct bench_pool *pool;
    struct folio_addr target;
    int nthreads;
    struct bench_thread *th;
    _Atomic uint64_t budget; /* -n: measured requests left to take */
    _Atomic int stop;        /* stop sending, drain, finish */
    uint64_t t0;             /* when the threads were told to go */
    uint64_t measure_ns;     /* t0 + warmup: measured from here */
    uint64_t stop_ns;        /* -d: stop sending at (0: never) */
    uint64_t round_n;        /* rounds: requests in this round */
    pthread_barrier_t go;    /* threads connected / told to go */
    pthread_barrier_t round; /* rounds: start and end of each round */
    pthread_mutex_t lock;    /* guards the fields below */
    pthread_cond_t done_cv;
    int done; /* threads finished */
    int connect_failed;
    char first_error[512]; /* the first connection failure */
    char first_wrong[512]; /* the first wrong answer */
};

/*
 * folio_bench_run_start - connect every thread's connections (the ramp
 * connects its virtual users later) and start the threads, waiting at
 * r->go.  Returns 0, or -1 with the reason in r->first_error (nothing to
 * join then).
 */
int folio_bench_run_start(struct bench_run *r);

/* folio_bench_run_join - wait for every thread and free the engine. */
void folio_bench_run_join(struct bench_run *r);

/* folio_bench_run_counts - thread i's counters (live: read them relaxed). */
const struct bench_counts *folio_bench_run_counts(const struct bench_run *r,
                                                  int i);

/* ------------------------------------------------------------------ */
/* The server's own counters (server.c).                               */

/* The server's workers sample their CPU time this often (foliod). */
#define BENCH_STATS_SETTLE_MS 120

struct bench_server_snap {
    int ok;             /* a snapshot was taken */
    int from_stats;     /* server.stats answered */
    int cpu_from_proc;  /* cpu_s comes from /proc, not server.stats */
    double requests;    /* < 0: unknown */
    double cpu_s;       /* user + system; < 0: unknown */
    double alloc_calls; /* < 0: unknown */
    double client_cpu_s; /* folio-bench's own, every thread; < 0: unknown */
    char why[400];      /* what could not be read */
};

/*
 * folio_bench_server_check - before the run: can --admin's server.stats
 * be read, is --server-pid a live process?  0, or -1 with the reason in
 * why.  Blocking: main thread only.
 */
int folio_bench_server_check(const struct bench_opts *o, char *why,
                             size_t whylen);

/*
 * folio_bench_server_snap - read the server's counters: server.stats over
 * o->admin if given (requests, allocations, CPU), and the CPU time of
 * o->server_pid and its descendants from /proc if given, which then
 * stands for the CPU; and folio-bench's own CPU time (client_cpu_s), for
 * what the client spends beside the server on shared CPUs.  s->ok = 0
 * when neither server figure could be read, with the reason in s->why.
 * Blocking: main thread only.
 */
void folio_bench_server_snap(const struct bench_opts *o,
                             struct bench_server_snap *s);

/* ------------------------------------------------------------------ */
/* Reports (report.c).                                                 */

/*
 * folio_bench_progress - one progress line on stderr: requests/s since
 * the previous line, errors, p99 so far.
 */
void folio_bench_progress(const struct bench_run *r,
                          const struct bench_totals *now,
                          const struct bench_totals *prev, double elapsed_s,
                          double interval_s);

/*
 * A threshold the run is judged by (judge.c): every one is evaluated
 * and every one that failed is reported, not only the first.
 */
struct bench_check {
    const char *name; /* the option, without "--": "max-p99" */
    const char *unit; /* of limit and measured: "us", "errors" */
    const char *verb; /* between measured and limit: " is over" */
    double limit, measured;
    int failed;
    char limit_text[48];    /* the limit as given: "2ms", "1%" */
    char measured_text[48]; /* "p99 4.19ms", "12 unexpected errors" */
    char detail[256];       /* more, for the message: the codes */
};

#define BENCH_MAX_CHECKS 16

/*
 * The run second by second (series.c): one point per second of the
 * measured window (per round in the rounds mode), for --html and --csv.
 */
struct bench_point {
    double t;    /* seconds into the measured window, the interval's end */
    double secs; /* the interval's length */
    uint64_t answered, errors, lost;
    uint64_t codes[BENCH_CODES];
    uint64_t p50, p90, p99, p999, max, mean; /* ns; 0 without answers */
    uint64_t lat_n; /* the answers its latencies are of (0: none known) */
    uint64_t users; /* ramp: virtual users */
    double srv_cpu_s, srv_allocs, srv_requests; /* the server's; -1 unknown */
    uint64_t bytes_out, bytes_in;               /* written and read */
    /* Each method's p50 and p99 of the interval (ns); 0 without answers. */
    uint64_t kind_p50[BENCH_NKINDS], kind_p99[BENCH_NKINDS];
};

struct bench_series {
    struct bench_point *p;
    size_t n, cap;
};

/*
 * folio_bench_series_add - a point from two samples of the counters (and
 * of the server's, both may be NULL).  0, or -1 out of memory.
 */
int folio_bench_series_add(struct bench_series *s,
                           const struct bench_totals *now,
                           const struct bench_totals *prev, double t,
                           double secs, const struct bench_server_snap *srv_now,
                           const struct bench_server_snap *srv_prev);

/* folio_bench_series_free - release s; accepts a zeroed series. */
void folio_bench_series_free(struct bench_series *s);

/* folio_bench_series_codes - the codes of the series' answers (BENCH_CODE). */
unsigned folio_bench_series_codes(const struct bench_series *s);

/*
 * folio_bench_point_per_req - a server spend of point p per request (the
 * server's count, else the answers), or -1 when unknown.
 */
double folio_bench_point_per_req(double spend, const struct bench_point *p);

/*
 * folio_bench_csv - the series as CSV (a header line, one line a point)
 * into f (opened before the run, to append: it is emptied first), closed.
 * 0 or -1 (errno).
 */
int folio_bench_csv(FILE *f, const struct bench_series *s);

/* The outcome of a run, for the summary and the exit status. */
struct bench_result {
    struct bench_series series;
    struct bench_totals t;
    double secs; /* measured window */
    uint64_t bytes_out0, bytes_in0; /* the totals' bytes when it began */
    struct bench_server_snap before, after;
    uint64_t rounds_done;
    struct bench_check checks[BENCH_MAX_CHECKS];
    int nchecks;
    int status;     /* BENCH_EXIT_*: the highest that applies */
    char why[1200]; /* why the status is not 0: reasons joined by "; " */
    char reasons[BENCH_MAX_CHECKS + 2][600]; /* ... one by one */
    int nreasons;
};

/*
 * folio_bench_judge - evaluate every threshold into res->checks, and set
 * res->status and res->why from the wrong answers, the connection
 * failures and the failed thresholds (judge.c).
 */
void folio_bench_judge(const struct bench_run *r, struct bench_result *res);

/*
 * folio_bench_errors_allowed - the unexpected errors --max-errors allows
 * after `sent` requests.
 */
uint64_t folio_bench_errors_allowed(const struct bench_opts *o,
                                    uint64_t sent);

/*
 * folio_bench_codes_text - "11 OUT_OF_RANGE 12, 8 RESOURCE_EXHAUSTED 2"
 * into buf: the codes of `counts` that are not zero (and "lost N" when
 * lost > 0); "" when there are none.
 */
const char *folio_bench_codes_text(const uint64_t counts[BENCH_CODES],
                                   uint64_t lost, char *buf, size_t len);

/* folio_bench_json_str - s as a JSON string, '<' escaped (HTML holds it). */
void folio_bench_json_str(FILE *f, const char *s);

/* folio_bench_summary - the human summary on f. */
void folio_bench_summary(FILE *f, const struct bench_run *r,
                         const struct bench_result *res);

/* folio_bench_json - the summary as one JSON object on one line. */
void folio_bench_json(FILE *f, const struct bench_run *r,
                      const struct bench_result *res);

/*
 * folio_bench_hgrm - the latency distribution in HdrHistogram's
 * percentile text format (values in milliseconds), written to f (opened
 * before the run, to append: it is emptied first) and closed.  0 or -1
 * (errno).
 */
int folio_bench_hgrm(FILE *f, const struct bench_totals *t);

/*
 * folio_bench_html - the report as one self-contained HTML page (inline
 * styles and script drawing SVG, the data inline: nothing fetched) into
 * f (opened before the run, to append: emptied first), closed
 * (report_html.c).  0 or -1 (errno).
 */
int folio_bench_html(FILE *f, const struct bench_run *r,
                     const struct bench_result *res);

/*
 * folio_bench_html_baseline - with --baseline, read that earlier report
 * into o->baseline_page (before the run: the new one may overwrite it),
 * checked to hold a run's data.  0, or -1 with the reason on stderr.
 */
int folio_bench_html_baseline(struct bench_opts *o);

/* folio_bench_fmt_ns - "812us", "1.2ms", "3.40s" into buf. */
const char *folio_bench_fmt_ns(double ns, char *buf, size_t len);

/* ------------------------------------------------------------------ */
/* --profile (profile.c).                                              */

/*
 * folio_bench_profile_seconds - how long the measured phase lasts, whole
 * seconds (the profile's length; 1..300), or 0 when unknown (-n).
 * folio_bench_profile_start - with --profile, start fetching a CPU
 * profile of that length from o->metrics, in a thread: call it when the
 * measured phase begins.  0, or -1 (reason kept for _finish).
 * folio_bench_profile_finish - wait for it and write o->profile; 0, or
 * -1 with the reason on stderr.  Both do nothing without --profile.
 */
unsigned folio_bench_profile_seconds(const struct bench_opts *o);
int folio_bench_profile_start(const struct bench_opts *o);
int folio_bench_profile_finish(const struct bench_opts *o);

/*
 * folio_bench_profile_taken - the profile _finish wrote, decoded, for the
 * report's top functions; NULL without one.  Valid until the program
 * ends.
 */
struct folio_pprof;
const struct folio_pprof *folio_bench_profile_taken(void);

#endif
