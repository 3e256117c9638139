#!/usr/bin/env bash
# Installs golangci-lint (the version pinned below) from the Go module proxy
# into bin/ of this repository, when bin/golangci-lint is missing or another
# version. `make lint` runs it; .ci/run reaches it through `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=v2.15.0
BIN="$PWD/bin"
if [ -x "$BIN/golangci-lint" ] && "$BIN/golangci-lint" version 2>/dev/null | grep -q "version ${VERSION#v} "; then
	exit 0
fi
mkdir -p "$BIN"
GOBIN="$BIN" ${GO:-go} install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$VERSION"
"$BIN/golangci-lint" version
