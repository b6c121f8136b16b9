"""Retention and deletion of submitted texts."""
