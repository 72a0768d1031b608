#!/bin/sh
# Install the real SGLang release $1 into the venv $2 (created with $3, a python3), once: a venv
# whose marker names the same release is reused. Says in one line why when it cannot (no package
# index, no disk) and exits 1: asking for the real-SGLang tier and not getting it is never a skip.
set -u
version=$1 venv=$2 python=${3:-python3}
marker="$venv/.installed-sglang-$version"
[ -f "$marker" ] && exit 0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "real-SGLang tier: installing sglang==$version into $venv (about 11 GB, minutes; once)"
if ! { [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"; } >"$log" 2>&1 \
    || ! "$venv/bin/python" -m pip install -q --disable-pip-version-check \
        "sglang==$version" >"$log" 2>&1; then
    reason=$(grep -E 'ERROR|Error|error' "$log" | grep -v '^WARNING' | tail -n 1)
    echo "real-SGLang tier: cannot install sglang==$version into $venv: ${reason:-see pip's output}"
    exit 1
fi
touch "$marker"
