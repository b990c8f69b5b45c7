#!/bin/sh
# Regenerate configure and the Makefile templates (they are never committed).
set -e
cd "$(dirname "$0")"
mkdir -p m4 build-aux
exec autoreconf --install --force --warnings=all
