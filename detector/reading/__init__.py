"""The model's reading of a text: a causal LM's expected and observed scores per token."""
