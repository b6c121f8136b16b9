"""Text to token ids: tokenizers (Hugging Face and Mistral's), the n-gram tables of pairs
common in human text and the human corpora they are built from."""
