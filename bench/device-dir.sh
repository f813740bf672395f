#!/usr/bin/env bash
# Makes .device/ (git-ignored) for bench/gpu.sh on a GPU machine that has a
# compiler, CMake, nvcc and a pip torch but none of the Debian packages the
# worker's tests build with: from this machine's packages, a googletest
# source tree (libgtest-dev's /usr/src/googletest) and the headers of Gloo,
# nlohmann/json and zlib with zlib's library, libjpeg-turbo's header and
# library (the JPEG folder reader; the loader finds it as libturbojpeg.so.0
# through the worker's build RPATH); and nvJPEG's header and library
# (--gpu-decode; PyPI's nvidia-nvjpeg in .venv, about 6 MB), which a pip
# torch does not bring. Carry the folder with the checkout (the device
# tool: carry [".device"]).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEV="$ROOT/.device"
rm -rf "$DEV"
mkdir -p "$DEV/include" "$DEV/lib"
cp -r /usr/src/googletest "$DEV/googletest"
cp -r /usr/include/gloo /usr/include/nlohmann "$DEV/include/"
cp /usr/include/zlib.h /usr/include/zconf.h "$DEV/include/"
cp -L "/usr/lib/$(gcc -print-multiarch)/libz.so" "$DEV/lib/libz.so"
LIB="/usr/lib/$(gcc -print-multiarch)"
cp /usr/include/turbojpeg.h "$DEV/include/"
cp -L "$LIB/libturbojpeg.so.0" "$DEV/lib/libturbojpeg.so.0"
cp -L "$LIB/libturbojpeg.so.0" "$DEV/lib/libturbojpeg.so"
NVJPEG=$(echo "$ROOT"/.venv/lib/python3*/site-packages/nvidia/cu13)
cp "$NVJPEG/include/nvjpeg.h" "$DEV/include/"
cp "$NVJPEG/lib/libnvjpeg.so.13" "$DEV/lib/"
du -sh "$DEV"
