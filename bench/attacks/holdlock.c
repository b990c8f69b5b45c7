/*
 * holdlock.c - hold the LMDB writer lock of environment argv[1] (a
 * foliod's data_dir/comments) until stdin closes: another process that
 * keeps every worker's posts waiting, as a worker stopped in its commit
 * does.  For bench/attacks/stuck.py (RELIABILITY.md); by hand only:
 *   cc -o holdlock holdlock.c -llmdb
 */
#include <lmdb.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    MDB_env *e; MDB_txn *t; char c;
    if (argc < 2 || mdb_env_create(&e) || mdb_env_set_maxdbs(e, 8) ||
        mdb_env_set_maxreaders(e, 1024) || mdb_env_set_mapsize(e, 1ull << 30) ||
        mdb_env_open(e, argv[1], MDB_NOTLS, 0644)) return 1;
    if (mdb_txn_begin(e, NULL, 0, &t)) return 2;
    printf("holding\n"); fflush(stdout);
    while (read(0, &c, 1) > 0) ;
    mdb_txn_abort(t); mdb_env_close(e); return 0;
}
