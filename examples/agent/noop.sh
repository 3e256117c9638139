#!/usr/bin/env bash
# A no-op agent, for measuring what memex adds to a run (SPEC §9: `memex run`
# overhead over "the same no-op agent" run directly). It reads the whole
# prompt with shell builtins only and prints the same short answer whatever
# it was given, so its own cost does not depend on whether memex injected
# memory. (examples/agent/agent.sh, the demo agent, does more work when it
# finds a memory block: it parses it with grep, awk and sed.)
while IFS= read -r line || [[ -n $line ]]; do :; done
printf '%s\n' "Restart the service after changing its configuration: run systemctl restart app and check systemctl status app." \
	"Steps: systemctl restart app; systemctl status app"
