#!/usr/bin/env bash
# The integration tier: the slow and fault tests, the ones in files that
# start with `//go:build integration` (kill -9 and restart of a private
# Redis, stalls, a private Redis Cluster and its failover, 64 × 1,000
# validations). `make test` (the fast tier) does not compile them;
# `make test-integration` runs exactly them, package by package, and
# .ci/run runs both tiers. Extra arguments go to `go test` (e.g. -v, -race).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
# Under -race a process otherwise sleeps 1 s at exit (the tests start many).
export GORACE=${GORACE:-atexit_sleep_ms=0}
status=0
found=0
for dir in $(grep -rl --include='*_test.go' '^//go:build integration' . | xargs -n1 dirname | sort -u); do
	names=$(grep -l '^//go:build integration' "$dir"/*_test.go | xargs sed -n 's/^func \(Test[A-Za-z0-9_]*\)(t \*testing\.T).*/\1/p' | paste -sd '|' -)
	[ -n "$names" ] || continue
	found=1
	echo "== $dir: $names"
	if ! $GO test -tags integration -count=1 -timeout 15m -run "^($names)\$" "$@" "$dir"; then
		status=1
	fi
done
if [ "$found" = 0 ]; then
	echo "no integration tests found" >&2
	exit 1
fi
exit $status
