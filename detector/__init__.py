"""Provenance's detector: a plain library (no Django) for vLLM's keyed Gumbel-max watermark.

Pipeline: tokenize -> contexts -> de-duplicate -> PRF -> token scores -> Gamma p-value -> family
correction. See ``detector.evidence.detection`` for the entry points.
"""

from __future__ import annotations

__all__ = ["__version__"]
__version__ = "0.1.0"
