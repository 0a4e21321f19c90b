#!/usr/bin/env bash
# Packs what bench/gpu.sh and bench/gpu_profile.sh need on a CUDA machine into device/ (git-ignored): the trafo binary
# built here, the Debian libraries it links beyond LibTorch and the C runtime, and a copy of a
# corpus for the real training run (CORPUS_DIR with train/dev/test.en and .fr, for example one
# bench/gettext_corpus.py made; without it gpu.sh skips the real run). The CUDA machine brings
# its own PyTorch (the same LibTorch version, built for CUDA), which gpu.sh puts first on the
# library path.
# Usage: bench/gpu_pack.sh [CORPUS_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-}
[ -x build/trafo ] || { echo "gpu_pack: error: build/trafo is missing: run scripts/build.sh" >&2; exit 2; }
rm -rf device && mkdir -p device/lib
cp build/trafo device/trafo
strip device/trafo
# Everything ldd resolves outside LibTorch's wheel, less glibc, the C++ runtime and CUDA's runtime
# (the CUDA machine's are newer, and its PyTorch needs them).
ldd build/trafo | awk '$3 ~ /^\// {print $3}' | grep -v -e '/site-packages/' \
  -e '/libc\.so' -e '/libm\.so' -e '/libdl\.so' -e '/librt\.so' -e '/libpthread\.so' -e '/ld-linux' \
  -e '/libstdc++' -e '/libgcc_s' -e '/libcudart' -e '/libcuda\.so' | while read -r lib; do cp -L "$lib" device/lib/; done
# The test executable: gpu.sh runs its tests of the sync-free step, the CUDA graphs, the CUDA loss
# kernel and greedy search on CUDA, which skip without a GPU.
if [ -x build/tests/trafo_tests ]; then cp build/tests/trafo_tests device/ && strip device/trafo_tests; fi
if [ -n "$corpus" ]; then
  [ -f "$corpus/train.en" ] || { echo "gpu_pack: error: $corpus holds no train.en" >&2; exit 2; }
  mkdir -p device/data && cp "$corpus"/* device/data/
fi
du -sh device
