"""Triton kernels beside their pure-torch references (no project imports; see ``kernels.utils``).

- ``kernels.gumbel_sample``: fused keyed Gumbel-max sampler (watermarked and plain rows).
- ``kernels.score_tokens``: batch detection scores for ragged documents.
- ``kernels.philox``: the watermark PRF in torch and as Triton device functions.
"""
