#!/usr/bin/env bash
# Install PyTorch's CPU build and the entmax package for the torch tests (the drop-in
# numsoft.torch, autograd, torch arrays). pip's default torch wheel on Linux is CUDA's
# (several GB of nvidia-* packages), so the CPU build is asked for by its "+cpu" local
# version where the configured index serves it, else from PyTorch's CPU index. entmax
# goes in without its dependencies, so that pip does not replace that torch. Where
# neither install works the torch tests report themselves skipped (the run's summary
# says how many).
set -u
python="${PYTHON:-python3}"
version="2.13.0"
if ! "$python" -c "import torch" 2>/dev/null; then
    "$python" -m pip install --quiet "torch==$version+cpu" ||
        "$python" -m pip install --quiet "torch==$version" --index-url https://download.pytorch.org/whl/cpu ||
        echo "== PyTorch's CPU build is not installable here: the torch tests will skip"
fi
"$python" -m pip install --quiet --no-deps "entmax==1.3" ||
    echo "== entmax 1.3 is not installable here: the drop-in's comparison tests will skip"
exit 0
