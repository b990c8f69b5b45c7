/*
 * fuzz_conf.c - libFuzzer target: the configuration file parser
 * (src/conf.c), the one input foliod reads from its operator rather than
 * from clients.
 *
 * The input is a configuration file.  Oracle:
 *   - it parses, or fails with FOLIO_ECONFIG and a message that starts
 *     with the file's name (and names the line, "FILE:LINE: ...", unless
 *     the file could not be read);
 *   - what parses round-trips: folio_config_write() of the result parses
 *     again, to a configuration that writes the same bytes.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/conf.h"
#include "src/err.h"
#include "tests/fuzz_harness.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[256], in[320], out1[320], out2[320];

/* The whole of a small file, NUL-terminated, in a malloc'ed buffer. */
static char *
slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0)
        fuzz_fail("%s: cannot read back", path);
    rewind(f);
    if ((buf = malloc((size_t)n + 1)) == NULL ||
        fread(buf, 1, (size_t)n, f) != (size_t)n)
        fuzz_fail("%s: cannot read back", path);
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

static void
write_conf(const struct folio_config *cfg, const char *path)
{
    FILE *f = fopen(path, "wb");

    if (f == NULL)
        fuzz_fail("%s: cannot write", path);
    folio_config_write(cfg, f);
    if (fclose(f) != 0)
        fuzz_fail("%s: cannot write", path);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *tmp = getenv("TMPDIR");

    (void)argc;
    (void)argv;
    if (dir[0] != '\0')
        return 0;
    snprintf(dir, sizeof(dir), "%s/fuzz-conf.XXXXXX",
             tmp != NULL ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL)
        fuzz_fail("mkdtemp %s", dir);
    snprintf(in, sizeof(in), "%s/in.conf", dir);
    snprintf(out1, sizeof(out1), "%s/out1.conf", dir);
    snprintf(out2, sizeof(out2), "%s/out2.conf", dir);
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct folio_config a, b;
    char err[1024], *t1, *t2;
    size_t plen = strlen(in), n1, n2;
    FILE *f;
    int rc;

    if (dir[0] == '\0')
        LLVMFuzzerInitialize(NULL, NULL);
    if ((f = fopen(in, "wb")) == NULL ||
        fwrite(data, 1, size, f) != size || fclose(f) != 0)
        fuzz_fail("%s: cannot write", in);

    folio_config_init(&a);
    err[0] = '\0';
    rc = folio_config_parse_file(&a, in, err, sizeof(err));
    if (rc != 0) {
        if (rc != FOLIO_ECONFIG)
            fuzz_fail("parse: %d, not FOLIO_ECONFIG", rc);
        if (strncmp(err, in, plen) != 0 || err[plen] != ':')
            fuzz_fail("parse error without the file's name: '%s'", err);
        folio_config_free(&a);
        return 0;
    }
    write_conf(&a, out1);
    folio_config_init(&b);
    if (folio_config_parse_file(&b, out1, err, sizeof(err)) != 0)
        fuzz_fail("the written configuration does not parse: %s", err);
    write_conf(&b, out2);
    t1 = slurp(out1, &n1);
    t2 = slurp(out2, &n2);
    if (n1 != n2 || memcmp(t1, t2, n1) != 0)
        fuzz_fail("the configuration changed in a round trip:\n%s\n---\n%s",
                  t1, t2);
    free(t1);
    free(t2);
    folio_config_free(&a);
    folio_config_free(&b);
    return 0;
}
