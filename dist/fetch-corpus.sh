#!/bin/sh
# dist/fetch-corpus.sh - download the Shakespeare corpus (the 42 files of
# the public dataflow-samples set that shakesapp reads) into DIR and check
# every file against the checksums kept in the repository.  `make corpus`
# runs it.  Files are downloaded into a temporary directory beside DIR and
# moved in only when all of them match: DIR never holds an unchecked file.
#
# usage: fetch-corpus.sh [--verify] DIR [SHA256SUMS]
#   --verify  download nothing: check the files already in DIR (and that
#             DIR holds no other file, which foliod would serve too)
# FOLIO_CORPUS_URL replaces the base URL (a mirror; file:///dir in tests).
set -eu

BASE=${FOLIO_CORPUS_URL:-https://storage.googleapis.com/dataflow-samples/shakespeare}
VERIFY=0
if [ "${1:-}" = --verify ]; then
    VERIFY=1
    shift
fi
[ $# -ge 1 ] || { echo "usage: $0 [--verify] DIR [SHA256SUMS]" >&2; exit 2; }
DIR=$1
SUMS=${2:-$(dirname "$0")/../data/shakespeare.SHA256SUMS}
[ -r "$SUMS" ] || { echo "fetch-corpus: cannot read $SUMS" >&2; exit 2; }
SUMS=$(cd "$(dirname "$SUMS")" && pwd)/$(basename "$SUMS")

die() {
    echo "fetch-corpus: $*" >&2
    exit 1
}

# The names in the checksum file: plain file names only.
NAMES=$(awk '{print $2}' "$SUMS")
for name in $NAMES; do
    case $name in
    */* | .* | "") die "bad file name '$name' in $SUMS" ;;
    esac
done

check() { # check DIR: every listed file matches, no other file is there
    (cd "$1" && sha256sum -c --quiet --strict "$SUMS") >&2 ||
        die "checksum mismatch in $1 (see above): not a good copy of the corpus"
    for f in "$1"/* "$1"/.[!.]*; do
        [ -e "$f" ] || continue
        b=$(basename "$f")
        printf '%s\n' "$NAMES" | grep -qxF "$b" ||
            die "$1/$b is not part of the corpus (foliod would serve it too)"
    done
}

if [ "$VERIFY" = 1 ]; then
    [ -d "$DIR" ] || die "$DIR is not a directory"
    check "$DIR"
    echo "fetch-corpus: $DIR: $(echo "$NAMES" | wc -l) files verified"
    exit 0
fi

fetch() { # fetch URL FILE
    if command -v curl >/dev/null 2>&1; then
        curl -fsSL --retry 3 -o "$2" "$1"
    elif command -v wget >/dev/null 2>&1; then
        wget -q -O "$2" "$1"
    else
        die "needs curl or wget"
    fi
}

mkdir -p "$(dirname "$DIR")"
TMP=$(mktemp -d "$(dirname "$DIR")/.fetch-corpus.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM
n=0
for name in $NAMES; do
    fetch "$BASE/$name" "$TMP/$name" || die "cannot download $BASE/$name
fetch-corpus: offline, or behind a proxy?  From a local copy of the files:
fetch-corpus:   make corpus FOLIO_CORPUS_URL=file:///path/to/shakespeare
fetch-corpus: (or sh dist/fetch-corpus.sh --verify DIR, then
fetch-corpus: ./configure --with-corpus=DIR to use DIR where it is)"
    n=$((n + 1))
done
check "$TMP"
mkdir -p "$DIR"
for name in $NAMES; do
    mv -f "$TMP/$name" "$DIR/$name"
done
echo "fetch-corpus: $n files downloaded into $DIR and verified"
