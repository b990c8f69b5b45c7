/*
 * prof_maps.c - the executable mappings of this process (prof_int.h),
 * from the dynamic loader's list of what it loaded (dl_iterate_phdr) and
 * the build-id notes in memory: what a profile's addresses fall in, for
 * the sampler (prof.c) to describe a profile with and the symbolizer
 * (prof_sym.c) to tell its own mappings from others'.
 */
#include "config.h"

#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "src/prof/prof_int.h"

static char exe_path[PATH_MAX]; /* the main executable, read at init */

void
folio_prof_maps_init(void)
{
    ssize_t n;

    /* The executable's name, before anything can replace it. */
    if ((n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1)) < 0)
        n = snprintf(exe_path, sizeof(exe_path), "%s",
                     program_invocation_name);
    exe_path[n < (ssize_t)sizeof(exe_path) ? n : 0] = '\0';
}

static void
hex(char *out, const unsigned char *b, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    size_t i;

    for (i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

/* The GNU build id among a loaded file's notes, in hex ("" if none). */
static void
build_id_of(const struct dl_phdr_info *info, char *out)
{
    int i;

    out[0] = '\0';
    for (i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        const unsigned char *n, *end;
        size_t align = ph->p_align == 8 ? 8 : 4;

        if (ph->p_type != PT_NOTE)
            continue;
        n = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
        end = n + ph->p_memsz;
        while ((size_t)(end - n) >= sizeof(ElfW(Nhdr))) {
            const ElfW(Nhdr) *h = (const void *)n;
            size_t name = (h->n_namesz + align - 1) & ~(align - 1);
            size_t desc = (h->n_descsz + align - 1) & ~(align - 1);
            const unsigned char *d = n + sizeof(*h) + name;

            if (name > (size_t)(end - n) || desc > (size_t)(end - d))
                break;
            if (h->n_type == NT_GNU_BUILD_ID && h->n_namesz == 4 &&
                memcmp(n + sizeof(*h), "GNU", 4) == 0 && h->n_descsz <= 64) {
                hex(out, d, h->n_descsz);
                return;
            }
            n = d + desc;
        }
    }
}

struct each_map {
    int (*fn)(void *arg, const struct folio_prof_map *m);
    void *arg;
    int first;
};

static int
each_object(struct dl_phdr_info *info, size_t size, void *argv)
{
    struct each_map *e = argv;
    struct folio_prof_map m;
    char build[132];
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    int i, rc, main_exe = e->first;

    (void)size;
    e->first = 0;
    memset(&m, 0, sizeof(m));
    m.main = main_exe;
    m.path = main_exe ? exe_path
             : strcmp(info->dlpi_name, "linux-vdso.so.1") == 0 ||
                     strcmp(info->dlpi_name, "linux-gate.so.1") == 0
                 ? "[vdso]"
                 : info->dlpi_name;
    if (m.path[0] == '\0')
        return 0; /* an object without a file: nothing to name it by */
    build_id_of(info, build);
    m.build_id = build;
    for (i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t lo = info->dlpi_addr + ph->p_vaddr;

        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        m.start = lo & ~(page - 1);
        m.limit = (lo + ph->p_memsz + page - 1) & ~(page - 1);
        m.offset = ph->p_offset & ~(page - 1);
        if ((rc = e->fn(e->arg, &m)) != 0)
            return rc;
    }
    return 0;
}

int
folio_prof_each_map(int (*fn)(void *arg, const struct folio_prof_map *m),
                    void *arg)
{
    struct each_map e;

    e.fn = fn;
    e.arg = arg;
    e.first = 1; /* the loader lists the main program first */
    return dl_iterate_phdr(each_object, &e);
}
