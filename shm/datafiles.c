/*
 * datafiles.c - checksummed data files shipped to several hosts (see
 * datafiles.h).  SHA-256 is OpenSSL's (libcrypto, which libpq already
 * brings): the manifest is sha256sum's format, so operators can check a
 * copy with the tool they have.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "shm/datafiles.h"
#include "src/err.h"
#include "src/log.h"

#define LINE_MAX_LEN 4200

/* The SHA-256 of path, as 64 hex digits and a NUL, into hex[65]. */
static int
sha256_file(const char *path, char hex[65], char *err, size_t errlen)
{
    static const char digits[] = "0123456789abcdef";
    unsigned char buf[1 << 16], md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0, i;
    EVP_MD_CTX *ctx;
    ssize_t r;
    int fd, rc = FOLIO_ESYS;

    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return errno == ENOENT ? FOLIO_ECORRUPT : FOLIO_ESYS;
    }
    if ((ctx = EVP_MD_CTX_new()) == NULL ||
        EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        snprintf(err, errlen, "%s: SHA-256 unavailable", path);
        goto done;
    }
    while ((r = read(fd, buf, sizeof(buf))) != 0) {
        if (r == -1 && errno == EINTR)
            continue;
        if (r == -1) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            goto done;
        }
        EVP_DigestUpdate(ctx, buf, (size_t)r);
    }
    if (EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen != 32) {
        snprintf(err, errlen, "%s: SHA-256 failed", path);
        goto done;
    }
    for (i = 0; i < 32; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[64] = '\0';
    rc = 0;
done:
    EVP_MD_CTX_free(ctx);
    close(fd);
    return rc;
}

int
folio_datafiles_write(const char *dir, const char *const *names, size_t n,
                      char *err, size_t errlen)
{
    char path[LINE_MAX_LEN], tmp[LINE_MAX_LEN + 32], hex[65];
    size_t i;
    FILE *f;
    int rc;

    snprintf(path, sizeof(path), "%s/" FOLIO_DATA_SUMS, dir);
    snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
    if ((f = fopen(tmp, "we")) == NULL) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        return FOLIO_ESYS;
    }
    for (i = 0; i < n; i++) {
        char file[LINE_MAX_LEN];

        snprintf(file, sizeof(file), "%s/%s", dir, names[i]);
        if ((rc = sha256_file(file, hex, err, errlen)) != 0) {
            fclose(f);
            unlink(tmp);
            return FOLIO_ESYS;
        }
        fprintf(f, "%s  %s\n", hex, names[i]);
    }
    if (fflush(f) != 0 || fdatasync(fileno(f)) != 0 || ferror(f)) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        fclose(f);
        unlink(tmp);
        return FOLIO_ESYS;
    }
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        unlink(tmp);
        return FOLIO_ESYS;
    }
    return 0;
}

int
folio_datafiles_verify(const char *dir, unsigned *nfiles, char *err,
                       size_t errlen)
{
    char path[LINE_MAX_LEN], line[LINE_MAX_LEN], file[LINE_MAX_LEN * 2],
        hex[65], why[LINE_MAX_LEN];
    unsigned n = 0, lineno = 0;
    size_t len;
    FILE *f;
    int rc = 1;

    if (nfiles != NULL)
        *nfiles = 0;
    snprintf(path, sizeof(path), "%s/" FOLIO_DATA_SUMS, dir);
    if ((f = fopen(path, "re")) == NULL) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return FOLIO_ESYS;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        lineno++;
        len = strcspn(line, "\n");
        line[len] = '\0';
        if (len == 0)
            continue;
        /* "HEX  NAME" (sha256sum: two spaces, or " *" for binary) */
        if (len < 67 || line[64] != ' ' ||
            (line[65] != ' ' && line[65] != '*') ||
            strspn(line, "0123456789abcdef") != 64 ||
            strstr(line + 66, "..") != NULL || line[66] == '/') {
            snprintf(err, errlen, "%s:%u: not a line of sha256sum", path,
                     lineno);
            rc = FOLIO_ECORRUPT;
            break;
        }
        snprintf(file, sizeof(file), "%s/%s", dir, line + 66);
        if ((rc = sha256_file(file, hex, why, sizeof(why))) != 0) {
            snprintf(err, errlen,
                     "shipped data: %s (listed in %s): copy the data again",
                     why, path);
            break;
        }
        if (memcmp(hex, line, 64) != 0) {
            snprintf(err, errlen,
                     "shipped data: %s does not match its checksum in %s "
                     "(changed, or copied incompletely): copy the data "
                     "again",
                     file, path);
            rc = FOLIO_ECORRUPT;
            break;
        }
        rc = 1;
        n++;
    }
    fclose(f);
    if (rc == 1 && nfiles != NULL)
        *nfiles = n;
    return rc;
}
