/*
 * e2e_interop.c - foliod against a msgpack-RPC client that is not ours:
 * pynvim's msgpack_rpc sessions (Debian's python3-pynvim, Neovim's own
 * Python client), run as a subprocess by tests/interop_pynvim.py over TCP
 * and over the admin socket.  That client packs method names as bin and
 * opens with a bin-named notification: foliod must read them as str.
 *
 * A python3 with pynvim is required (e2e_require_at): without one the
 * suite is skipped, or fails when CI is set (CI installs python3-pynvim).
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/check_run.h"
#include "tests/cli_util.h"
#include "tests/e2e_util.h"

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static const char *python;

/*
 * The first interpreter that imports pynvim: $PYTHON, the python3 on
 * PATH, Debian's /usr/bin/python3 (a python3 of pyenv or a virtualenv
 * on PATH does not see Debian's packages).
 */
static const char *
find_python(void)
{
    static const char *const cands[] = {NULL, "python3", "/usr/bin/python3"};
    struct cli_run r;
    size_t i;
    int ok;

    for (i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
        const char *p = i == 0 ? getenv("PYTHON") : cands[i];

        if (p == NULL || *p == '\0')
            continue;
        if (cli_run(&r, &(struct cli_opts){.prog = p},
                    ARGS("-c", "import pynvim.msgpack_rpc")) != 0)
            continue;
        ok = r.status == 0;
        cli_run_free(&r);
        if (ok)
            return p;
    }
    return NULL;
}

START_TEST(test_pynvim_session)
{
    struct e2e_server srv;
    struct cli_run r;
    char script[512];

    ck_assert_int_eq(e2e_start(&srv, NULL, NULL), 0);
    snprintf(script, sizeof(script), "%s/tests/interop_pynvim.py",
             FOLIO_SRCDIR);
    ck_assert_int_eq(
        cli_run(&r, &(struct cli_opts){.prog = python, .deadline_ms = 30000},
                ARGS(script, srv.addr, srv.admin)),
        0);
    ck_assert_msg(r.status == 0 && strcmp(r.out, "ok\n") == 0,
                  "%s exited %d\nstdout: %s\nstderr: %s", python, r.status,
                  r.out, r.err);
    cli_run_free(&r);
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("e2e_interop");
    TCase *tc = tcase_create("pynvim");

    python = e2e_require_at("pynvim", find_python(),
                            "no python3 that imports pynvim: apt-get "
                            "install python3-pynvim");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_pynvim_session);
    suite_add_tcase(s, tc);
    return folio_check_run(s);
}
