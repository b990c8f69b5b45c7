/*
 * fuzz_harness.c - a worker without a master for the fuzz targets (see
 * fuzz_harness.h).  Built twice: with clang and libFuzzer under
 * --enable-fuzz, and with the normal compiler for the replay of the seed
 * and regression inputs in make check.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shm/comments.h"
#include "shm/corpus.h"
#include "shm/freight.h"
#include "shm/stats.h"
#include "src/buf.h"
#include "src/clock.h"
#include "src/conf.h"
#include "src/err.h"
#include "src/log.h"
#include "src/rpc.h"
#include "tests/fuzz_harness.h"
#include "worker/conn.h"
#include "worker/dispatch.h"
#include "worker/worker_int.h"

/*
 * The fixture corpus: small (a count is checked against a naive scan on
 * every input), with what the matching rule has to get right: mixed case,
 * empty lines, a file without a final newline, a file that is only a
 * newline, bytes above 0x7f, a '\r', repeated and overlapping words.
 */
#define F(name, text)                                                          \
    {                                                                          \
        name, text, sizeof(text) - 1                                           \
    }
const struct fuzz_corpus_file fuzz_corpus_files[] = {
    F("alpha.txt", "To be, or not to be: that is the question:\n"
                   "Whether 'tis nobler in the mind to suffer\n"
                   "\n"
                   "The slings and arrows of outrageous fortune,\n"
                   "HELLO hello HeLLo world\n"),
    F("beta.txt", "aaaa\naaa\naa\na\n\nabababab\nbaba\r\nWORLD, world!\n"
                  "caf\xc3\xa9 \xe2\x80\x94 na\xc3\xafve\n\xff\xfe\x80\n"
                  "to be continued"),
    F("empty.txt", "\n"),
    F("gamma.txt", "the end\nThe End\nTHE END.\n"),
};
const unsigned fuzz_ncorpus_files =
    sizeof(fuzz_corpus_files) / sizeof(fuzz_corpus_files[0]);
#undef F

static struct {
    const char *key, *value;
} extra[16];
static unsigned nextra;

static struct folio_worker worker;
static struct folio_config cfg;
static struct folio_worker_args args;
static struct folio_worker_data data;
static struct folio_stats_region *region;
static struct folio_corpus *corpus;
static char tmpdir[256];
static int services_up;

void
fuzz_fail(const char *fmt, ...)
{
    va_list ap;

    fputs("fuzz: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    remove(path);
    return 0;
}

static void
teardown(void)
{
    unsigned i;

    folio_conn_free_all(&worker);
    if (services_up)
        for (i = folio_nservices; i-- > 0;)
            if (folio_services[i].fini != NULL)
                folio_services[i].fini(&worker);
    if (worker.base != NULL)
        event_base_free(worker.base);
    folio_corpus_free(corpus);
    folio_stats_destroy(region);
    folio_config_free(&cfg);
    if (tmpdir[0] != '\0')
        nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void
set(const char *key, const char *value)
{
    char err[256];

    if (folio_config_set(&cfg, key, value, err, sizeof(err)) != 0)
        fuzz_fail("config %s = %s: %s", key, value, err);
}

void
fuzz_config(const char *key, const char *value)
{
    if (nextra == sizeof(extra) / sizeof(extra[0]))
        fuzz_fail("too many fuzz_config settings");
    extra[nextra].key = key;
    extra[nextra].value = value;
    nextra++;
}

void
fuzz_service_restart(const char *name, const char *subdir)
{
    char path[600];
    unsigned i;
    int rc;

    for (i = 0; i < folio_nservices; i++)
        if (strcmp(folio_services[i].name, name) == 0)
            break;
    if (i == folio_nservices)
        fuzz_fail("no service %s", name);
    if (folio_services[i].fini != NULL)
        folio_services[i].fini(&worker);
    if (subdir != NULL) {
        snprintf(path, sizeof(path), "%s/%s", cfg.data_dir, subdir);
        nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    }
    if (folio_services[i].init != NULL &&
        (rc = folio_services[i].init(&worker)) != 0)
        fuzz_fail("service %s: %s", name, folio_strerror(rc));
}

static void
write_file(const char *dir, const char *name, const char *text, size_t len)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if ((f = fopen(path, "w")) == NULL || fwrite(text, 1, len, f) != len ||
        fclose(f) != 0)
        fuzz_fail("writing %s: %s", path, strerror(errno));
}

/* Import the freight tables shipped in data/, as the master does. */
static void
import_freight(const char *datadir)
{
    struct folio_freight_diag d = {NULL, NULL, 0};
    struct folio_freight_summary sum;
    char env[512], err[512];
    int present = 0, changed = 0, rc;

    snprintf(env, sizeof(env), "%s/%s", datadir, FOLIO_FREIGHT_ENV);
    rc = folio_freight_import(env, FOLIO_SRCDIR "/data/freight",
                              FOLIO_SRCDIR "/data/catalog.csv", 0, &d, &sum,
                              &present, &changed, err, sizeof(err));
    if (rc != 0 || !present)
        fuzz_fail("freight import from %s/data: %s", FOLIO_SRCDIR,
                  rc != 0 ? err : "no tables");
    data.freight = 1;
}

struct folio_worker *
fuzz_setup(void)
{
    struct folio_worker *w = &worker;
    const char *base;
    char dir[300], err[512];
    unsigned i;
    int rc;

    if (w->base != NULL)
        return w;
    folio_log_level = FOLIO_LOG_CRIT; /* a fuzzer's inputs are all bad news */
    /* tmpfs when there is one: the comments store syncs every post. */
    base = access("/dev/shm", W_OK) == 0 ? "/dev/shm"
           : getenv("TMPDIR") != NULL    ? getenv("TMPDIR")
                                         : "/tmp";
    snprintf(tmpdir, sizeof(tmpdir), "%s/folio-fuzz.XXXXXX", base);
    if (mkdtemp(tmpdir) == NULL)
        fuzz_fail("mkdtemp %s: %s", tmpdir, strerror(errno));
    atexit(teardown);

    folio_config_init(&cfg);
    snprintf(dir, sizeof(dir), "%s/data", tmpdir);
    if (mkdir(dir, 0700) != 0)
        fuzz_fail("mkdir %s: %s", dir, strerror(errno));
    set("data_dir", dir);
    /* Small limits, so that short inputs reach them. */
    set("max_message_bytes", "8192");
    set("max_output_bytes", "12288");
    set("max_connections", "4");
    set("stats", "on");
    /* A small store: fuzzing fills it, and a full store is a case too. */
    set("comments_max_size", "4m");
    for (i = 0; i < nextra; i++)
        set(extra[i].key, extra[i].value);

    snprintf(dir, sizeof(dir), "%s/corpus", tmpdir);
    if (mkdir(dir, 0700) != 0)
        fuzz_fail("mkdir %s: %s", dir, strerror(errno));
    for (i = 0; i < fuzz_ncorpus_files; i++)
        write_file(dir, fuzz_corpus_files[i].name, fuzz_corpus_files[i].text,
                   fuzz_corpus_files[i].len);
    if ((rc = folio_corpus_open(dir, NULL, &corpus, err, sizeof(err))) != 0)
        fuzz_fail("corpus: %s", err);
    data.corpus = corpus;
    import_freight(cfg.data_dir);

    if ((rc = folio_stats_create(1, &region)) != 0)
        fuzz_fail("stats region: %s", folio_strerror(rc));
    args.index = 0;
    args.generation = 1;
    args.cfg = &cfg;
    args.slot = folio_stats_slot(region, 0);
    args.stats = region;
    args.chan_fd = -1;
    args.data = &data;

    w->args = &args;
    w->cfg = &cfg;
    w->slot = args.slot;
    w->now_ms = folio_mono_ms();
    if ((w->base = event_base_new()) == NULL)
        fuzz_fail("event_base_new failed");
    folio_conn_setup(w);
    for (i = 0; i < folio_nservices; i++) {
        if (folio_services[i].init == NULL)
            continue;
        if ((rc = folio_services[i].init(w)) != 0)
            fuzz_fail("service %s: %s", folio_services[i].name,
                      folio_strerror(rc));
    }
    services_up = 1;
    return w;
}

const struct folio_corpus *
fuzz_corpus(void)
{
    return corpus;
}

const char *
fuzz_tmpdir(void)
{
    return tmpdir;
}

int
fuzz_ref_text(const uint8_t *s, size_t n, int body, size_t *at)
{
    size_t i = 0, k, j;
    uint32_t c;

    while (i < n) {
        unsigned b = s[i];

        if (b < 0x80) {
            c = b;
            k = 1;
        } else if (b >= 0xc2 && b <= 0xdf) {
            c = b & 0x1f;
            k = 2;
        } else if (b >= 0xe0 && b <= 0xef) {
            c = b & 0x0f;
            k = 3;
        } else if (b >= 0xf0 && b <= 0xf4) {
            c = b & 0x07;
            k = 4;
        } else {
            *at = i;
            return FOLIO_TEXT_UTF8;
        }
        if (n - i < k) {
            *at = i;
            return FOLIO_TEXT_UTF8;
        }
        for (j = 1; j < k; j++) {
            if ((s[i + j] & 0xc0) != 0x80) {
                *at = i;
                return FOLIO_TEXT_UTF8;
            }
            c = c << 6 | (s[i + j] & 0x3f);
        }
        if ((k == 3 && c < 0x800) || (k == 4 && c < 0x10000) || c > 0x10ffff ||
            (c >= 0xd800 && c <= 0xdfff)) {
            *at = i;
            return FOLIO_TEXT_UTF8;
        }
        if ((c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f)) &&
            !(body && (c == '\n' || c == '\t'))) {
            *at = i;
            return FOLIO_TEXT_CONTROL;
        }
        i += k;
    }
    return FOLIO_TEXT_OK;
}

/*
 * One reply: [1, msgid, nil, result] or [1, msgid, [code, msg], nil], the
 * message valid UTF-8 (a strict client decodes it: Python's msgpack with
 * raw=False raises on anything else).  An error reply's msgid may be any
 * integer: the one a bad request came with.
 */
static int
check_reply(const char *p, size_t len)
{
    struct folio_mp_cur c, e;
    struct folio_rpc_id id;
    const char *msg;
    uint32_t n, mlen, msgid;
    int64_t type, code;
    size_t at;
    int idrc;

    folio_mp_cur_init(&c, p, len);
    if (folio_mp_read_array(&c, &n) != 0 || n != 4 ||
        folio_mp_read_int(&c, &type) != 0 || type != FOLIO_RPC_RESPONSE)
        fuzz_fail("reply is not [1, msgid, error, result]");
    if ((idrc = folio_rpc_read_msgid(&c, &msgid, &id)) == FOLIO_EPROTO)
        fuzz_fail("reply's msgid is not an integer");
    e = c;
    if (folio_mp_read_nil(&e) == 0) {
        if (idrc != 0)
            fuzz_fail("a result for msgid out of range");
        return 0;
    }
    if (folio_mp_read_array(&e, &n) != 0 || n != 2 ||
        folio_mp_read_int(&e, &code) != 0 ||
        folio_mp_read_str(&e, &msg, &mlen) != 0)
        fuzz_fail("reply's error is not [code, message]");
    if (fuzz_ref_text((const uint8_t *)msg, mlen, 1, &at) == FOLIO_TEXT_UTF8)
        fuzz_fail("error %lld: message not UTF-8 at byte %zu: '%.*s'",
                  (long long)code, at, (int)mlen, msg);
    switch (code) {
    case FOLIO_ST_INVALID_ARGUMENT:
    case FOLIO_ST_NOT_FOUND:
    case FOLIO_ST_PERMISSION_DENIED:
    case FOLIO_ST_RESOURCE_EXHAUSTED:
    case FOLIO_ST_OUT_OF_RANGE:
    case FOLIO_ST_UNIMPLEMENTED:
    case FOLIO_ST_UNAVAILABLE:
        break;
    case FOLIO_ST_INTERNAL:
        /* A bug or a storage failure: none is expected here. */
        fuzz_fail("INTERNAL error: %.*s", (int)mlen, msg);
    default:
        fuzz_fail("unknown error code %lld", (long long)code);
    }
    if (mlen == 0)
        fuzz_fail("error %lld without a message", (long long)code);
    if (folio_mp_read_nil(&e) != 0 || e.p != e.end)
        fuzz_fail("error reply with a result");
    return (int)code;
}

size_t
fuzz_check_replies(const void *p, size_t len, int *first_code)
{
    struct folio_mp_scan st;
    const char *b = p;
    size_t off = 0, n = 0;
    int r, code;

    while (off < len) {
        folio_mp_scan_init(&st, len - off, FOLIO_MP_MAX_DEPTH);
        r = folio_mp_scan(&st, b + off, len - off);
        if (r != FOLIO_MP_DONE)
            fuzz_fail("reply stream broken at byte %zu of %zu (scan %d)", off,
                      len, r);
        code = check_reply(b + off, (size_t)st.pos);
        if (n == 0 && first_code != NULL)
            *first_code = code;
        off += (size_t)st.pos;
        n++;
    }
    return n;
}

int
fuzz_dispatch(const char *method, const void *p, size_t len, int notify,
              int admin, struct folio_buf *out)
{
    return fuzz_dispatch_on(NULL, method, p, len, notify, admin, out);
}

int
fuzz_dispatch_on(struct folio_conn *c, const char *method, const void *p,
                 size_t len, int notify, int admin, struct folio_buf *out)
{
    struct folio_worker *w = fuzz_setup();
    struct folio_rpc_msg m;
    struct folio_mp_scan st;

    /* What the framing would let through: one complete value, in limits. */
    folio_mp_scan_init(&st, 1u << 20, cfg.max_depth);
    if (len == 0 || folio_mp_scan(&st, p, len) != FOLIO_MP_DONE ||
        st.pos != len)
        return -1;
    memset(&m, 0, sizeof(m));
    folio_mp_cur_init(&m.params, p, len);
    if (folio_mp_read_array(&m.params, &m.nparams) != 0)
        return -1;
    m.type = notify ? FOLIO_RPC_NOTIFY : FOLIO_RPC_REQUEST;
    m.has_msgid = !notify;
    m.msgid = notify ? 0 : 0x12345678;
    m.method = method;
    m.method_len = (uint32_t)strlen(method);
    folio_dispatch(w, c, &m, admin, NULL, out);
    return 0;
}

int
fuzz_call(const char *method, const void *p, size_t len, int admin,
          struct folio_buf *out)
{
    int code = 0;

    folio_buf_reset(out);
    if (fuzz_dispatch(method, p, len, 0, admin, out) != 0)
        return -1;
    /* Held replies (none outside a connection) would leave nothing. */
    if (fuzz_check_replies(out->b_data, out->b_len, &code) != 1)
        fuzz_fail("%s: not exactly one reply", method);
    return code;
}

/* Read what the server sent into rep; 1 if bytes came, -1 at EOF. */
static int
drain(int fd, struct folio_buf *rep)
{
    ssize_t n;
    int got = 0;

    for (;;) {
        if (folio_buf_reserve(rep, 65536) != 0)
            fuzz_fail("no memory for replies");
        n = recv(fd, rep->b_data + rep->b_len, folio_buf_space(rep), 0);
        if (n > 0) {
            rep->b_len += (size_t)n;
            got = 1;
            continue;
        }
        if (n == 0)
            return -1;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return got;
        return -1; /* reset by the server: closed */
    }
}

static struct folio_conn *
find_conn(struct folio_worker *w, int fd)
{
    struct folio_conn *c;

    for (c = w->conns; c != NULL; c = c->next)
        if (c->fd == fd)
            return c;
    return NULL;
}

/* Whether connection fd's reply is held (a post for the writer thread). */
static int
held(struct folio_worker *w, int fd)
{
    struct folio_conn *c = find_conn(w, fd);

    return c != NULL &&
           (c->state == FOLIO_CONN_HELD || c->state == FOLIO_CONN_HELD_CLOSING);
}

#define FUZZ_FIRST_MAX 4096 /* bytes handed over with a connection */
#define STALL_ROUNDS 64 /* loop turns without progress before it is a hang */

size_t
fuzz_conn_run(const void *p, size_t len, size_t first, size_t chunk, int admin,
              int slow_reader)
{
    static struct folio_buf rep;
    struct folio_worker *w = fuzz_setup();
    const char *b = p;
    size_t off, n;
    ssize_t k;
    int sv[2], size = 4096, eof = 0, stall = 0, progress, sent_eof = 0;
    int code = -1;
    uint64_t served = w->served;

    if (rep.b_data == NULL && folio_buf_init(&rep, 65536, 0) != 0)
        fuzz_fail("no memory");
    folio_buf_reset(&rep);
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
                   sv) != 0)
        fuzz_fail("socketpair: %s", strerror(errno));
    /* Small socket buffers: a reader that lags fills them at once. */
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
    setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
    if (first > len)
        first = len;
    if (first > FUZZ_FIRST_MAX)
        first = FUZZ_FIRST_MAX;
    if (chunk == 0)
        chunk = 1;
    w->now_ms = folio_mono_ms();
    folio_conn_open(w, sv[0], admin ? CONN_ADMIN : 0, b, first);
    off = first;
    while (!eof) {
        progress = 0;
        if (off < len) {
            n = len - off < chunk ? len - off : chunk;
            k = send(sv[1], b + off, n, MSG_NOSIGNAL);
            if (k > 0) {
                off += (size_t)k;
                progress = 1;
            } else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
                off = len; /* the server closed: nothing more to send */
            }
        } else if (!sent_eof) {
            shutdown(sv[1], SHUT_WR);
            sent_eof = 1;
            progress = 1;
        }
        event_base_loop(w->base, EVLOOP_NONBLOCK);
        /* A slow reader reads only when it cannot send. */
        if (!slow_reader || off >= len || !progress) {
            int r = drain(sv[1], &rep);

            if (r < 0)
                eof = 1;
            else if (r > 0)
                progress = 1;
        }
        /* Messages served count too (a connection may yield its turn). */
        if (w->served != served) {
            served = w->served;
            progress = 1;
        }
        if (progress) {
            stall = 0;
        } else if (held(w, sv[0])) {
            /* Its reply waits for the comments writer thread: wait too. */
            event_base_loop(w->base, EVLOOP_ONCE);
        } else if (++stall >= STALL_ROUNDS) {
            struct folio_conn *c = find_conn(w, sv[0]);

            fuzz_fail("connection stalled: %zu of %zu bytes sent%s, "
                      "state %d, flags 0x%x, %zu bytes in, %zu out",
                      off, len, sent_eof ? " and EOF" : "",
                      c != NULL ? (int)c->state : -1, c != NULL ? c->flags : 0,
                      c != NULL ? folio_buf_pending(&c->in) : 0,
                      c != NULL ? folio_buf_pending(&c->out) : 0);
        }
    }
    if (find_conn(w, sv[0]) != NULL)
        fuzz_fail("the server sent EOF but kept the connection");
    close(sv[1]);
    n = fuzz_check_replies(rep.b_data, rep.b_len, &code);
    if (getenv("FUZZ_VERBOSE") != NULL)
        fprintf(stderr,
                "fuzz: %zu bytes in, %zu replies (%zu bytes), first code %d\n",
                len, n, rep.b_len, code);
    return n;
}
