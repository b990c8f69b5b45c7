/*
 * pprof.h - profiles in pprof's format: the profile.proto message of
 * google/pprof (what `go tool pprof`, google-pprof, speedscope and
 * Pyroscope read), as a model in memory, with its encoder and decoder
 * (gzipped, as pprof writes it), the merge of several processes' profiles
 * into one, and the table of `pprof -top`.
 *
 * Shared by foliod (each worker writes its profile, the master merges
 * them and answers /debug/pprof/), the folio client (`folio profile`
 * reads and prints the top) and the tests.  Plain data: no libevent, no
 * symbolizer (src/prof/prof.h builds profiles of the running process).
 *
 * The model keeps indices where the proto keeps ids: a sample's stack
 * holds location indices, a location its mapping's index + 1 (0: none), a
 * line its function's index; the encoder writes index + 1 as each id and
 * the decoder maps ids back to indices.  Strings are interned: an index
 * into the string table, 0 being "".
 */
#ifndef FOLIO_PPROF_H
#define FOLIO_PPROF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct folio_buf;

/* A decoded profile may hold at most this many bytes, unzipped. */
#define FOLIO_PPROF_MAX_BYTES (256u << 20)

struct folio_pprof_vt {
    uint32_t type, unit; /* strings: "cpu", "nanoseconds" */
};

struct folio_pprof_label {
    uint32_t key; /* string */
    uint32_t str; /* string; 0 for a numeric label */
    int64_t num;
    uint32_t unit; /* string, for a numeric label */
};

struct folio_pprof_sample {
    uint32_t stack, nstack; /* p->stack[stack .. stack + nstack): leaf first */
    uint32_t value;         /* p->values[value .. value + p->ntypes) */
    uint32_t label, nlabel; /* p->labels[label .. label + nlabel) */
};

struct folio_pprof_mapping {
    uint64_t start, limit, offset;
    uint32_t file, build_id; /* strings */
    uint8_t has_functions, has_filenames, has_lines, has_inline;
};

struct folio_pprof_line {
    uint32_t fn; /* function index */
    int64_t line;
};

struct folio_pprof_location {
    uint32_t mapping; /* index + 1; 0: none */
    uint64_t address;
    uint32_t line, nline; /* p->lines[line .. line + nline): innermost first */
    uint8_t folded;
};

struct folio_pprof_function {
    uint32_t name, system_name, file; /* strings */
    int64_t start_line;
};

struct folio_pprof {
    struct folio_pprof_vt *types;
    uint32_t ntypes, types_cap;
    struct folio_pprof_sample *samples;
    uint32_t nsamples, samples_cap;
    uint32_t *stack; /* location indices of every sample */
    uint32_t nstack, stack_cap;
    int64_t *values;
    uint32_t nvalues, values_cap;
    struct folio_pprof_label *labels;
    uint32_t nlabels, labels_cap;
    struct folio_pprof_mapping *mappings;
    uint32_t nmappings, mappings_cap;
    struct folio_pprof_location *locations;
    uint32_t nlocations, locations_cap;
    struct folio_pprof_line *lines;
    uint32_t nlines, lines_cap;
    struct folio_pprof_function *functions;
    uint32_t nfunctions, functions_cap;
    uint32_t *comments; /* strings */
    uint32_t ncomments, comments_cap;
    /* The string table: NUL-terminated texts in `chars`, interned. */
    char *chars;
    size_t nchars, chars_cap;
    uint32_t *str_off; /* string i starts at chars + str_off[i] */
    uint32_t *str_len;
    uint32_t nstrings, strings_cap;
    uint32_t *str_hash; /* open addressing: string index + 1, 0 empty */
    uint32_t str_hash_cap;
    uint32_t drop_frames, keep_frames; /* strings */
    int64_t time_nanos, duration_nanos;
    struct folio_pprof_vt period_type;
    int64_t period;
    uint32_t default_type; /* string: the sample type shown by default */
};

/*
 * folio_pprof_init - an empty profile whose string table holds "".
 * Returns 0 or FOLIO_ENOMEM.  folio_pprof_free releases what it holds
 * (and accepts a zeroed or half-built profile).
 */
int folio_pprof_init(struct folio_pprof *p);
void folio_pprof_free(struct folio_pprof *p);

/*
 * folio_pprof_str - the index of `s` (len bytes) in the string table,
 * added if new; folio_pprof_cstr the same for a C string.  Returns the
 * index (> 0 unless s is empty), or -1 when memory runs out.
 */
int64_t folio_pprof_str(struct folio_pprof *p, const char *s, size_t len);
int64_t folio_pprof_cstr(struct folio_pprof *p, const char *s);

/* folio_pprof_text - string i, "" when i is out of range.  Borrowed. */
const char *folio_pprof_text(const struct folio_pprof *p, uint32_t i);

/*
 * Builders: each returns the new element's index (>= 0) or FOLIO_ENOMEM
 * (or FOLIO_EINVAL for a reference out of range).  Strings are C strings,
 * NULL taken as "".
 */
int folio_pprof_add_type(struct folio_pprof *p, const char *type,
                         const char *unit);
int folio_pprof_add_mapping(struct folio_pprof *p, uint64_t start,
                            uint64_t limit, uint64_t offset, const char *file,
                            const char *build_id);
int folio_pprof_add_function(struct folio_pprof *p, const char *name,
                             const char *file, int64_t start_line);
/* `mapping` is an index + 1 (0: none); lines innermost first. */
int folio_pprof_add_location(struct folio_pprof *p, uint32_t mapping,
                             uint64_t address,
                             const struct folio_pprof_line *lines,
                             uint32_t nlines);
/*
 * folio_pprof_set_lines - give location `loc` these lines (a symbolizer
 * naming an address): 0, FOLIO_EINVAL or FOLIO_ENOMEM.  Lines it had
 * before stay in p->lines, unused.
 */
int folio_pprof_set_lines(struct folio_pprof *p, uint32_t loc,
                          const struct folio_pprof_line *lines,
                          uint32_t nlines);
/* `values` holds p->ntypes values; a label's key and str are strings. */
int folio_pprof_add_sample(struct folio_pprof *p, const uint32_t *stack,
                           uint32_t nstack, const int64_t *values,
                           const struct folio_pprof_label *labels,
                           uint32_t nlabels);
int folio_pprof_add_comment(struct folio_pprof *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * folio_pprof_encode - append the profile.proto bytes of p to `out`;
 * folio_pprof_encode_gz the same, gzipped (what pprof reads and writes).
 * Returns 0, FOLIO_ENOMEM, or FOLIO_EINVAL (a reference out of range).
 */
int folio_pprof_encode(const struct folio_pprof *p, struct folio_buf *out);
int folio_pprof_encode_gz(const struct folio_pprof *p, struct folio_buf *out);

/*
 * folio_pprof_encode_legacy - append p as a "symbolized profile" in
 * gperftools' formats, for the Perl pprof of google-perftools
 * (google-pprof), which reads no profile.proto: a CPU profile (`type`
 * cpu or samples) in gperftools' binary format, a heap one in its text
 * format, each after the symbols of its locations (pprof --raw's
 * layout), so that no binary is needed.  Labels are not carried.
 * Returns 0, FOLIO_EINVAL (no such type; a heap profile without its four
 * sample types) or FOLIO_ENOMEM.
 */
int folio_pprof_encode_legacy(const struct folio_pprof *p, int type,
                              struct folio_buf *out);

/*
 * folio_pprof_decode - read a profile (gzipped or not) into p, which this
 * initializes; on failure p is left empty (free it anyway).  Every
 * reference is checked: a profile that decodes is safe to walk.  Returns
 * 0, FOLIO_EINVAL with the reason in `err` (malformed, an unknown id),
 * FOLIO_ETOOBIG (over FOLIO_PPROF_MAX_BYTES unzipped) or FOLIO_ENOMEM.
 */
int folio_pprof_decode(const void *data, size_t len, struct folio_pprof *p,
                       char *err, size_t errlen);

/* A label merged into every sample: numeric when str is NULL, with its
 * unit (pprof drops a numeric label of 0 that has none). */
struct folio_pprof_tag {
    const char *key;
    const char *str;
    int64_t num;
    const char *unit; /* NULL: none */
};

/*
 * folio_pprof_merge - add src's samples to dst, each with the extra
 * labels tags[0..ntags) (at most 8: a worker's index and pid), which
 * replace the sample's own labels of those keys.  Strings, functions, locations and mappings met in both are kept
 * once; comments are added, the duration is the longest, the time the
 * earliest.  An empty dst (no sample types) takes src's types; otherwise
 * they must be the same.  Returns 0, FOLIO_EINVAL (other sample types)
 * or FOLIO_ENOMEM (dst may then hold part of src).
 */
int folio_pprof_merge(struct folio_pprof *dst, const struct folio_pprof *src,
                      const struct folio_pprof_tag *tags, unsigned ntags);

/*
 * folio_pprof_type_index - the index of the sample type named `name`, or
 * with name NULL the default one (default_type, else the last as pprof
 * does).  Returns -1 if there is none.
 */
int folio_pprof_type_index(const struct folio_pprof *p, const char *name);

/*
 * folio_pprof_on_stack - 1 if sample i of p has a frame of function
 * `name` (inlined ones count), else 0.  What -focus matches.
 */
int folio_pprof_on_stack(const struct folio_pprof *p, uint32_t i,
                         const char *name);

/* One function of the top table: its value where it is the leaf, and
 * wherever it is on the stack (once per sample). */
struct folio_pprof_top_row {
    uint32_t name; /* string */
    int64_t flat, cum;
    uint8_t inlined;  /* met inlined into another function */
    uint8_t physical; /* met as a frame of its own */
};

/*
 * folio_pprof_top - the functions of p by sample type `type`, flat value
 * first (then cum, then name), as pprof -top orders them.  *rows is
 * malloc'd (free it), *total the sum over every sample.  Returns 0,
 * FOLIO_EINVAL (no such type) or FOLIO_ENOMEM.
 */
int folio_pprof_top(const struct folio_pprof *p, int type,
                    struct folio_pprof_top_row **rows, uint32_t *nrows,
                    int64_t *total);

/*
 * folio_pprof_top_print - the text of `pprof -top`: the profile's labels
 * (main file, comments, Type, Time, Duration), then the functions whose
 * cumulative value is over 0.5% of the total (at most max_rows of them;
 * 0: no limit), flat and cumulative, in one unit chosen as pprof does.
 * Returns 0, FOLIO_EINVAL or FOLIO_ENOMEM.
 */
int folio_pprof_top_print(FILE *f, const struct folio_pprof *p, int type,
                          unsigned max_rows);

/*
 * folio_pprof_fmt - `v` of unit `unit` ("nanoseconds", "bytes", "count")
 * scaled into `out_unit` ("" or NULL: the best unit for v) as pprof
 * prints values: "1.27s", "160ms", "512kB", "0".  Returns buf.
 */
const char *folio_pprof_fmt(char *buf, size_t len, int64_t v, const char *unit,
                            const char *out_unit);

#endif
