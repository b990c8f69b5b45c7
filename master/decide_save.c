/*
 * decide_save.c - the decisions' state as text, for an upgrade: the old
 * image writes it into the handover (upgrade.c), the new one reads it
 * back before it steps FOLIO_EV_RESUME.  Lines of "key values": the mode,
 * the serving generation, the counters (FOLIO_MASTER_COUNTERS, in their
 * order), a line per live process and per logical worker with restarts
 * pending, then "end".  The format is the handover's (its version in
 * upgrade.c's token): an image reads what the one before it wrote.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master/decide.h"

#define SAVE_MAGIC "folio-dec 1"

size_t
folio_dec_save(const struct folio_dec *d, char *buf, size_t len)
{
    size_t n = 0;
    int i, r;

#define OUT(...)                                                               \
    do {                                                                       \
        r = snprintf(buf + n, len - n, __VA_ARGS__);                           \
        if (r < 0 || (size_t)r >= len - n)                                     \
            return 0;                                                          \
        n += (size_t)r;                                                        \
    } while (0)
    if (d->mode != FOLIO_DM_UPGRADING)
        return 0;
    OUT("%s\n", SAVE_MAGIC);
    /*
     * The mode as it was published before upgrades had one of their own:
     * serving, what every image writes and reads here.
     */
    OUT("mode %d %d %d\n", FOLIO_SS_SERVING, d->ever_ready, d->exit_code);
    OUT("cur %llu %d %u %u\n", (unsigned long long)d->cur.id, d->cur.nworkers,
        d->cur.shutdown_ms, d->cur.worker_timeout_ms);
    OUT("counters");
#define COUNTER(field, key, kind, family, help)                                \
    OUT(" %llu", (unsigned long long)d->field);
    FOLIO_MASTER_COUNTERS(COUNTER)
#undef COUNTER
    OUT("\n");
    for (i = 0; i < FOLIO_MAX_SLOTS; i++) {
        const struct folio_dec_proc *p = &d->procs[i];

        if (!folio_dec_live(d, i))
            continue;
        OUT("proc %d %d %ld %d %llu %llu %llu %llu %d %u %u\n", i, p->state,
            p->pid, p->index, (unsigned long long)p->gen,
            (unsigned long long)p->spawned_ms, (unsigned long long)p->beat_ms,
            (unsigned long long)p->kill_at, p->replaces, p->timeout_ms,
            p->shutdown_ms);
    }
    for (i = 0; i < FOLIO_MAX_WORKERS; i++) {
        const struct folio_dec_index *x = &d->idx[i];

        if (x->fails == 0 && x->fatal == 0 && x->respawn_at == 0)
            continue;
        OUT("index %d %d %d %llu %d %s\n", i, x->fails, x->fatal,
            (unsigned long long)x->respawn_at, x->replaces,
            x->why[0] != '\0' ? x->why : "-");
    }
    OUT("end\n");
#undef OUT
    return n;
}

/* The next number of a "counters" line into *v: 0, or -1. */
static int
next_u64(const char **s, uint64_t *v)
{
    char *end;

    if (**s != ' ' || (*s)[1] < '0' || (*s)[1] > '9')
        return -1;
    *v = strtoull(*s + 1, &end, 10);
    *s = end;
    return 0;
}

/* A process's state, as a saved line may give it: not FREE, not DOWN. */
static int
proc_state(int st)
{
    return st > FOLIO_WS_FREE && st < FOLIO_WS_NSTATES && st != FOLIO_WS_DOWN;
}

int
folio_dec_restore(struct folio_dec *d, const char *text, char *err,
                  size_t errlen)
{
    const char *line = text, *nl;
    unsigned long long a, b, c, e;
    char buf[512];
    int lineno = 0, ended = 0, mode = -1;

    while (*line != '\0' && !ended) {
        size_t n;

        nl = strchr(line, '\n');
        n = nl != NULL ? (size_t)(nl - line) : strlen(line);
        if (n >= sizeof(buf))
            n = sizeof(buf) - 1;
        memcpy(buf, line, n);
        buf[n] = '\0';
        line = nl != NULL ? nl + 1 : line + strlen(line);
        lineno++;
        if (lineno == 1) {
            if (strcmp(buf, SAVE_MAGIC) != 0)
                goto bad;
        } else if (strncmp(buf, "mode ", 5) == 0) {
            if (sscanf(buf, "mode %d %d %d", &mode, &d->ever_ready,
                       &d->exit_code) != 3)
                goto bad;
        } else if (strncmp(buf, "cur ", 4) == 0) {
            if (sscanf(buf, "cur %llu %d %u %u", &a, &d->cur.nworkers,
                       &d->cur.shutdown_ms, &d->cur.worker_timeout_ms) != 4)
                goto bad;
            d->cur.id = a;
        } else if (strncmp(buf, "counters ", 9) == 0) {
            const char *s = buf + 8;

#define COUNTER(field, key, kind, family, help)                                \
    if (next_u64(&s, &d->field) != 0)                                          \
        goto bad;
            FOLIO_MASTER_COUNTERS(COUNTER)
#undef COUNTER
            if (*s != '\0')
                goto bad;
        } else if (strncmp(buf, "proc ", 5) == 0) {
            struct folio_dec_proc p;
            int slot;

            memset(&p, 0, sizeof(p));
            if (sscanf(buf, "proc %d %d %ld %d %llu %llu %llu %llu %d %u %u",
                       &slot, &p.state, &p.pid, &p.index, &a, &b, &c, &e,
                       &p.replaces, &p.timeout_ms, &p.shutdown_ms) != 11 ||
                slot < 0 || slot >= FOLIO_MAX_SLOTS || !proc_state(p.state))
                goto bad;
            p.gen = a;
            p.spawned_ms = b;
            p.beat_ms = c;
            p.kill_at = e;
            d->procs[slot] = p;
        } else if (strncmp(buf, "index ", 6) == 0) {
            struct folio_dec_index x;
            int k, off = 0;

            memset(&x, 0, sizeof(x));
            if (sscanf(buf, "index %d %d %d %llu %d %n", &k, &x.fails, &x.fatal,
                       &a, &x.replaces, &off) != 5 ||
                k < 0 || k >= FOLIO_MAX_WORKERS || off == 0)
                goto bad;
            x.respawn_at = a;
            if (strcmp(buf + off, "-") != 0)
                snprintf(x.why, sizeof(x.why), "%s", buf + off);
            d->idx[k] = x;
        } else if (strcmp(buf, "end") == 0) {
            ended = 1;
        } else {
            goto bad;
        }
    }
    if (!ended || mode != FOLIO_SS_SERVING || d->cur.id == 0) {
        snprintf(err, errlen, "the master's saved state is incomplete");
        return -1;
    }
    /* Taken over in the middle of the upgrade: RESUME goes on with it. */
    d->mode = FOLIO_DM_UPGRADING;
    return 0;
bad:
    snprintf(err, errlen, "the master's saved state, line %d: '%s'", lineno,
             buf);
    return -1;
}
