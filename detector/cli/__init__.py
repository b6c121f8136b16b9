"""``python -m detector``: detect, localize and verify from the command line."""
