/*
 * priv.c - privileges.  Started as root, foliod binds its sockets, makes
 * its data directory and writes its pid file as root, then becomes the
 * user of `--user` for good (initgroups, setgid, setuid) before it loads
 * any data or forks a worker.  Without `--user` it refuses to serve as
 * root, as memcached does; `--user root` insists.  Started as another
 * user, it has nothing to drop: `--user` naming that user is accepted.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "master/master_int.h"
#include "src/err.h"
#include "src/log.h"

int
folio_priv_init(struct folio_priv *p, const char *user, int check_only,
                char *err, size_t errlen)
{
    struct passwd *pw;

    memset(p, 0, sizeof(*p));
    if (user == NULL)
        return 0; /* stay who we are: as root, main.c warns */
    errno = 0;
    if ((pw = getpwnam(user)) == NULL) {
        snprintf(err, errlen, "user %s: %s", user,
                 errno != 0 ? strerror(errno) : "no such user");
        return FOLIO_ECONFIG;
    }
    if (snprintf(p->name, sizeof(p->name), "%s", user) >=
        (int)sizeof(p->name)) {
        snprintf(err, errlen, "user %s: name too long", user);
        return FOLIO_ECONFIG;
    }
    p->uid = pw->pw_uid;
    p->gid = pw->pw_gid;
    if (check_only || pw->pw_uid == geteuid())
        return 0; /* nothing to drop: already that user */
    if (geteuid() != 0) {
        snprintf(err, errlen,
                 "cannot become user %s: foliod runs as uid %ld, not root",
                 user, (long)geteuid());
        return FOLIO_ECONFIG;
    }
    p->active = 1;
    return 0;
}

static int
make_dir(const struct folio_priv *p, const char *path, mode_t mode)
{
    if (mkdir(path, mode) == 0) {
        folio_priv_own(p, path, 0);
        return 0;
    }
    return errno == EEXIST ? 0 : -1;
}

int
folio_priv_mkdirs(const struct folio_priv *p, const char *path, mode_t mode)
{
    char buf[4096], *s;
    int rc;

    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (s = buf + 1; *s != '\0'; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        rc = make_dir(p, buf, mode);
        *s = '/';
        if (rc != 0)
            return -1;
    }
    return make_dir(p, buf, mode);
}

void
folio_priv_own(const struct folio_priv *p, const char *path, int group_only)
{
    if (!p->active || p->dropped)
        return;
    if (chown(path, group_only ? (uid_t)-1 : p->uid, p->gid) == -1)
        folio_log_warn("chown(%s, %s%s)", path, group_only ? ":" : "", p->name);
}

void
folio_priv_own_fd(const struct folio_priv *p, int fd, const char *what)
{
    if (!p->active || p->dropped)
        return;
    if (fchown(fd, p->uid, p->gid) == -1)
        folio_log_warn("fchown(%s, %s)", what, p->name);
}

int
folio_priv_drop(struct folio_priv *p, char *err, size_t errlen)
{
    uid_t ru, eu, su;
    gid_t rg, eg, sg;

    if (!p->active || p->dropped)
        return 0;
    if (initgroups(p->name, p->gid) == -1) {
        snprintf(err, errlen, "initgroups(%s, %ld): %s", p->name, (long)p->gid,
                 strerror(errno));
        return FOLIO_ESYS;
    }
    if (setresgid(p->gid, p->gid, p->gid) == -1) {
        snprintf(err, errlen, "setresgid(%ld): %s", (long)p->gid,
                 strerror(errno));
        return FOLIO_ESYS;
    }
    if (setresuid(p->uid, p->uid, p->uid) == -1) {
        snprintf(err, errlen, "setresuid(%ld): %s", (long)p->uid,
                 strerror(errno));
        return FOLIO_ESYS;
    }
    /* For good: real, effective and saved ids, and no way back. */
    if (getresuid(&ru, &eu, &su) == -1 || ru != p->uid || eu != p->uid ||
        su != p->uid || getresgid(&rg, &eg, &sg) == -1 || rg != p->gid ||
        eg != p->gid || sg != p->gid) {
        snprintf(err, errlen, "user %s: the ids did not all change", p->name);
        return FOLIO_ESYS;
    }
    if (setuid(0) != -1 || seteuid(0) != -1) {
        snprintf(err, errlen, "user %s: root could be regained", p->name);
        return FOLIO_ESYS;
    }
    p->dropped = 1;
    /* Changing ids made us undumpable: let the user debug and dump core. */
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    folio_log_notice("running as user %s (uid %ld, gid %ld)", p->name,
                     (long)p->uid, (long)p->gid);
    return 0;
}
