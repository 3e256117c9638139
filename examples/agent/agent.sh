#!/usr/bin/env bash
# An offline example agent for memex (no network, no model).
#
# memex runs any command as a backend: it writes the merged prompt on the
# command's stdin and reads what it prints. This agent:
#   - reads the prompt from stdin;
#   - if the prompt holds a memex memory block with [QA_REF <id>] items, it
#     answers with the first item's answer and cites its anchor once (that
#     citation is how memex learns the item was *used*);
#   - otherwise it answers from a few canned topics it knows by keyword, or
#     with a generic answer, and ends with a "Steps:" line.
# Exit code: 0, or $AGENT_EXIT when set (to try memex's exit-code pass-through).
# With AGENT_ECHO_SECRET set it also prints that value (to try redaction).
set -euo pipefail

prompt=$(cat)

# The user's query is what follows the memory block (or the whole prompt).
query=$prompt
if grep -q '^\[/MEMORY_CONTEXT\]' <<<"$prompt"; then
	query=$(awk 'found { print } /^\[\/MEMORY_CONTEXT\]/ { found = 1 }' <<<"$prompt")
fi

# The first memory item: "1) [QA_REF <id>] ..." then "A:" and a fenced answer.
id=$(grep -oE '^[0-9]+\) \[QA_REF [A-Za-z0-9_.:-]+\]' <<<"$prompt" | head -n 1 | sed -E 's/.*\[QA_REF ([^]]+)\]/\1/' || true)

if [[ -n "$id" ]]; then
	answer=$(awk -v id="$id" '
		index($0, "[QA_REF " id "]") == 4 || index($0, "[QA_REF " id "]") == 5 { item = 1; next }
		item && !fence && /^A:$/ { getline f; fence = f; next }
		item && fence != "" && $0 == fence { exit }
		item && fence != "" { print }
	' <<<"$prompt")
	echo "Memory already has an answer to this, and I checked it against the task. [QA_REF $id]"
	echo
	printf '%s\n' "$answer"
else
	q=$(tr '[:upper:]' '[:lower:]' <<<"$query")
	case "$q" in
	*race*)
		echo "Run the tests with the race detector: go test -race ./... reports each data race with the two"
		echo "goroutines' stacks. Guard the shared map with a sync.Mutex (or use sync.Map) and run it again."
		echo "Steps: go test -race ./..."
		;;
	*rebase* | *commit*)
		echo "To undo the last commit but keep its changes staged, run git reset --soft HEAD~1;"
		echo "to drop them too, git reset --hard HEAD~1 (only if the commit was never pushed)."
		echo "Steps: git log --oneline -3; git reset --soft HEAD~1"
		;;
	*venv* | *python*)
		echo "Create a virtual environment with python3 -m venv .venv, activate it with"
		echo "source .venv/bin/activate, then install the dependencies with pip install -r requirements.txt."
		echo "Steps: python3 -m venv .venv; source .venv/bin/activate; pip install -r requirements.txt"
		;;
	*timeout* | *http*)
		echo "Give the HTTP client an explicit timeout (http.Client{Timeout: 10 * time.Second}) and pass a"
		echo "context with a deadline to each request, so a slow server cannot hang the program."
		echo "Steps: go vet ./...; go test ./..."
		;;
	*)
		echo "I read the task and the code around it. Start by reproducing the problem with the smallest"
		echo "possible input, then change one thing at a time and re-run the check after each change."
		echo "Steps: make test"
		;;
	esac
fi

if [[ -n "${AGENT_ECHO_SECRET:-}" ]]; then
	echo "debug: using token ${AGENT_ECHO_SECRET}"
fi
exit "${AGENT_EXIT:-0}"
