"""The product's decision: a family of keys tested on a text, corrected together, three-way."""
