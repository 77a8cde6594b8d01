#!/usr/bin/env bash
# Run s3task: ./run.sh [streamlit flags]
# Creates .venv on first use with the runtime only (requirements.txt: this
# project and its dependencies), then serves the app on http://127.0.0.1:8501
# with an embedded worker and tasks kept in ./s3task-data (see S3TASK_* settings).
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/ensure-env.sh app
exec .venv/bin/streamlit run app.py \
  --server.address 127.0.0.1 \
  --server.maxUploadSize "${S3TASK_MAX_UPLOAD_MB:-200}" \
  "$@"
