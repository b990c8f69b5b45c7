/*
 * prof_sym.c - addresses of this process to functions, files and lines,
 * with elfutils' libdw (see prof_int.h).  Each address gets one location
 * with a line per frame inlined there, innermost first (what
 * `eu-addr2line -i` prints); names come from the DWARF of the module,
 * else its ELF symbols, else "module+0xoffset".  Mappings are the
 * executable segments of /proc/self/maps, with the build id of each
 * module, the main executable first (pprof's "File:").
 *
 * Debug files are looked up by build id under /usr/lib/debug only: never
 * over the network (libdw's standard callback would ask debuginfod when
 * DEBUGINFOD_URLS is set, stalling a worker on a download).  What libdw
 * read is released with each profile (see folio_prof_sym_end).
 */
#include "config.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/alloc.h"
#include "src/err.h"
#include "src/prof/pprof.h"
#include "src/prof/prof_int.h"

#define MAX_MAPS 512
#define MAX_INLINE 16

struct map {
    uint64_t start, limit, offset;
    uint32_t index; /* in the profile */
};

/* An open-addressing table of 64-bit keys to indices + 1 (0: empty). */
struct table {
    uint64_t *key;
    uint32_t *val;
    uint32_t mask, used;
};

struct folio_prof_sym {
    struct folio_pprof *p;
    struct map maps[MAX_MAPS];
    uint32_t nmaps;
    struct table addrs; /* address -> location */
    struct table fns;   /* (name, file) strings -> function */
};

static Dwfl *dwfl; /* of the profile being built */

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

static void
hex(char *out, const unsigned char *b, int n)
{
    static const char digits[] = "0123456789abcdef";
    int i;

    for (i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

static int
cmp_map(const void *a, const void *b)
{
    const struct map *x = a, *y = b;

    return x->start < y->start ? -1 : x->start > y->start;
}

/* The executable mappings, each with its module's build id. */
static int
read_maps(struct folio_prof_sym *s)
{
    char line[4200], perms[8], path[4096], build[130];
    unsigned long long lo, hi, off;
    FILE *f;
    int main_seen = 0;
    uintptr_t self = (uintptr_t)(void *)&read_maps;

    if ((f = fopen("/proc/self/maps", "re")) == NULL)
        return 0; /* no mappings: the names still come */
    while (fgets(line, sizeof(line), f) != NULL && s->nmaps < MAX_MAPS) {
        const unsigned char *bits;
        GElf_Addr vaddr, bias;
        Dwfl_Module *mod;
        char *del;
        int n, idx;

        path[0] = '\0';
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095[^\n]", &lo, &hi,
                   perms, &off, path) < 4 ||
            perms[2] != 'x')
            continue;
        if ((del = strstr(path, " (deleted)")) != NULL)
            *del = '\0';
        build[0] = '\0';
        /* The build id is known once the module's ELF is open. */
        if (dwfl != NULL && (mod = dwfl_addrmodule(dwfl, lo)) != NULL &&
            dwfl_module_getelf(mod, &bias) != NULL &&
            (n = dwfl_module_build_id(mod, &bits, &vaddr)) > 0 && n <= 64)
            hex(build, bits, n);
        if ((idx = folio_pprof_add_mapping(s->p, lo, hi, off, path, build)) <
            0) {
            fclose(f);
            return FOLIO_ENOMEM;
        }
        s->maps[s->nmaps].start = lo;
        s->maps[s->nmaps].limit = hi;
        s->maps[s->nmaps].offset = off;
        s->maps[s->nmaps].index = (uint32_t)idx;
        /* pprof names the profile after the first mapping: ours. */
        if (!main_seen && self >= lo && self < hi) {
            struct folio_pprof_mapping m = s->p->mappings[idx];
            uint32_t k;

            main_seen = 1;
            for (k = (uint32_t)idx; k > 0; k--)
                s->p->mappings[k] = s->p->mappings[k - 1];
            s->p->mappings[0] = m;
            for (k = 0; k < s->nmaps; k++)
                s->maps[k].index++;
            s->maps[s->nmaps].index = 0;
        }
        s->nmaps++;
    }
    fclose(f);
    qsort(s->maps, s->nmaps, sizeof(s->maps[0]), cmp_map);
    return 0;
}

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

int
folio_prof_sym_begin(struct folio_pprof *p, struct folio_prof_sym **out)
{
    struct folio_prof_sym *s;

    *out = NULL;
    if ((s = folio_calloc(1, sizeof(*s))) == NULL)
        return FOLIO_ENOMEM;
    s->p = p;
    if (table_init(&s->addrs, 4096) != 0 || table_init(&s->fns, 1024) != 0) {
        folio_prof_sym_end(s);
        return FOLIO_ENOMEM;
    }
    if (dwfl == NULL)
        dwfl = dwfl_begin(&callbacks);
    if (dwfl != NULL) {
            dwfl_report_begin(dwfl);
        if (dwfl_linux_proc_report(dwfl, getpid()) != 0 ||
            dwfl_report_end(dwfl, NULL, NULL) != 0) {
            dwfl_end(dwfl);
            dwfl = NULL;
        }
    }
    if (read_maps(s) != 0) {
        folio_prof_sym_end(s);
        return FOLIO_ENOMEM;
    }
    *out = s;
    return 0;
}

void
folio_prof_sym_end(struct folio_prof_sym *s)
{
    if (s == NULL)
        return;
    table_free(&s->addrs);
    table_free(&s->fns);
    folio_free(s);
    /* Measured: reading the DWARF again costs a profile ~20 ms; keeping
     * it would hold ~10 MB of libdw's in every worker. */
    if (dwfl != NULL)
        dwfl_end(dwfl);
    dwfl = NULL;
}

/* The function named `name` in `file`, added once. */
static int64_t
function(struct folio_prof_sym *s, const char *name, const char *file,
         int64_t start_line)
{
    int64_t n = folio_pprof_cstr(s->p, name), f = folio_pprof_cstr(s->p, file);
    int64_t v;
    uint64_t key;
    uint32_t slot;
    int idx;

    if (n < 0 || f < 0)
        return FOLIO_ENOMEM;
    key = ((uint64_t)n << 32) | (uint64_t)f;
    if ((v = table_get(&s->fns, key, &slot)) >= 0)
        return v;
    if ((idx = folio_pprof_add_function(s->p, name, file, start_line)) < 0)
        return idx;
    return table_put(&s->fns, slot, key, (uint32_t)idx) != 0 ? FOLIO_ENOMEM
                                                              : idx;
}

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

/* The location of one address: added once per profile. */
static int64_t
location(struct folio_prof_sym *s, uint64_t pc, int exact)
{
    struct folio_pprof_line lines[MAX_INLINE];
    struct frame fr[MAX_INLINE];
    uint64_t addr = exact ? pc : pc - 1;
    uint32_t slot, mapping = 0, lo, hi;
    Dwfl_Module *mod = NULL;
    int n = 0, i, idx;
    int64_t fn;
    char fallback[320];

    if ((fn = table_get(&s->addrs, addr, &slot)) >= 0)
        return fn;
    /* Its mapping: the last starting at or below addr. */
    lo = 0;
    hi = s->nmaps;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;

        if (s->maps[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && addr < s->maps[lo - 1].limit)
        mapping = s->maps[lo - 1].index + 1;
    if (dwfl != NULL && (mod = dwfl_addrmodule(dwfl, addr)) != NULL)
        n = dwarf_frames(mod, addr, fr);
    if (n == 0) {
        /* No DWARF: the ELF symbol, or the module and offset. */
        GElf_Off off = 0;
        GElf_Sym sym;
        const char *name = NULL, *modname = NULL;
        Dwarf_Addr start = 0;

        if (mod != NULL) {
            name = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL,
                                        NULL);
            modname = dwfl_module_info(mod, NULL, &start, NULL, NULL, NULL,
                                       NULL, NULL);
        }
        if (name == NULL) {
            const char *base = modname != NULL ? strrchr(modname, '/') : NULL;
            int blen;

            base = base != NULL ? base + 1 : modname != NULL ? modname : "??";
            blen = (int)strcspn(base, " ");
            snprintf(fallback, sizeof(fallback), "%.*s+0x%" PRIx64, blen, base,
                     (uint64_t)(addr - start));
            name = fallback;
        }
        fr[0].name = name;
        fr[0].file = "";
        fr[0].line = 0;
        fr[0].start = 0;
        n = 1;
    }
    for (i = 0; i < n; i++) {
        if ((fn = function(s, fr[i].name, fr[i].file, fr[i].start)) < 0)
            return FOLIO_ENOMEM;
        lines[i].fn = (uint32_t)fn;
        lines[i].line = fr[i].line;
    }
    if ((idx = folio_pprof_add_location(s->p, mapping, addr, lines,
                                        (uint32_t)n)) < 0)
        return idx;
    return table_put(&s->addrs, slot, addr, (uint32_t)idx) != 0 ? FOLIO_ENOMEM
                                                                : idx;
}

int
folio_prof_sym_stack(struct folio_prof_sym *s, const uint64_t *pcs,
                     uint32_t n, int leaf, uint32_t *locs)
{
    uint32_t i;
    int64_t l;

    for (i = 0; i < n; i++) {
        if ((l = location(s, pcs[i], leaf && i == 0)) < 0)
            return (int)l;
        locs[i] = (uint32_t)l;
    }
    return 0;
}

const char *
folio_prof_sym_outer_name(const struct folio_pprof *p, uint32_t loc)
{
    const struct folio_pprof_location *l;
    const struct folio_pprof_line *ln;

    if (loc >= p->nlocations || p->locations[loc].nline == 0)
        return "";
    l = &p->locations[loc];
    ln = &p->lines[l->line + l->nline - 1];
    return ln->fn < p->nfunctions ? folio_pprof_text(p, p->functions[ln->fn].name)
                                  : "";
}
