#!/usr/bin/env bash
# Peer benchmark: installs the peers if needed, then runs bench/peers/run_all.mjs (resumable;
# --models / --threads / --reps / --prompt / --decode / --nbits / --runtimes / --fresh).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/install.sh" >&2
exec node "$here/run_all.mjs" "$@"
