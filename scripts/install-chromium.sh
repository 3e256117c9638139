#!/usr/bin/env bash
# Installs Debian's chromium for the dashboard's browser tests
# (cmd/memex/ui_browser_test.go) when it is missing. `make chromium` runs it;
# .ci/run calls it before `make test`, where a missing browser fails the test.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; then
	exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "install-chromium: not root and no sudo: run 'apt-get install -y chromium' as root" >&2
		exit 1
	fi
	SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends chromium
command -v chromium
