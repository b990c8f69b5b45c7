/*
 * corpus.c - loading the corpus: read the directory, find or build the
 * image (see corpus_int.h), write it to the cache, map it read-only.
 * Runs in the master at start and at reload (and in tests); the workers
 * inherit the mapping across fork().  Index building is corpus_build.c,
 * queries corpus_query.c.
 */
#include "config.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shm/corpus.h"
#include "shm/corpus_int.h"
#include "src/alloc.h"
#include "src/clock.h"
#include "src/err.h"
#include "src/log.h"

#define MAX_FILES 65536
#define MAX_TEXT 0x7ffffff0u /* libdivsufsort indexes with int32 */

/* A file found in the directory. */
struct src_file {
    char *name;
    uint64_t size;
};

static uint64_t
align64(uint64_t x)
{
    return (x + 63) & ~(uint64_t)63;
}

void
corpus_layout(uint64_t n, uint32_t lines, uint32_t nfiles, uint64_t names_bytes,
              uint64_t nwide, uint64_t nq, struct corpus_layout *l)
{
    uint64_t words = (n + 63) / 64, off = align64(sizeof(struct corpus_hdr));

    l->off_text = off;
    off = align64(off + n);
    l->off_lower = off;
    off = align64(off + n);
    l->off_sa = off;
    off = align64(off + 4 * n);
    l->off_bucket = off;
    off = align64(off + 4 * (CORPUS_BUCKETS + 1));
    l->off_dbase = off;
    off = align64(off + 4 * words);
    l->off_doff = off;
    off = align64(off + 2 * n);
    l->off_dwide = off;
    off = align64(off + 4 * 64 * nwide);
    l->off_nlbits = off;
    off = align64(off + 8 * words);
    l->off_nlrank = off;
    off = align64(off + 4 * words);
    l->off_lstart = off;
    off = align64(off + 4 * ((uint64_t)lines + 1));
    l->off_files = off;
    off = align64(off + sizeof(struct corpus_file) * nfiles);
    l->off_names = off;
    off = align64(off + names_bytes);
    l->off_qkeys = off;
    off = align64(off + sizeof(struct corpus_qkey) * nq);
    l->off_qbits = off;
    off = align64(off + 8 * nq * corpus_qwords(lines));
    l->total = off;
}

void
corpus_bind(struct folio_corpus *c)
{
    const uint8_t *b = c->map;
    const struct corpus_hdr *h = c->map;

    c->hdr = h;
    c->n = (uint32_t)h->h_n;
    c->lines = h->h_lines;
    c->nfiles = h->h_files;
    c->text = b + h->h_off_text;
    c->lower = b + h->h_off_lower;
    c->sa = (const uint32_t *)(const void *)(b + h->h_off_sa);
    c->bucket = (const uint32_t *)(const void *)(b + h->h_off_bucket);
    c->dbase = (const uint32_t *)(const void *)(b + h->h_off_dbase);
    c->doff = (const uint16_t *)(const void *)(b + h->h_off_doff);
    c->dwide = (const uint32_t *)(const void *)(b + h->h_off_dwide);
    c->nlbits = (const uint64_t *)(const void *)(b + h->h_off_nlbits);
    c->nlrank = (const uint32_t *)(const void *)(b + h->h_off_nlrank);
    c->lstart = (const uint32_t *)(const void *)(b + h->h_off_lstart);
    c->files = (const struct corpus_file *)(const void *)(b + h->h_off_files);
    c->names = (const char *)(b + h->h_off_names);
    c->qkeys = (const struct corpus_qkey *)(const void *)(b + h->h_off_qkeys);
    c->nq = (uint32_t)h->h_nq;
    c->qbits = (const uint64_t *)(const void *)(b + h->h_off_qbits);
    c->qwords = corpus_qwords(c->lines);
}

/* A 64-bit hash of the names, sizes and text: the cache key. */
static uint64_t
mix(uint64_t h, uint64_t w)
{
    h ^= w;
    h *= 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 31);
}

static uint64_t
hash_bytes(uint64_t h, const uint8_t *p, size_t len)
{
    uint64_t w;
    size_t i;

    for (i = 0; i + 8 <= len; i += 8) {
        memcpy(&w, p + i, 8);
        h = mix(h, w);
    }
    w = 0;
    memcpy(&w, p + i, len - i);
    return mix(mix(h, w), len);
}

/*
 * The integrity of a cache file: a hash of the image after its header
 * (the index, not only the text, which is compared byte for byte).  A
 * damaged suffix array or line table would otherwise be trusted and read
 * out of bounds by every query.  Four independent lanes: about 20 ms for
 * the whole Shakespeare image.
 */
static uint64_t
image_sum(const uint8_t *p, size_t len)
{
    uint64_t h[4] = {1, 2, 3, 4}, w[4];
    size_t i;
    int k;

    for (i = 0; i + 32 <= len; i += 32) {
        memcpy(w, p + i, 32);
        for (k = 0; k < 4; k++)
            h[k] = (h[k] ^ w[k]) * 0x9e3779b97f4a7c15ull;
    }
    for (k = 0; k < 4; k++)
        h[0] = mix(h[0], h[k] ^ (h[k] >> 29));
    return hash_bytes(h[0], p + i, len - i);
}

static uint64_t
checksum(const struct src_file *f, uint32_t nfiles, const uint8_t *raw,
         uint64_t n)
{
    uint64_t h = 0x666f6c696f000000ull ^ CORPUS_VERSION;
    uint32_t i;

    for (i = 0; i < nfiles; i++) {
        h = hash_bytes(h, (const uint8_t *)f[i].name, strlen(f[i].name));
        h = mix(h, f[i].size);
    }
    return hash_bytes(h, raw, n);
}

static int
cmp_files(const void *a, const void *b)
{
    return strcmp(((const struct src_file *)a)->name,
                  ((const struct src_file *)b)->name);
}

static void
free_files(struct src_file *f, uint32_t n)
{
    uint32_t i;

    if (f == NULL)
        return;
    for (i = 0; i < n; i++)
        folio_free(f[i].name);
    folio_free(f);
}

/* The regular files of dir whose names do not start with '.', sorted. */
static int
list_files(const char *dir, struct src_file **out, uint32_t *nout, char *err,
           size_t errlen)
{
    struct src_file *f = NULL, *nf;
    uint32_t n = 0, cap = 0;
    char path[4096];
    struct dirent *de;
    struct stat st;
    DIR *d;
    int rc = 0;

    if ((d = opendir(dir)) == NULL) {
        snprintf(err, errlen, "corpus directory %s: %s", dir, strerror(errno));
        return errno == ENOENT || errno == ENOTDIR ? FOLIO_ENOTFOUND
                                                   : FOLIO_ESYS;
    }
    while ((errno = 0, de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >=
            (int)sizeof(path))
            continue;
        if (stat(path, &st) != 0) {
            snprintf(err, errlen, "corpus file %s: %s", path, strerror(errno));
            rc = FOLIO_ESYS;
            goto done;
        }
        if (!S_ISREG(st.st_mode))
            continue;
        if (n == MAX_FILES) {
            snprintf(err, errlen, "corpus directory %s: more than %d files",
                     dir, MAX_FILES);
            rc = FOLIO_ETOOBIG;
            goto done;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            if ((nf = folio_realloc(f, cap * sizeof(*f))) == NULL) {
                rc = FOLIO_ENOMEM;
                goto done;
            }
            f = nf;
        }
        if ((f[n].name = folio_strdup(de->d_name)) == NULL) {
            rc = FOLIO_ENOMEM;
            goto done;
        }
        f[n++].size = (uint64_t)st.st_size;
    }
    if (errno != 0) {
        snprintf(err, errlen, "corpus directory %s: %s", dir, strerror(errno));
        rc = FOLIO_ESYS;
        goto done;
    }
    if (n == 0) {
        snprintf(err, errlen, "corpus directory %s has no files", dir);
        rc = FOLIO_ENOTFOUND;
        goto done;
    }
    qsort(f, n, sizeof(*f), cmp_files);
done:
    closedir(d);
    if (rc == FOLIO_ENOMEM)
        snprintf(err, errlen, "out of memory listing %s", dir);
    if (rc != 0) {
        free_files(f, n);
        return rc;
    }
    *out = f;
    *nout = n;
    return 0;
}

/* Read the files into raw, each followed by "\n" (the text section). */
static int
read_files(const char *dir, const struct src_file *f, uint32_t nfiles,
           uint8_t *raw, char *err, size_t errlen)
{
    char path[4096];
    uint64_t off = 0, got;
    ssize_t r;
    uint32_t i;
    int fd;

    for (i = 0; i < nfiles; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, f[i].name);
        if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
            snprintf(err, errlen, "corpus file %s: %s", path, strerror(errno));
            return FOLIO_ESYS;
        }
        for (got = 0; got < f[i].size; got += (uint64_t)r) {
            r = read(fd, raw + off + got, f[i].size - got);
            if (r == -1 && errno == EINTR) {
                r = 0;
                continue;
            }
            if (r <= 0)
                break;
        }
        /* One more byte must be EOF: the file did not grow meanwhile. */
        if (got == f[i].size) {
            char extra;

            r = read(fd, &extra, 1);
        }
        close(fd);
        if (got != f[i].size || r != 0) {
            snprintf(err, errlen, "corpus file %s: %s", path,
                     r < 0 ? strerror(errno) : "changed while being read");
            return FOLIO_ESYS;
        }
        off += f[i].size;
        raw[off++] = '\n';
    }
    return 0;
}

static int
valid_image(const struct folio_corpus *c, uint64_t sum, const uint8_t *raw,
            uint64_t n, const struct src_file *f, uint32_t nfiles)
{
    const struct corpus_hdr *h = c->map;
    struct corpus_layout l;
    uint32_t i;

    if (c->map_len < sizeof(*h) || memcmp(h->h_magic, CORPUS_MAGIC, 8) != 0 ||
        h->h_version != CORPUS_VERSION || h->h_hdr_size != sizeof(*h) ||
        h->h_checksum != sum || h->h_n != n || h->h_files != nfiles ||
        h->h_image_bytes != c->map_len || h->h_lines == 0 || h->h_lines > n ||
        h->h_nwide > n / 64 + 1 || h->h_names_bytes > c->map_len || h->h_nq > n)
        return 0;
    corpus_layout(n, h->h_lines, nfiles, h->h_names_bytes, h->h_nwide, h->h_nq,
                  &l);
    if (l.total != c->map_len || l.off_text != h->h_off_text ||
        l.off_lower != h->h_off_lower || l.off_sa != h->h_off_sa ||
        l.off_bucket != h->h_off_bucket || l.off_dbase != h->h_off_dbase ||
        l.off_doff != h->h_off_doff || l.off_dwide != h->h_off_dwide ||
        l.off_nlbits != h->h_off_nlbits || l.off_nlrank != h->h_off_nlrank ||
        l.off_lstart != h->h_off_lstart || l.off_files != h->h_off_files ||
        l.off_names != h->h_off_names || l.off_qkeys != h->h_off_qkeys ||
        l.off_qbits != h->h_off_qbits)
        return 0;
    if (memcmp((const uint8_t *)c->map + h->h_off_text, raw, n) != 0)
        return 0;
    if (h->h_image_sum != image_sum((const uint8_t *)c->map + sizeof(*h),
                                    c->map_len - sizeof(*h)))
        return 0;
    for (i = 0; i < nfiles; i++) {
        const struct corpus_file *cf =
            (const struct corpus_file *)(const void *)((const uint8_t *)c->map +
                                                       h->h_off_files) +
            i;

        if (cf->cf_bytes != f[i].size ||
            cf->cf_name_len != strlen(f[i].name) ||
            (uint64_t)cf->cf_name_off + cf->cf_name_len > h->h_names_bytes ||
            memcmp((const char *)c->map + h->h_off_names + cf->cf_name_off,
                   f[i].name, cf->cf_name_len) != 0)
            return 0;
    }
    return 1;
}

static void
cache_path(char *buf, size_t len, const char *cache_dir, uint64_t sum)
{
    snprintf(buf, len, "%s/corpus-%016llx.idx", cache_dir,
             (unsigned long long)sum);
}

/* Map a valid cache file for this corpus; 0 if there is none. */
static int
map_cache(struct folio_corpus *c, const char *cache_dir, uint64_t sum,
          const uint8_t *raw, uint64_t n, const struct src_file *f,
          uint32_t nfiles)
{
    char path[4200];
    struct stat st;
    void *p;
    int fd;

    cache_path(path, sizeof(path), cache_dir, sum);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
        return 0;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(struct corpus_hdr)) {
        close(fd);
        return 0;
    }
    p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        folio_log_warn("mmap(%s, %lld)", path, (long long)st.st_size);
        return 0;
    }
    c->map = p;
    c->map_len = (size_t)st.st_size;
    if (!valid_image(c, sum, raw, n, f, nfiles)) {
        folio_log_warnx("corpus cache %s does not match the corpus or is "
                        "damaged: rebuilding it",
                        path);
        munmap(p, c->map_len);
        c->map = NULL;
        c->map_len = 0;
        return 0;
    }
    return 1;
}

/* Remove the other corpus-*.idx files of cache_dir (older versions). */
static void
remove_stale(const char *cache_dir, const char *keep)
{
    char path[4200];
    struct dirent *de;
    size_t len;
    DIR *d;

    if ((d = opendir(cache_dir)) == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        len = strlen(de->d_name);
        if (strncmp(de->d_name, "corpus-", 7) != 0 || len < 11 ||
            strcmp(de->d_name + len - 4, ".idx") != 0 ||
            strcmp(de->d_name, keep) == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", cache_dir, de->d_name);
        if (unlink(path) == 0)
            folio_log_info("removed stale corpus cache %s", path);
    }
    closedir(d);
}

/*
 * Write the built image to the cache and map the file in its place (the
 * page cache then holds the only copy).  0, or -1 (logged; the anonymous
 * image stays).
 */
static int
write_cache(struct folio_corpus *c, const char *cache_dir, uint64_t sum)
{
    char path[4200], tmp[4300];
    const uint8_t *p = c->map;
    size_t off = 0;
    ssize_t w;
    void *m;
    int fd;

    cache_path(path, sizeof(path), cache_dir, sum);
    snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
    if ((fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) ==
        -1) {
        folio_log_warn("corpus cache: open(%s)", tmp);
        return -1;
    }
    while (off < c->map_len) {
        w = write(fd, p + off, c->map_len - off);
        if (w == -1 && errno == EINTR)
            continue;
        if (w <= 0) {
            folio_log_warn("corpus cache: write(%s)", tmp);
            goto fail;
        }
        off += (size_t)w;
    }
    if (fdatasync(fd) != 0) {
        folio_log_warn("corpus cache: fdatasync(%s)", tmp);
        goto fail;
    }
    m = mmap(NULL, c->map_len, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        folio_log_warn("corpus cache: mmap(%s, %zu)", tmp, c->map_len);
        goto fail;
    }
    if (rename(tmp, path) != 0) {
        folio_log_warn("corpus cache: rename(%s, %s)", tmp, path);
        munmap(m, c->map_len);
        goto fail;
    }
    close(fd);
    munmap(c->map, c->map_len);
    c->map = m;
    remove_stale(cache_dir, strrchr(path, '/') + 1);
    return 0;
fail:
    close(fd);
    unlink(tmp);
    return -1;
}

static char *
work_names(const struct src_file *f, uint32_t nfiles, uint64_t *bytes)
{
    uint64_t total = 0;
    uint32_t i;
    char *names, *p;

    for (i = 0; i < nfiles; i++)
        total += strlen(f[i].name);
    if ((names = folio_malloc(total + 1)) == NULL)
        return NULL;
    for (p = names, i = 0; i < nfiles; i++) {
        size_t l = strlen(f[i].name);

        memcpy(p, f[i].name, l);
        p += l;
    }
    *bytes = total;
    return names;
}

/* Build the image in anonymous shared memory from the text in raw. */
static int
build_image(struct folio_corpus *c, const struct src_file *f,
            uint32_t nfiles, const uint8_t *raw, uint64_t n, uint64_t sum,
            char *err, size_t errlen)
{
    struct folio_corpus t;
    struct corpus_layout l;
    struct corpus_hdr *h;
    struct corpus_file *cf;
    uint64_t t0 = folio_mono_ms(), words = (n + 63) / 64, names_bytes = 0,
             nwide, name_off = 0, i;
    uint8_t *lower = NULL, *img;
    uint64_t *nlbits = NULL;
    uint32_t *nlrank = NULL, *lstart = NULL, *sa = NULL, *bucket = NULL,
             *hc = NULL, lines = 0, line, nq;
    struct corpus_qkey *qkeys = NULL;
    int64_t nqk;
    char *names = NULL;
    int rc = FOLIO_ENOMEM;

    memset(&t, 0, sizeof(t));
    if ((lower = folio_malloc(n)) == NULL ||
        (nlbits = folio_calloc(words, 8)) == NULL ||
        (nlrank = folio_malloc(words * 4)) == NULL ||
        (sa = folio_malloc(n * 4)) == NULL ||
        (bucket = folio_malloc(4 * (CORPUS_BUCKETS + 1))) == NULL ||
        (hc = folio_calloc(n, 4)) == NULL ||
        (names = work_names(f, nfiles, &names_bytes)) == NULL) {
        snprintf(err, errlen, "out of memory building the corpus index");
        goto done;
    }
    for (i = 0; i < n; i++) {
        uint8_t b = raw[i];

        lower[i] = b >= 'A' && b <= 'Z' ? (uint8_t)(b + 32) : b;
        if (b == '\n') {
            nlbits[i >> 6] |= (uint64_t)1 << (i & 63);
            lines++;
        }
    }
    for (i = 0, line = 0; i < words; i++) {
        nlrank[i] = line;
        line += (uint32_t)__builtin_popcountll(nlbits[i]);
    }
    if ((lstart = folio_malloc(4 * ((uint64_t)lines + 1))) == NULL) {
        snprintf(err, errlen, "out of memory building the corpus index");
        goto done;
    }
    lstart[0] = 0;
    for (i = 0, line = 1; i < n; i++)
        if (raw[i] == '\n')
            lstart[line++] = (uint32_t)(i + 1);

    t.n = (uint32_t)n;
    t.lines = lines;
    t.text = raw;
    t.lower = lower;
    t.sa = sa;
    t.bucket = bucket;
    t.nlbits = nlbits;
    t.nlrank = nlrank;
    t.lstart = lstart;
    if ((rc = corpus_build_sa_h(&t, hc, err, errlen)) != 0)
        goto done;
    nwide = corpus_wide_blocks(hc, (uint32_t)n);
    /* Line bitmaps for the broadest keys, within half the text's size. */
    if ((nqk = corpus_choose_qkeys(&t, n / 2, &qkeys)) < 0) {
        snprintf(err, errlen, "out of memory building the corpus index");
        rc = FOLIO_ENOMEM;
        goto done;
    }
    nq = (uint32_t)nqk;

    corpus_layout(n, lines, nfiles, names_bytes, nwide, nq, &l);
    img = mmap(NULL, l.total, PROT_READ | PROT_WRITE,
               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (img == MAP_FAILED) {
        folio_log_warn("mmap(MAP_SHARED|MAP_ANONYMOUS, %llu)",
                       (unsigned long long)l.total);
        snprintf(err, errlen, "cannot map %llu bytes for the corpus index",
                 (unsigned long long)l.total);
        rc = FOLIO_ENOMEM;
        goto done;
    }
    c->map = img;
    c->map_len = l.total;
    h = (struct corpus_hdr *)(void *)img;
    memcpy(h->h_magic, CORPUS_MAGIC, 8);
    h->h_version = CORPUS_VERSION;
    h->h_hdr_size = sizeof(*h);
    h->h_checksum = sum;
    h->h_image_bytes = l.total;
    h->h_n = n;
    h->h_file_bytes = n - nfiles;
    h->h_files = nfiles;
    h->h_lines = lines;
    h->h_nwide = nwide;
    h->h_off_text = l.off_text;
    h->h_off_lower = l.off_lower;
    h->h_off_sa = l.off_sa;
    h->h_off_bucket = l.off_bucket;
    h->h_off_dbase = l.off_dbase;
    h->h_off_doff = l.off_doff;
    h->h_off_dwide = l.off_dwide;
    h->h_off_nlbits = l.off_nlbits;
    h->h_off_nlrank = l.off_nlrank;
    h->h_off_lstart = l.off_lstart;
    h->h_off_files = l.off_files;
    h->h_off_names = l.off_names;
    h->h_names_bytes = names_bytes;
    h->h_nq = nq;
    h->h_off_qkeys = l.off_qkeys;
    h->h_off_qbits = l.off_qbits;
    if (nq > 0)
        memcpy(img + l.off_qkeys, qkeys, sizeof(*qkeys) * nq);
    memcpy(img + l.off_text, raw, n);
    memcpy(img + l.off_lower, lower, n);
    memcpy(img + l.off_sa, sa, 4 * n);
    memcpy(img + l.off_bucket, bucket, 4 * (CORPUS_BUCKETS + 1));
    memcpy(img + l.off_nlbits, nlbits, 8 * words);
    memcpy(img + l.off_nlrank, nlrank, 4 * words);
    memcpy(img + l.off_lstart, lstart, 4 * ((uint64_t)lines + 1));
    memcpy(img + l.off_names, names, names_bytes);
    cf = (struct corpus_file *)(void *)(img + l.off_files);
    for (i = 0, line = 0; i < nfiles; i++) {
        uint64_t off = i == 0 ? 0 : cf[i - 1].cf_offset + cf[i - 1].cf_bytes + 1;
        size_t nl = strlen(f[i].name);

        cf[i].cf_first_line = line;
        cf[i].cf_offset = off;
        cf[i].cf_bytes = f[i].size;
        cf[i].cf_name_off = (uint32_t)name_off;
        cf[i].cf_name_len = (uint32_t)nl;
        cf[i].cf_work_len =
            nl > 4 && strcmp(f[i].name + nl - 4, ".txt") == 0 ? (uint32_t)nl - 4
                                                              : (uint32_t)nl;
        name_off += nl;
        /* lines of this file: the terminators in [off, off+bytes] */
        cf[i].cf_lines = corpus_line_of(&t, (uint32_t)(off + f[i].size)) + 1 -
                         line;
        line += cf[i].cf_lines;
    }
    corpus_bind(c);
    corpus_fill_d(c, hc);
    corpus_fill_qbits(c);
    h->h_build_ms = folio_mono_ms() - t0;
    h->h_image_sum =
        image_sum((const uint8_t *)c->map + sizeof(*h), c->map_len - sizeof(*h));
    rc = 0;
done:
    folio_free(lower);
    folio_free(nlbits);
    folio_free(nlrank);
    folio_free(lstart);
    folio_free(sa);
    folio_free(bucket);
    folio_free(hc);
    folio_free(names);
    folio_free(qkeys);
    return rc;
}

/* shipped: the index must come from cache_dir; never build or write. */
static int
corpus_open(const char *dir, const char *cache_dir, int shipped,
            struct folio_corpus **out, char *err, size_t errlen)
{
    struct folio_corpus *c = NULL;
    struct src_file *f = NULL;
    uint32_t nfiles = 0, i;
    uint64_t t0 = folio_mono_ms(), n = 0, sum;
    uint8_t *raw = NULL;
    int rc;

    *out = NULL;
    if ((rc = list_files(dir, &f, &nfiles, err, errlen)) != 0)
        return rc;
    for (i = 0; i < nfiles; i++) {
        n += f[i].size + 1;
        if (n > MAX_TEXT) {
            snprintf(err, errlen, "corpus %s is over 2 GiB", dir);
            rc = FOLIO_ETOOBIG;
            goto fail;
        }
    }
    if ((c = folio_calloc(1, sizeof(*c))) == NULL ||
        (c->dir = folio_strdup(dir)) == NULL ||
        (raw = folio_malloc(n)) == NULL) {
        snprintf(err, errlen, "out of memory reading corpus %s", dir);
        rc = FOLIO_ENOMEM;
        goto fail;
    }
    if ((rc = read_files(dir, f, nfiles, raw, err, errlen)) != 0)
        goto fail;
    sum = checksum(f, nfiles, raw, n);
    if (cache_dir != NULL && map_cache(c, cache_dir, sum, raw, n, f, nfiles)) {
        c->from_cache = 1;
    } else if (shipped) {
        snprintf(err, errlen,
                 "corpus %s is not the one the shipped index was built "
                 "from (no valid %s/corpus-%016llx.idx): serve the same "
                 "corpus on every host, or build the data again",
                 dir, cache_dir, (unsigned long long)sum);
        rc = FOLIO_ECORRUPT;
        goto fail;
    } else {
        if ((rc = build_image(c, f, nfiles, raw, n, sum, err, errlen)) != 0)
            goto fail;
        if (cache_dir == NULL || write_cache(c, cache_dir, sum) != 0) {
            if (mprotect(c->map, c->map_len, PROT_READ) != 0)
                folio_log_warn("mprotect(corpus image, PROT_READ)");
        }
    }
    corpus_bind(c);
    c->load_ms = folio_mono_ms() - t0;
    folio_free(raw);
    free_files(f, nfiles);
    *out = c;
    return 0;
fail:
    folio_free(raw);
    free_files(f, nfiles);
    folio_corpus_free(c);
    return rc;
}

int
folio_corpus_open(const char *dir, const char *cache_dir,
                  struct folio_corpus **out, char *err, size_t errlen)
{
    return corpus_open(dir, cache_dir, 0, out, err, errlen);
}

int
folio_corpus_open_shipped(const char *dir, const char *cache_dir,
                          struct folio_corpus **out, char *err, size_t errlen)
{
    return corpus_open(dir, cache_dir, 1, out, err, errlen);
}

void
folio_corpus_free(struct folio_corpus *c)
{
    if (c == NULL)
        return;
    if (c->map != NULL)
        munmap(c->map, c->map_len);
    folio_free(c->dir);
    folio_free(c);
}

void
folio_corpus_prefault(const struct folio_corpus *c)
{
#ifdef MADV_POPULATE_READ
    if (madvise(c->map, c->map_len, MADV_POPULATE_READ) == 0)
        return;
#endif
    /* older kernels: touch one byte per page */
    {
        const volatile uint8_t *p = c->map;
        size_t i;
        uint8_t sink = 0;

        for (i = 0; i < c->map_len; i += 4096)
            sink ^= p[i];
        (void)sink;
    }
}

void
folio_corpus_info(const struct folio_corpus *c, struct folio_corpus_info *o)
{
    o->files = c->nfiles;
    o->lines = c->lines;
    o->bytes = c->hdr->h_file_bytes;
    o->index_bytes = c->map_len;
    o->checksum = c->hdr->h_checksum;
    o->build_ms = c->hdr->h_build_ms;
    o->load_ms = c->load_ms;
    o->from_cache = c->from_cache;
    o->dir = c->dir;
}

const char *
folio_corpus_work(const struct folio_corpus *c, uint32_t i, uint32_t *len)
{
    *len = c->files[i].cf_work_len;
    return c->names + c->files[i].cf_name_off;
}
