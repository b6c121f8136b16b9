"""Content Credentials (C2PA) for generated text: manifests signed into replies, read from
texts, and signed as sidecars when the watermark recovers a stripped text's origin."""
