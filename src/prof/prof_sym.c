/*
 * prof_sym.c - the symbolizer (see prof.h): the addresses of profiles to
 * functions, files and lines, with elfutils' libdw.  Each address gets one
 * location with a line per frame inlined there, innermost first (what
 * `eu-addr2line -i` prints); names come from the DWARF of the module,
 * else its ELF symbols, else "file+0xSTART": the start of the function
 * around it, from its unwind table, so that the samples of one static
 * function of a stripped library add up under one name.
 *
 * The master names its workers' profiles: they are its forks, so a
 * mapping of theirs is one of its own (same file, same build id, same
 * place) and libdw reads it from this process's view of its files
 * (dwfl_linux_proc_report, which also finds a replaced executable through
 * /proc/self/exe and the vDSO in memory).  A mapping it lacks (a library
 * a worker loaded itself, a worker of an older binary) is read from the
 * file on disk, if its build id is the mapping's.
 *
 * Everything is kept between profiles: libdw's view of each file (the
 * costly part: reading a module's DWARF for the first address in it), and
 * every address named, by file and offset, in a profile of its own that
 * only serves as the table (`cache`).  A profile costs the lookups of
 * the addresses no earlier one had.
 *
 * Debug files are looked up by build id under /usr/lib/debug only: never
 * over the network (libdw's standard callback would ask debuginfod when
 * DEBUGINFOD_URLS is set, stalling the master on a download).
 */
#include "config.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/alloc.h"
#include "src/clock.h"
#include "src/err.h"
#include "src/hash.h"
#include "src/prof/pprof.h"
#include "src/prof/prof.h"
#include "src/prof/prof_int.h"

#define MAX_MAPS 512
#define MAX_FILES 64          /* files read from disk, kept */
#define MAX_INLINE 16
#define CACHE_MAX (1u << 18)  /* addresses kept; beyond, start again */

/* An open-addressing table of 64-bit keys to indices + 1 (0: empty). */
struct table {
    uint64_t *key;
    uint32_t *val;
    uint32_t mask, used;
};

/* One executable mapping of this process, to match a profile's against. */
struct own_map {
    uint64_t start, limit, offset;
    char build_id[132];
};

/* A file read from disk: one not mapped here as the profile's was. */
struct file {
    char *key; /* its build id, else its path */
    Dwfl *dwfl;
    Dwfl_Module *mod; /* NULL: see why */
    const char *why;
};

struct folio_prof_syms {
    Dwfl *own;        /* this process's files */
    uint64_t own_sig; /* of the mappings it was reported with */
    struct own_map own_maps[MAX_MAPS];
    uint32_t nown;
    struct folio_pprof cache; /* every address named: its lines */
    uint8_t *fallback;        /* per cache location: named file+0x... */
    uint32_t fallback_cap;
    struct table keys;        /* file << 40 | offset -> cache location */
    struct table cache_fns;   /* (name, file) -> cache function */
    struct file files[MAX_FILES];
    uint32_t nfiles;
};

/* One mapping of the profile being named. */
struct resolver {
    Dwfl_Module *mod; /* NULL: only fallback names */
    uint64_t delta;   /* the module's address = the profile's + delta */
    uint32_t file;    /* the cache's string naming the file */
    const char *why;  /* no module: why, for the profile's comment */
    uint32_t unnamed; /* addresses of it named file+0x... in this profile */
    int used;
};

static uint64_t lookups; /* folio_prof_sym_lookups */
static int atfork_set;

static void
forked(void)
{
    lookups = 0;
}

/* Debug files by build id, locally; never debuginfod (see above). */
static int
find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
               Dwarf_Addr base, const char *file_name,
               const char *debuglink_file, GElf_Word debuglink_crc,
               char **debuginfo_file_name)
{
    return dwfl_build_id_find_debuginfo(mod, userdata, modname, base,
                                        file_name, debuglink_file,
                                        debuglink_crc, debuginfo_file_name);
}

/*
 * The ELF file of a module; the main executable through /proc/self/exe
 * when it was replaced on disk (a reload that picked up a new foliod:
 * the maps say "foliod (deleted)", the kernel still has the old one).
 */
static int
find_elf(Dwfl_Module *mod, void **userdata, const char *modname,
         Dwarf_Addr base, char **file_name, Elf **elfp)
{
    static const char deleted[] = " (deleted)";
    size_t n = modname != NULL ? strlen(modname) : 0;
    uintptr_t self = (uintptr_t)(void *)&find_elf;
    Dwarf_Addr lo = 0, hi = 0;
    int fd;

    if (n > sizeof(deleted) - 1 &&
        strcmp(modname + n - (sizeof(deleted) - 1), deleted) == 0 &&
        dwfl_module_info(mod, NULL, &lo, &hi, NULL, NULL, NULL, NULL) !=
            NULL &&
        self >= lo && self < hi &&
        (fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC)) != -1) {
        *elfp = NULL;
        return fd;
    }
    return dwfl_linux_proc_find_elf(mod, userdata, modname, base, file_name,
                                    elfp);
}

static char *debuginfo_path;

static const Dwfl_Callbacks callbacks = {
    .find_elf = find_elf,
    .find_debuginfo = find_debuginfo,
    .debuginfo_path = &debuginfo_path,
};

static int
table_init(struct table *t, uint32_t cap)
{
    t->mask = cap - 1;
    t->used = 0;
    t->key = folio_calloc(cap, sizeof(*t->key));
    t->val = folio_calloc(cap, sizeof(*t->val));
    return t->key != NULL && t->val != NULL ? 0 : FOLIO_ENOMEM;
}

static void
table_free(struct table *t)
{
    folio_free(t->key);
    folio_free(t->val);
    memset(t, 0, sizeof(*t));
}

static uint32_t
table_home(uint64_t key, uint32_t mask)
{
    return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 40) & mask;
}

/* The index of `key`, or -1 with *slot where it goes. */
static int64_t
table_get(const struct table *t, uint64_t key, uint32_t *slot)
{
    uint32_t k = table_home(key, t->mask);

    while (t->val[k] != 0 && t->key[k] != key)
        k = (k + 1) & t->mask;
    *slot = k;
    return (int64_t)t->val[k] - 1;
}

/* Put key -> index at `slot` (from table_get); doubles when half full. */
static int
table_put(struct table *t, uint32_t slot, uint64_t key, uint32_t index)
{
    struct table n;
    uint32_t i, k;

    t->key[slot] = key;
    t->val[slot] = index + 1;
    if (++t->used * 2 <= t->mask)
        return 0;
    if (table_init(&n, (t->mask + 1) * 2) != 0) {
        table_free(&n);
        return FOLIO_ENOMEM;
    }
    for (i = 0; i <= t->mask; i++) {
        if (t->val[i] == 0)
            continue;
        for (k = table_home(t->key[i], n.mask); n.val[k] != 0;
             k = (k + 1) & n.mask)
            ;
        n.key[k] = t->key[i];
        n.val[k] = t->val[i];
    }
    n.used = t->used;
    table_free(t);
    *t = n;
    return 0;
}

/* The function named `name` in `file` of p, added once (table fns). */
static int64_t
function(struct folio_pprof *p, struct table *fns, const char *name,
         const char *file, int64_t start_line)
{
    int64_t n = folio_pprof_cstr(p, name), f = folio_pprof_cstr(p, file);
    int64_t v;
    uint64_t key;
    uint32_t slot;
    int idx;

    if (n < 0 || f < 0)
        return FOLIO_ENOMEM;
    key = ((uint64_t)n << 32) | (uint64_t)f;
    if ((v = table_get(fns, key, &slot)) >= 0)
        return v;
    if ((idx = folio_pprof_add_function(p, name, file, start_line)) < 0)
        return idx;
    return table_put(fns, slot, key, (uint32_t)idx) != 0 ? FOLIO_ENOMEM : idx;
}

/* ------------------------------------------------------------------ */
/* DWARF                                                               */

static const char *
die_name(Dwarf_Die *die)
{
    Dwarf_Attribute a;
    const char *n;

    if (dwarf_attr_integrate(die, DW_AT_name, &a) != NULL &&
        (n = dwarf_formstring(&a)) != NULL)
        return n;
    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) != NULL &&
        (n = dwarf_formstring(&a)) != NULL)
        return n;
    return NULL;
}

static int64_t
die_udata(Dwarf_Die *die, unsigned at)
{
    Dwarf_Attribute a;
    Dwarf_Word w;

    if (dwarf_attr(die, at, &a) == NULL || dwarf_formudata(&a, &w) != 0)
        return 0;
    return (int64_t)w;
}

/* One frame of an inline chain, before it becomes a pprof line. */
struct frame {
    const char *name, *file;
    int64_t line, start;
    char path[1024]; /* file made absolute, when it is relative */
};

/* A function's file as the build saw it: relative to the CU's directory. */
static const char *
frame_file(Dwarf_Die *cu, Dwarf_Die *die, struct frame *fr)
{
    Dwarf_Attribute a;
    const char *f = dwarf_decl_file(die), *dir;

    if (f == NULL)
        return "";
    if (f[0] == '/' || dwarf_attr(cu, DW_AT_comp_dir, &a) == NULL ||
        (dir = dwarf_formstring(&a)) == NULL)
        return f;
    snprintf(fr->path, sizeof(fr->path), "%s/%s", dir, f);
    return fr->path;
}

/*
 * The frames at `addr` from the DWARF: the innermost function at the
 * line table's line, then each function it is inlined into, at the call
 * site.  Returns how many (0: no DWARF here).
 */
static int
dwarf_frames(Dwfl_Module *mod, Dwarf_Addr addr, struct frame *fr)
{
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu, *scopes = NULL, inner;
    Dwfl_Line *ln;
    int nscopes, i, n = 0, l = 0, dl, found = 0;
    int64_t line = 0;

    if ((cu = dwfl_module_addrdie(mod, addr, &bias)) == NULL)
        return 0;
    if ((ln = dwfl_module_getsrc(mod, addr)) != NULL &&
        dwfl_lineinfo(ln, NULL, &l, NULL, NULL, NULL) != NULL)
        line = l;
    /* The innermost function at addr (past lexical blocks)... */
    if ((nscopes = dwarf_getscopes(cu, addr - bias, &scopes)) <= 0)
        return 0;
    for (i = 0; i < nscopes && !found; i++) {
        int tag = dwarf_tag(&scopes[i]);

        if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
            tag == DW_TAG_entry_point) {
            inner = scopes[i];
            found = 1;
        }
    }
    free(scopes);
    scopes = NULL;
    /*
     * ...and what physically contains it: dwarf_getscopes continues an
     * inlined instance with its abstract origin's scopes, where
     * dwarf_getscopes_die gives the functions it was inlined into.
     */
    if (!found || (nscopes = dwarf_getscopes_die(&inner, &scopes)) <= 0)
        return 0;
    for (i = 0; i < nscopes && n < MAX_INLINE; i++) {
        int tag = dwarf_tag(&scopes[i]);
        const char *name;

        if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine &&
            tag != DW_TAG_entry_point)
            continue;
        name = die_name(&scopes[i]);
        fr[n].name = name != NULL ? name : "??";
        fr[n].file = frame_file(cu, &scopes[i], &fr[n]);
        fr[n].start = dwarf_decl_line(&scopes[i], &dl) == 0 ? dl : 0;
        fr[n].line = line;
        n++;
        if (tag != DW_TAG_inlined_subroutine)
            break; /* a function of its own: the chain ends */
        /* The function it is inlined into is at its call site. */
        line = die_udata(&scopes[i], DW_AT_call_line);
    }
    free(scopes);
    return n;
}

/* ------------------------------------------------------------------ */
/* The files                                                           */

static int
collect_own(void *arg, const struct folio_prof_map *m)
{
    struct folio_prof_syms *s = arg;
    struct own_map *o;

    if (s->nown == MAX_MAPS)
        return 1;
    o = &s->own_maps[s->nown++];
    o->start = m->start;
    o->limit = m->limit;
    o->offset = m->offset;
    snprintf(o->build_id, sizeof(o->build_id), "%s", m->build_id);
    return 0;
}

/* This process's mappings, and libdw's view of them if they changed. */
/* Forget the files read from disk (binaries of long ago, at most). */
static void
files_free(struct folio_prof_syms *s)
{
    uint32_t i;

    for (i = 0; i < s->nfiles; i++) {
        folio_free(s->files[i].key);
        if (s->files[i].dwfl != NULL)
            dwfl_end(s->files[i].dwfl);
    }
    s->nfiles = 0;
}

static void
own_refresh(struct folio_prof_syms *s)
{
    uint64_t sig = 1469598103934665603ull;
    uint32_t i;

    s->nown = 0;
    folio_prof_each_map(collect_own, s);
    for (i = 0; i < s->nown; i++) {
        sig = (sig ^ folio_fnv1a64(&s->own_maps[i].start, 24)) *
              0x100000001b3ull;
        sig ^= folio_fnv1a64(s->own_maps[i].build_id,
                             strlen(s->own_maps[i].build_id));
    }
    if (s->own != NULL && sig == s->own_sig)
        return;
    if (s->own == NULL && (s->own = dwfl_begin(&callbacks)) == NULL)
        return;
    /* Modules reported again as they were keep what libdw read of them. */
    dwfl_report_begin(s->own);
    if (dwfl_linux_proc_report(s->own, getpid()) != 0 ||
        dwfl_report_end(s->own, NULL, NULL) != 0) {
        dwfl_end(s->own);
        s->own = NULL;
        return;
    }
    s->own_sig = sig;
}

static const struct own_map *
own_match(const struct folio_prof_syms *s, uint64_t start, uint64_t limit,
          uint64_t offset, const char *build_id)
{
    uint32_t i;

    for (i = 0; i < s->nown; i++)
        if (s->own_maps[i].start == start && s->own_maps[i].limit == limit &&
            s->own_maps[i].offset == offset &&
            strcmp(s->own_maps[i].build_id, build_id) == 0)
            return &s->own_maps[i];
    return NULL;
}

/* The file at `path` with build id `build` (or "" for any), read once. */
static struct file *
file_open(struct folio_prof_syms *s, const char *path, const char *build)
{
    const char *key = build[0] != '\0' ? build : path;
    const unsigned char *bits;
    GElf_Addr vaddr;
    struct file *f;
    char hexid[132];
    uint32_t i;
    int n;

    static struct file full = {NULL, NULL, NULL, "more files than are kept"};

    for (i = 0; i < s->nfiles; i++)
        if (strcmp(s->files[i].key, key) == 0)
            return &s->files[i];
    if (s->nfiles == MAX_FILES)
        return &full; /* folio_prof_symbolize makes room before the next */
    f = &s->files[s->nfiles];
    memset(f, 0, sizeof(*f));
    if ((f->key = folio_malloc(strlen(key) + 1)) == NULL)
        return NULL;
    memcpy(f->key, key, strlen(key) + 1);
    s->nfiles++;
    if (path[0] != '/') {
        f->why = "not a file";
        return f;
    }
    if ((f->dwfl = dwfl_begin(&callbacks)) == NULL) {
        f->why = "libdw failed";
        return f;
    }
    dwfl_report_begin(f->dwfl);
    /* At 0: the module's addresses are the file's own. */
    f->mod = dwfl_report_elf(f->dwfl, path, path, -1, 0, false);
    dwfl_report_end(f->dwfl, NULL, NULL);
    if (f->mod == NULL) {
        f->why = "cannot be read";
        return f;
    }
    hexid[0] = '\0';
    if (dwfl_module_getelf(f->mod, &vaddr) != NULL &&
        (n = dwfl_module_build_id(f->mod, &bits, &vaddr)) > 0 && n <= 64) {
        int k;

        for (k = 0; k < n; k++)
            snprintf(hexid + 2 * k, 3, "%02x", bits[k]);
    }
    if (build[0] != '\0' && strcmp(hexid, build) != 0) {
        f->mod = NULL;
        f->why = "the file on disk is another build";
    }
    return f;
}

/*
 * How to name the addresses of mapping mi of p: in this process, else
 * in its file on disk (the file's address of the segment the mapping
 * holds, from its program headers).
 */
static int
resolve_mapping(struct folio_prof_syms *s, const struct folio_pprof *p,
                uint32_t mi, struct resolver *r)
{
    const struct folio_pprof_mapping *m = &p->mappings[mi];
    const char *path = folio_pprof_text(p, m->file);
    const char *build = folio_pprof_text(p, m->build_id);
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    struct file *f;
    GElf_Addr bias;
    size_t nph, i;
    int64_t id;
    Elf *e;

    memset(r, 0, sizeof(*r));
    if ((id = folio_pprof_cstr(&s->cache, build[0] != '\0' ? build : path)) <
        0)
        return FOLIO_ENOMEM;
    r->file = (uint32_t)id;
    if (own_match(s, m->start, m->limit, m->offset, build) != NULL) {
        r->mod = s->own != NULL ? dwfl_addrmodule(s->own, m->start) : NULL;
        if (r->mod == NULL)
            r->why = "libdw does not see it";
        return 0;
    }
    if ((f = file_open(s, path, build)) == NULL)
        return FOLIO_ENOMEM;
    if (f->mod == NULL) {
        r->why = f->why;
        return 0;
    }
    r->why = "no segment of the file is mapped there";
    if ((e = dwfl_module_getelf(f->mod, &bias)) == NULL ||
        elf_getphdrnum(e, &nph) != 0)
        return 0;
    for (i = 0; i < nph; i++) {
        GElf_Phdr ph;

        if (gelf_getphdr(e, (int)i, &ph) == NULL || ph.p_type != PT_LOAD ||
            !(ph.p_flags & PF_X) || (ph.p_offset & ~(page - 1)) != m->offset)
            continue;
        /* file offset = a - start + offset; its address there: */
        r->delta = m->offset - m->start - ph.p_offset + ph.p_vaddr + bias;
        r->mod = f->mod;
        r->why = NULL;
        break;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Naming one address                                                  */

/*
 * No DWARF: the ELF symbol, or the start of the function (its frame
 * description's) as file+0xSTART, or the address itself so.
 */
static const char *
fallback_name(Dwfl_Module *mod, Dwarf_Addr a, const char *path, char *buf,
              size_t len, int *unnamed)
{
    const char *base = strrchr(path, '/'), *name;
    Dwarf_Addr bias = 0, cbias = 0, lo = a, hi;
    Dwarf_Frame *frame;
    Dwarf_CFI *cfi;
    GElf_Off off = 0;
    GElf_Sym sym;

    *unnamed = 0;
    if (mod != NULL && (name = dwfl_module_addrinfo(mod, a, &off, &sym, NULL,
                                                    NULL, NULL)) != NULL)
        return name;
    *unnamed = 1;
    base = base != NULL ? base + 1 : path[0] != '\0' ? path : "??";
    if (mod != NULL) {
        dwfl_module_getelf(mod, &bias);
        if ((cfi = dwfl_module_eh_cfi(mod, &cbias)) != NULL &&
            dwarf_cfi_addrframe(cfi, a - cbias, &frame) == 0) {
            if (dwarf_frame_info(frame, &lo, &hi, NULL) >= 0)
                lo += cbias;
            else
                lo = a;
            free(frame);
        }
    }
    snprintf(buf, len, "%.*s+0x%" PRIx64, (int)strcspn(base, " "), base,
             (uint64_t)(lo - bias));
    return buf;
}

/* The frames at the profile's address `addr`, into the cache: its index. */
static int64_t
cache_add(struct folio_prof_syms *s, struct resolver *r, const char *path,
          uint64_t addr, uint64_t fileoff)
{
    struct folio_pprof_line lines[MAX_INLINE];
    struct frame fr[MAX_INLINE];
    Dwarf_Addr a = addr + r->delta;
    char fallback[320];
    int n = 0, i, idx, unnamed = 0;
    int64_t fn;

    if (r->mod != NULL)
        n = dwarf_frames(r->mod, a, fr);
    if (n == 0) {
        fr[0].name = fallback_name(r->mod, a, path, fallback,
                                   sizeof(fallback), &unnamed);
        fr[0].file = "";
        fr[0].line = 0;
        fr[0].start = 0;
        n = 1;
    }
    for (i = 0; i < n; i++) {
        if ((fn = function(&s->cache, &s->cache_fns, fr[i].name, fr[i].file,
                           fr[i].start)) < 0)
            return FOLIO_ENOMEM;
        lines[i].fn = (uint32_t)fn;
        lines[i].line = fr[i].line;
    }
    if ((idx = folio_pprof_add_location(&s->cache, 0, fileoff, lines,
                                        (uint32_t)n)) < 0)
        return idx;
    if ((uint32_t)idx >= s->fallback_cap) {
        uint32_t cap = s->fallback_cap ? s->fallback_cap * 2 : 4096;
        uint8_t *nf = folio_realloc(s->fallback, cap);

        if (nf == NULL)
            return FOLIO_ENOMEM;
        s->fallback = nf;
        s->fallback_cap = cap;
    }
    s->fallback[idx] = (uint8_t)unnamed;
    return idx;
}

/* Location `li` of p (no lines yet) named: lines copied from the cache. */
static int
name_location(struct folio_prof_syms *s, struct folio_pprof *p,
              struct table *fns, uint32_t li, struct resolver *r,
              unsigned *from_cache)
{
    const struct folio_pprof_mapping *m =
        &p->mappings[p->locations[li].mapping - 1];
    uint64_t addr = p->locations[li].address;
    uint64_t fileoff = addr - m->start + m->offset, key = 0;
    struct folio_pprof_line lines[MAX_INLINE];
    const struct folio_pprof_location *c;
    uint32_t slot = 0, k;
    int cacheable = r->file < (1u << 24) && fileoff < (1ull << 40);
    int64_t ci = -1, fn;

    lookups++;
    if (cacheable) {
        key = (uint64_t)r->file << 40 | fileoff;
        ci = table_get(&s->keys, key, &slot);
    }
    if (ci >= 0) {
        (*from_cache)++;
    } else {
        if ((ci = cache_add(s, r, folio_pprof_text(p, m->file), addr,
                            fileoff)) < 0)
            return (int)ci;
        if (cacheable && table_put(&s->keys, slot, key, (uint32_t)ci) != 0)
            return FOLIO_ENOMEM;
    }
    c = &s->cache.locations[ci];
    r->unnamed += s->fallback[ci];
    for (k = 0; k < c->nline && k < MAX_INLINE; k++) {
        const struct folio_pprof_line *cl = &s->cache.lines[c->line + k];
        const struct folio_pprof_function *cf = &s->cache.functions[cl->fn];

        if ((fn = function(p, fns, folio_pprof_text(&s->cache, cf->name),
                           folio_pprof_text(&s->cache, cf->file),
                           cf->start_line)) < 0)
            return FOLIO_ENOMEM;
        lines[k].fn = (uint32_t)fn;
        lines[k].line = cl->line;
    }
    return folio_pprof_set_lines(p, li, lines, k);
}

/* ------------------------------------------------------------------ */
/* Profiles                                                            */

/* The allocator's entry points: heap stacks start at their caller. */
static int
is_alloc_fn(const char *name)
{
    static const char *const fns[] = {
        "malloc",        "calloc",       "realloc",     "free",
        "memalign",      "posix_memalign", "aligned_alloc", "valloc",
        "pvalloc",       "folio_malloc", "folio_calloc", "folio_realloc",
    };
    size_t i;

    for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
        if (strcmp(name, fns[i]) == 0)
            return 1;
    return 0;
}

/* The outermost function name of location `loc` ("" if none). */
static const char *
outer_name(const struct folio_pprof *p, uint32_t loc)
{
    const struct folio_pprof_location *l = &p->locations[loc];
    const struct folio_pprof_line *ln;

    if (l->nline == 0)
        return "";
    ln = &p->lines[l->line + l->nline - 1];
    return ln->fn < p->nfunctions
               ? folio_pprof_text(p, p->functions[ln->fn].name)
               : "";
}

/* Each stack starts at the allocator's caller. */
static void
trim_alloc(struct folio_pprof *p)
{
    uint32_t i, skip;

    for (i = 0; i < p->nsamples; i++) {
        struct folio_pprof_sample *sm = &p->samples[i];

        for (skip = 0; skip < sm->nstack &&
                       is_alloc_fn(outer_name(p, p->stack[sm->stack + skip]));
             skip++)
            ;
        if (skip < sm->nstack) {
            sm->stack += skip;
            sm->nstack -= skip;
        }
    }
}

/* What naming cost, and the files that had no names to give. */
static int
comments(struct folio_pprof *p, const struct resolver *res, unsigned named,
         unsigned from_cache, uint64_t ns)
{
    uint32_t i, k;

    if (named > 0 &&
        folio_pprof_add_comment(
            p,
            "# symbols: %u addresses named by pid %ld (the master): %u "
            "from its table, %u looked up in %.1f ms",
            named, (long)getpid(), from_cache, named - from_cache,
            (double)ns / 1e6) < 0)
        return FOLIO_ENOMEM;
    for (i = 0; i < p->nmappings; i++) {
        const struct resolver *r = &res[i];
        const char *path = folio_pprof_text(p, p->mappings[i].file);
        int seen = 0;

        if (!r->used)
            continue;
        /* Once per file: a file may have more than one mapping. */
        for (k = 0; k < i && !seen; k++)
            seen = res[k].used && p->mappings[k].file == p->mappings[i].file;
        if (seen)
            continue;
        if (r->mod == NULL && r->why != NULL) {
            if (folio_pprof_add_comment(
                    p, "%s (build id %s): %s: its addresses are not named",
                    path, folio_pprof_text(p, p->mappings[i].build_id),
                    r->why) < 0)
                return FOLIO_ENOMEM;
        } else if (r->unnamed > 0 &&
                   folio_pprof_add_comment(
                       p,
                       "%s: %u addresses without a symbol (static functions "
                       "of a stripped file; its debug symbols would name "
                       "them: Debian's -dbgsym package) shown as "
                       "file+0xSTART, the function's start",
                       path, r->unnamed) < 0) {
            return FOLIO_ENOMEM;
        }
    }
    return 0;
}

int
folio_prof_symbolize(struct folio_prof_syms *s, struct folio_pprof *p,
                     unsigned flags)
{
    struct resolver *res = NULL;
    struct table fns;
    uint64_t t0 = folio_mono_ns();
    unsigned named = 0, from_cache = 0;
    uint32_t i;
    int rc = FOLIO_ENOMEM;

    memset(&fns, 0, sizeof(fns));
    if (s->cache.nlocations > CACHE_MAX) {
        /* Long running, many builds seen: start the table again. */
        folio_pprof_free(&s->cache);
        table_free(&s->keys);
        table_free(&s->cache_fns);
        if (folio_pprof_init(&s->cache) != 0 ||
            table_init(&s->keys, 4096) != 0 ||
            table_init(&s->cache_fns, 1024) != 0)
            goto done;
    }
    if (s->nfiles > MAX_FILES / 2)
        files_free(s);
    own_refresh(s);
    if ((res = folio_calloc(p->nmappings + 1, sizeof(*res))) == NULL ||
        table_init(&fns, 1024) != 0)
        goto done;
    for (i = 0; i < p->nmappings; i++)
        if ((rc = resolve_mapping(s, p, i, &res[i])) != 0)
            goto done;
    for (i = 0; i < p->nlocations; i++) {
        struct folio_pprof_location *l = &p->locations[i];

        if (l->nline > 0 || l->mapping == 0)
            continue;
        res[l->mapping - 1].used = 1;
        if ((rc = name_location(s, p, &fns, i, &res[l->mapping - 1],
                                &from_cache)) != 0)
            goto done;
        named++;
    }
    for (i = 0; i < p->nmappings; i++)
        if (res[i].used && res[i].mod != NULL)
            p->mappings[i].has_functions = p->mappings[i].has_filenames =
                p->mappings[i].has_lines = p->mappings[i].has_inline = 1;
    if (flags & FOLIO_PROF_SYM_HEAP)
        trim_alloc(p);
    rc = comments(p, res, named, from_cache, folio_mono_ns() - t0);
done:
    folio_free(res);
    table_free(&fns);
    return rc;
}

int
folio_prof_syms_new(struct folio_prof_syms **out)
{
    struct folio_prof_syms *s;

    *out = NULL;
    if ((s = folio_calloc(1, sizeof(*s))) == NULL ||
        folio_pprof_init(&s->cache) != 0 || table_init(&s->keys, 4096) != 0 ||
        table_init(&s->cache_fns, 1024) != 0) {
        folio_prof_syms_free(s);
        return FOLIO_ENOMEM;
    }
    /* A fork (a worker) has named nothing itself. */
    if (!atfork_set && pthread_atfork(NULL, NULL, forked) == 0)
        atfork_set = 1;
    *out = s;
    return 0;
}

void
folio_prof_syms_free(struct folio_prof_syms *s)
{
    if (s == NULL)
        return;
    files_free(s);
    if (s->own != NULL)
        dwfl_end(s->own);
    folio_pprof_free(&s->cache);
    table_free(&s->keys);
    table_free(&s->cache_fns);
    folio_free(s->fallback);
    folio_free(s);
}

uint64_t
folio_prof_sym_lookups(void)
{
    return lookups;
}
