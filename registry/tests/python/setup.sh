#!/usr/bin/env bash
# Creates (once) a Python venv with grpcio, grpcio-tools and grpcio-reflection for the
# wire-compatibility test, and prints the venv's python path on the last line.
# Env: OLM_RS_VENV overrides the venv location (default $HOME/.cache/olm-rs/venv).
set -euo pipefail
VENV="${OLM_RS_VENV:-$HOME/.cache/olm-rs/venv}"
mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock 9
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV" >&2
fi
if ! "$VENV/bin/python" -c 'import grpc, grpc_tools, grpc_reflection' 2>/dev/null; then
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    'grpcio>=1.60' 'grpcio-tools>=1.60' 'grpcio-reflection>=1.60' >&2
fi
echo "$VENV/bin/python"
