"""The vLLM-compatible core: key configuration, the Philox PRF, contexts and de-duplication,
per-token scores and the null distributions. Everything here is bit-exact with upstream."""
