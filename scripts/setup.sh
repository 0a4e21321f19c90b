#!/usr/bin/env bash
# Installs everything trafo needs on Debian 12, idempotently: Debian's libraries and tools,
# and a pinned LibTorch (the PyPI torch wheel) with sacreBLEU in a git-ignored virtual
# environment at .venv, made with Debian's /usr/bin/python3. clang-14 and its libFuzzer runtime
# (libclang-rt-14-dev) build the fuzz harnesses (fuzz/, scripts/fuzz.sh).
# Rerunning takes seconds when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

TORCH_VERSION=2.11.0
SACREBLEU_VERSION=2.6.0
TENSORBOARD_VERSION=2.21.0
# The CTranslate2 runtime and SentencePiece's Python module: the export tests load trafo's exported
# models with them, and bench/ctranslate2_decode.py measures them.
CTRANSLATE2_VERSION=4.8.5
SENTENCEPIECE_VERSION=0.2.0
# Hugging Face's safetensors reader: a test opens trafo's checkpoints with it.
SAFETENSORS_VERSION=0.7.0
# The clients `trafo serve` is tested with.
REQUESTS_VERSION=2.34.2
LIBRETRANSLATEPY_VERSION=2.1.4
# websocket-client: tests/browser.py drives headless Chromium through its DevTools socket.
WEBSOCKET_CLIENT_VERSION=1.8.0
# Argos Translate (LibreTranslate's engine): a test installs trafo's .argosmodel and translates with
# it. Installed without its declared dependencies, which would add spaCy (126 MB) that it does not
# need; torch, numpy, protobuf, requests and sympy are already here.
ARGOSTRANSLATE_VERSION=1.11.0
ARGOS_PACKAGES=("argostranslate==$ARGOSTRANSLATE_VERSION" stanza==1.10.1 minisbd==0.9.5 onnxruntime==1.32.0
  emoji==2.16.0 tqdm==4.70.1 flatbuffers==25.12.19)
# Hugging Face transformers: a test loads trafo's MarianMT export with it (AutoModelForSeq2SeqLM,
# AutoTokenizer) and checks that it translates as trafo does. Its dependencies, pinned too.
TRANSFORMERS_VERSION=4.57.1
TRANSFORMERS_PACKAGES=("transformers==$TRANSFORMERS_VERSION" huggingface_hub==0.36.2 tokenizers==0.22.2 hf-xet==1.8.0)
# eflomal, the word aligner whose links `trafo train --guided-alignment` learns from (a test aligns
# the toy corpus with it). Built from its source distribution with Cython and python3-dev.
EFLOMAL_VERSION=2.0.0
EFLOMAL_PACKAGES=("eflomal==$EFLOMAL_VERSION" Cython==3.3.1)
VENV=.venv
APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  python3-venv python3-dev
  libcli11-dev libspdlog-dev libfmt-dev
  libsentencepiece-dev sentencepiece
  googletest libgtest-dev libbenchmark-dev
  nlohmann-json3-dev libutfcpp-dev libxml2-dev libgloo-dev libxxhash-dev libjemalloc-dev libboost-dev
  libicu-dev libcld2-dev libzip-dev
  libjs-chart.js chromium
  libreoffice-writer-nogui libreoffice-impress-nogui
  clang-14 libclang-rt-14-dev
)

say() { printf 'setup: %s\n' "$*" >&2; }
fail() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }
# The installed version of a Python distribution in the virtual environment, or nothing. Never fails:
# under `set -e` a failing command substitution would end the script without a word.
version_in_venv() {
  "$VENV/bin/python" -c 'import importlib.metadata as m, sys; print(m.version(sys.argv[1]))' "$1" 2>/dev/null || true
}

missing=()
for package in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
if ((${#missing[@]})); then
  say "installing Debian packages: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq || fail "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    || fail "could not install Debian packages: ${missing[*]}"
else
  say "Debian packages: all present"
fi

if [ ! -x "$VENV/bin/python" ]; then
  say "creating the virtual environment $VENV with /usr/bin/python3"
  /usr/bin/python3 -m venv "$VENV" || fail "could not create $VENV (is python3-venv installed?)"
fi
have_torch=$("$VENV/bin/python" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null || true)
have_sacrebleu=$("$VENV/bin/python" -c 'import sacrebleu; print(sacrebleu.__version__)' 2>/dev/null || true)
have_tensorboard=$("$VENV/bin/python" -c 'import tensorboard; print(tensorboard.__version__)' 2>/dev/null || true)
if [ "$have_torch" != "$TORCH_VERSION" ] || [ "$have_sacrebleu" != "$SACREBLEU_VERSION" ] \
  || [ "$have_tensorboard" != "$TENSORBOARD_VERSION" ]; then
  say "installing torch==$TORCH_VERSION, sacrebleu==$SACREBLEU_VERSION and tensorboard==$TENSORBOARD_VERSION into $VENV (about 5 GB)"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
    "torch==$TORCH_VERSION" "sacrebleu==$SACREBLEU_VERSION" "tensorboard==$TENSORBOARD_VERSION" numpy \
    || fail "pip could not install torch==$TORCH_VERSION (is PyPI reachable?)"
else
  say "torch $have_torch, sacrebleu $have_sacrebleu and tensorboard $have_tensorboard: present in $VENV"
fi
have_ctranslate2=$("$VENV/bin/python" -c 'import ctranslate2; print(ctranslate2.__version__)' 2>/dev/null || true)
have_sentencepiece=$("$VENV/bin/python" -c 'import sentencepiece; print(sentencepiece.__version__)' 2>/dev/null || true)
have_safetensors=$("$VENV/bin/python" -c 'import safetensors; print(safetensors.__version__)' 2>/dev/null || true)
if [ "$have_ctranslate2" != "$CTRANSLATE2_VERSION" ] || [ "$have_sentencepiece" != "$SENTENCEPIECE_VERSION" ] \
  || [ "$have_safetensors" != "$SAFETENSORS_VERSION" ]; then
  say "installing ctranslate2==$CTRANSLATE2_VERSION, sentencepiece==$SENTENCEPIECE_VERSION and safetensors==$SAFETENSORS_VERSION into $VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
    "ctranslate2==$CTRANSLATE2_VERSION" "sentencepiece==$SENTENCEPIECE_VERSION" "safetensors==$SAFETENSORS_VERSION" \
    || fail "pip could not install ctranslate2==$CTRANSLATE2_VERSION (is PyPI reachable?)"
fi
# The clients `trafo serve` is checked with: LibreTranslate's own Python client, requests, and a
# browser (websocket-client).
have_requests=$("$VENV/bin/python" -c 'import requests; print(requests.__version__)' 2>/dev/null || true)
have_libretranslatepy=$(version_in_venv libretranslatepy)
have_websocket_client=$(version_in_venv websocket-client)
if [ "$have_requests" != "$REQUESTS_VERSION" ] || [ "$have_libretranslatepy" != "$LIBRETRANSLATEPY_VERSION" ] \
  || [ "$have_websocket_client" != "$WEBSOCKET_CLIENT_VERSION" ]; then
  say "installing requests==$REQUESTS_VERSION, libretranslatepy==$LIBRETRANSLATEPY_VERSION and websocket-client==$WEBSOCKET_CLIENT_VERSION into $VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
    "requests==$REQUESTS_VERSION" "libretranslatepy==$LIBRETRANSLATEPY_VERSION" \
    "websocket-client==$WEBSOCKET_CLIENT_VERSION" \
    || fail "pip could not install requests==$REQUESTS_VERSION (is PyPI reachable?)"
fi
have_argostranslate=$(version_in_venv argostranslate)
if [ "$have_argostranslate" != "$ARGOSTRANSLATE_VERSION" ]; then
  say "installing argostranslate==$ARGOSTRANSLATE_VERSION into $VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps "${ARGOS_PACKAGES[@]}" \
    || fail "pip could not install argostranslate==$ARGOSTRANSLATE_VERSION (is PyPI reachable?)"
fi
have_transformers=$(version_in_venv transformers)
if [ "$have_transformers" != "$TRANSFORMERS_VERSION" ]; then
  say "installing transformers==$TRANSFORMERS_VERSION into $VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${TRANSFORMERS_PACKAGES[@]}" \
    || fail "pip could not install transformers==$TRANSFORMERS_VERSION (is PyPI reachable?)"
fi
have_eflomal=$(version_in_venv eflomal)
if [ "$have_eflomal" != "$EFLOMAL_VERSION" ]; then
  say "installing eflomal==$EFLOMAL_VERSION into $VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${EFLOMAL_PACKAGES[@]}" \
    || fail "pip could not install eflomal==$EFLOMAL_VERSION (is PyPI reachable?)"
fi
"$VENV/bin/python" -c 'import torch, sacrebleu, tensorboard, ctranslate2, sentencepiece, safetensors, requests, libretranslatepy, websocket, transformers, eflomal' \
  || fail "torch, sacrebleu, tensorboard, ctranslate2, sentencepiece, safetensors, requests, libretranslatepy, websocket-client, transformers or eflomal does not import from $VENV"
say "done"
