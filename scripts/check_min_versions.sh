#!/usr/bin/env bash
# Do the lowest versions pyproject.toml declares really work? A dated, manual check (CI does not run it: it
# installs a second set of packages, a few minutes). It builds a temporary venv with every `name>=X` of the
# core and `hf` dependencies pinned to `name==X` (plus the torch build of setup.sh), puts this checkout's src/
# on the path (no install, so nothing resolves the dependencies again), and runs the hf backend and classifier
# tests and the store and config tests. Needs Python >= 3.11 (tomllib). Record the outcome, dated, in
# docs/packaging.md.
#   scripts/check_min_versions.sh            keep nothing
#   KEEP_VENV=1 scripts/check_min_versions.sh   keep the venv and print its path
set -euo pipefail
cd "$(dirname "$0")/.."

python="${PYTHON:-python3}"
torch_version="${TRUSTEVAL_TORCH_VERSION:-2.13.0}"
venv=$(mktemp -d "${TMPDIR:-/tmp}/trusteval-minver.XXXXXX")
[ -n "${KEEP_VENV:-}" ] || trap 'rm -rf "$venv"' EXIT

# `name>=X` -> `name==X` for the core dependencies and the hf extra (the extras' own test tools stay as they are).
pins=$("$python" - <<'EOF'
import re, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
for requirement in project["dependencies"] + project["optional-dependencies"]["hf"]:
    match = re.fullmatch(r"([A-Za-z0-9_.\-\[\]]+)>=([0-9][0-9A-Za-z.]*)", requirement.replace(" ", ""))
    if not match:
        raise SystemExit(f"check_min_versions: cannot pin {requirement!r}; write it as name>=X")
    print(f"{match[1]}=={match[2]}")
EOF
)
echo "Lowest declared versions: $(echo "$pins" | tr '\n' ' ')"
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
started=$SECONDS
"${pip[@]}" "torch==$torch_version"
# shellcheck disable=SC2086
"${pip[@]}" $pins pytest
echo "Installed in $((SECONDS - started)) s:"
"$venv/bin/python" -m pip list --format=freeze 2>/dev/null | grep -iE '^(numpy|scipy|scikit-learn|pydantic|pyyaml|rich|httpx|transformers|tokenizers|safetensors|huggingface-hub|torch)=='

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONPATH="$PWD/src"
"$venv/bin/python" -m trusteval --version
"$venv/bin/python" -m pytest -q -x -p no:cacheprovider \
  tests/test_hf_backend.py tests/test_hf_classifier.py tests/test_store.py tests/test_config.py "$@"
[ -z "${KEEP_VENV:-}" ] || echo "venv kept: $venv"
