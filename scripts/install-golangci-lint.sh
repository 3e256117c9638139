#!/usr/bin/env bash
# Installs golangci-lint (the version pinned below) from the Go module proxy
# into bin/ of this repository, when bin/golangci-lint is missing or another
# version. `make lint` runs it; .ci/run reaches it through `make test`.
# The build is kept once per machine and version in the user's cache
# (${XDG_CACHE_HOME:-~/.cache}/memex), so another clone copies it instead of
# linking it again.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=v2.15.0
BIN="$PWD/bin"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/memex/golangci-lint-$VERSION"
pinned() { [ -x "$1" ] && "$1" version 2>/dev/null | grep -q "version ${VERSION#v} "; }
if pinned "$BIN/golangci-lint"; then
	exit 0
fi
if ! pinned "$CACHE/golangci-lint"; then
	mkdir -p "$CACHE"
	GOBIN="$CACHE" ${GO:-go} install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$VERSION"
fi
mkdir -p "$BIN"
cp "$CACHE/golangci-lint" "$BIN/golangci-lint.tmp"
mv "$BIN/golangci-lint.tmp" "$BIN/golangci-lint"
"$BIN/golangci-lint" version
