#!/usr/bin/env bash
# The whole test suite: ./test.sh [pytest args]
# Installs what it needs (a virtualenv from requirements.txt; Debian's chromium
# for the browser tests when running as root on a machine that has apt).
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/ensure-env.sh
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's chromium for the browser tests..." >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null
fi
exec .venv/bin/python -m pytest "$@"
