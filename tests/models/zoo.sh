#!/bin/sh
# The whole model zoo through `ipu-exec --check`: every vision model at
# batch 1 and 4 (opset 13), the transformers at opsets 13 and 17, tiny and
# small. Not part of make check (it takes a while on 2 cores); run it by
# hand: tests/models/zoo.sh [NAME...]   (same environment as run.sh)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
PYTHON_REF=${PYTHON_REF:-/usr/bin/python3}
if [ ! -x "$PYTHON_REF" ] || ! "$PYTHON_REF" -c 'import torch' 2>/dev/null; then
    echo "SKIP: $PYTHON_REF with torch is needed"
    exit 77
fi
names=${*:-$("$PYTHON_REF" "$here/make_models.py" --list)}
specs=""
for n in $names; do
    case $n in
        gpt2_*|bert_*) specs="$specs 1:13:$n 4:13:$n 1:17:$n" ;;
        *)             specs="$specs 1:13:$n 4:13:$n" ;;
    esac
done
# shellcheck disable=SC2086
exec "$here/run.sh" $specs
