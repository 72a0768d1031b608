#!/bin/sh
# Install the parser and resolution of another SGLang release $1 into the venv $2, on top of the
# tier's venv $3 (the real SGLang install): `pip install --no-deps sglang==$1` into a venv of its
# own, which reads every other package (torch, transformers, ...) from $3 through a .pth file.
# Why not a venv of its own dependencies: importing sglang.srt.server_args imports torch, and
# sglang's declared torch is the CUDA build (a bare venv pulls about 5.7 GB of nvidia-* wheels);
# the tier's CPU torch serves both releases' parsers. What is new is sglang's own wheel (about
# 35 MB, 230 MB installed). Once: a venv whose marker names the same release is reused. Says in
# one line why when it cannot, and exits 1 (asking for the tier and not getting it is no skip).
set -u
version=$1 venv=$2 base=$3
marker="$venv/.installed-sglang-parser-$version"
[ -f "$marker" ] && exit 0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if [ ! -x "$base/bin/python" ]; then
    echo "real-SGLang tier: no tier venv at $base to build the $version parser on: run make test-real"
    exit 1
fi
echo "real-SGLang tier: installing sglang==$version (--no-deps, on top of $base) into $venv (once)"
# the tier venv's own interpreter (not its venv's): the .pth then adds the tier's packages after
# this venv's own, so `import sglang` finds $version and everything else comes from the tier
python=$("$base/bin/python" -c 'import os, sys; print(os.path.realpath(sys.executable))')
purelib='import sysconfig; print(sysconfig.get_paths()["purelib"])'
if ! { [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"; } >"$log" 2>&1 \
    || ! "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
        "sglang==$version" >"$log" 2>&1; then
    reason=$(grep -E 'ERROR|Error|error' "$log" | grep -v '^WARNING' | tail -n 1)
    echo "real-SGLang tier: cannot install sglang==$version into $venv: ${reason:-see pip's output}"
    exit 1
fi
"$base/bin/python" -c "$purelib" >"$("$venv/bin/python" -c "$purelib")/zz-tier-packages.pth"
if ! "$venv/bin/python" -c "import sglang.srt.server_args" >"$log" 2>&1; then
    echo "real-SGLang tier: sglang==$version's parser does not import on $base's packages: $(tail -n 1 "$log")"
    exit 1
fi
touch "$marker"
