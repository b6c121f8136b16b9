from __future__ import annotations

import os

import torch

torch.set_num_threads(1)  # 2 threads are ~3x slower than 1 on the 2-core machines
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
