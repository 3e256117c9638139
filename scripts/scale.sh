#!/usr/bin/env bash
# The scale curve of SPEC §9 / issue 4: search cost at 1k, 10k, 100k and 1M QAs
#   1. `memex search` as a process on the embedded store (p50/p90/p99, file bytes per QA);
#   2. retrieval in process (p50/p99, build time);
#   3. search through `memex serve` on Redis, one client (p50/p99) and Redis bytes per QA,
#      on a private redis-server started here (so the machine's Redis is not filled).
# Usage: scripts/scale.sh [sizes]   (default "1000 10000 100000 1000000")
# Stores are kept in $MEMEX_SCALE_DIR (default /tmp/memex-scale): a second run reuses them.
# The 1M import takes about half an hour on a 2-core VM; the whole script about an hour.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${1:-"1000 10000 100000 1000000"}
dir=${MEMEX_SCALE_DIR:-/tmp/memex-scale}
mkdir -p "$dir"
go=${GO:-go}

CGO_ENABLED=0 $go build -o "$dir/memex" ./cmd/memex
$go build -o "$dir/memex-bench" ./cmd/memex-bench

echo "## memex search as a process (embedded store)"
"$dir/memex-bench" process -memex "$dir/memex" -sizes "$(tr ' ' ',' <<<"$sizes")" \
	-runs 100 -overhead-at 0 -dir "$dir"

echo
echo "## retrieval in process"
for n in $sizes; do
	"$dir/memex-bench" latency -n "$n" -queries 2000
done

echo
echo "## search through memex serve on Redis (1 client), Redis bytes per QA"
port=${MEMEX_SCALE_REDIS_PORT:-6391}
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
	--dir "$dir" --logfile "$dir/redis.log" --pidfile "$dir/redis.pid"
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true' EXIT
for n in $sizes; do
	redis-cli -p "$port" flushall >/dev/null
	"$dir/memex-bench" service -redis "redis://127.0.0.1:$port/0" -n "$n" -c 1 -d 5s \
		-rounds 1 -only-service -skip-validate -queries prompt
done
