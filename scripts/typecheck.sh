#!/usr/bin/env bash
# Types the machine checks: the package strictly, the app's pages and helpers with mypy's defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/mypy --strict s3task
.venv/bin/mypy app.py worker.py ui pages
