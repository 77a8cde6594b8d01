#!/usr/bin/env bash
# The whole test suite, on both cores (pytest-xdist): ./test.sh [pytest args]
# ./test.sh --fast: the development loop: tests/unit and tests/contract on the local and in-memory
# stores (everything not marked slow; a test's tier is its folder, see tests/conftest.py), on both cores,
# with the tests' temporary directories in /dev/shm (memory) where there is one.
# Installs what it needs: a virtualenv with the runtime and pyproject.toml's
# `dev` dependency group (tests, lint, benchmark tools), the S3 servers the tests
# start (scripts/ensure-realstores.sh: SeaweedFS, LocalStack, s3rver), and (as root on a
# machine with apt) Debian's chromium for the browser tests, nginx for the reverse proxy the
# development-mode browser test puts in front of the app, and curl and jq for the API walkthrough test.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/ensure-env.sh dev
if [ "${1:-}" != "--fast" ]; then
  bash scripts/ensure-realstores.sh  # the S3 servers the slow tests start (tests/realstores.py)
fi
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v jq >/dev/null 2>&1 || missing+=(jq)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
if [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian packages for the tests: ${missing[*]}" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") >/dev/null
fi
if [ "${1:-}" = "--fast" ]; then
  shift
  # Nothing named to run: the two tiers the loop runs (every system and browser test is slow; collecting their
  # modules cost each worker 3 s), without schemathesis's and Hypothesis's plugins (0.5 s at every start and
  # 0.8 s at the end; only the system tier's API contract test uses them).
  named=0
  for arg in "$@"; do
    if [[ "$arg" != -* && -e "${arg%%::*}" ]]; then named=1; fi
  done
  if [ "$named" = 0 ]; then
    set -- "$@" -p no:schemathesis -p no:hypothesispytest tests/unit tests/contract
  fi
  # The tests' temporary directories in memory where there is one: the local store syncs every file and
  # directory it writes (7,000 fsyncs in the loop, 12 s on this machine's disk), which no test can tell from a
  # disk's and none needs to survive a power cut.
  # Only a failed test's directory is kept there (pytest keeps the last three runs': 140 MB each).
  if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
    export TMPDIR=/dev/shm
    set -- -o tmp_path_retention_policy=failed "$@"
  fi
  # pytest keeps each test module with its asserts rewritten in __pycache__ (ignored by git) unless told not
  # to write bytecode; rewriting the loop's 140 modules again at every run took each worker 2 s.
  unset PYTHONDONTWRITEBYTECODE
  set -- -m "not slow and not browser" -n 2 "$@"
else
  # Everything, on both cores: a module's tests stay on one worker (its servers and its app started once),
  # each tier's time and the 25 slowest tests are printed at the end.
  set -- -n 2 --dist loadscope --durations=25 "$@"
fi
exec .venv/bin/python -m pytest "$@"
