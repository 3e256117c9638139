#!/usr/bin/env bash
# memex quickstart: the whole loop in one minute, offline, with only Go.
#
# It builds memex into a temporary directory and runs the example agent
# (examples/agent/agent.sh, a bash script: no network, no model) three times
# on the same question against a fresh store. The store is the default one
# (file://$XDG_DATA_HOME/memex/memex.db); XDG_DATA_HOME points into the
# temporary directory, so your own memory is never touched.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

export XDG_DATA_HOME="$tmp/data"     # the default store lives here
export XDG_CONFIG_HOME="$tmp/config" # no user config file
export MEMEX_PROJECT=quickstart      # one project, whatever directory you run from

header() { printf '\n\033[1m== %s\033[0m\n%s\n\n' "$1" "$2"; }

header "build" "go build -o $tmp/memex ./cmd/memex"
(cd "$repo" && CGO_ENABLED=0 go build -o "$tmp/memex" ./cmd/memex)
memex="$tmp/memex"
agent="$repo/examples/agent/agent.sh"
question="How do I find a data race in my Go tests?"
# The probation slot is a random (Thompson sampling) draw; a fixed seed makes
# this demo reproducible. Real runs leave it random.
run() { "$memex" run --seed 1 --backend "$agent" --verify true --explain "$question"; }

header "run 1: empty memory" \
"Nothing to inject, so the agent answers on its own. '--verify true' stands in for your
test suite: the run passes (strong evidence), so memex extracts a candidate QA from it."
run

header "run 2: the candidate is injected on probation" \
"The gatekeeper puts the new candidate in the exploration slot (labelled unverified).
The agent uses it and cites its anchor [QA_REF ...]; with the passing --verify that is
an independent strong pass, so trust rises and the QA reaches level 2 (trusted)."
run

header "run 3: the QA is injected as trusted" \
"Now it is in the trusted set: injected first, cited again, trust rises again."
run

header "memex qa list" "The QA, its status, level, trust and counters."
"$memex" qa list

header "memex stats" "The project's trust and usage summary."
"$memex" stats

printf '\nDone. The temporary store is removed on exit. To use memex for real: make build,\nthen bin/memex run "your question" in your project (default backend: claude).\n'
