#!/bin/sh
# A fake claude -p --output-format json: reads the prompt, answers in the envelope.
cat > /dev/null
cat <<'JSON'
{"type":"result","subtype":"success","is_error":false,"result":"{\"summary\":\"Fixed the data race in the cache.\",\"key_learnings\":[\"Run go test -race ./cache to reproduce races in the cache package.\"],\"errors\":[\"WARNING: DATA RACE in cache.Get\"],\"solutions\":[\"Guard the map with a sync.RWMutex and take the read lock in Get.\"],\"tags\":[\"go\",\"race\"],\"category\":\"error_solution\"}","usage":{"input_tokens":1200,"output_tokens":150,"cache_read_input_tokens":300},"total_cost_usd":0.0123}
JSON
