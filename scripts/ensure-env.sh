#!/usr/bin/env bash
# Creates .venv and installs one set into it (again only when pyproject.toml or
# requirements.txt changed). Called by run.sh, test.sh and .ci/run so a fresh
# machine needs nothing by hand.
#
#   scripts/ensure-env.sh [app]   the runtime only: requirements.txt (this project, editable)
#   scripts/ensure-env.sh GROUP   the runtime plus a dependency group of pyproject.toml
#                                 (dev: everything ./test.sh and CI use; or test, lint, bench)
#
# Each set keeps its own stamp, .venv/.installed-SET.sha256. Every set includes the
# runtime, so any up-to-date stamp satisfies `app`: ./run.sh after ./test.sh installs nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
set_name=${1:-app}
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
want=$(cat requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1)
current() { [ -f "$1" ] && [ "$(cat "$1")" = "$want" ]; }
stamp=.venv/.installed-$set_name.sha256
if current "$stamp"; then
  exit 0
fi
if [ "$set_name" = app ]; then
  for other in .venv/.installed-*.sha256; do
    if current "$other"; then
      exit 0
    fi
  done
fi
echo "ensure-env: installing the $set_name set into .venv" >&2
# --group needs pip 25.1 or later (a new venv may come with an older one).
.venv/bin/python -m pip install --quiet "pip>=25.1"
if [ "$set_name" = app ]; then
  .venv/bin/python -m pip install --quiet -r requirements.txt
else
  .venv/bin/python -m pip install --quiet -r requirements.txt --group "$set_name"
fi
echo "$want" >"$stamp"
