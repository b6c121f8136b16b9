"""Audits: a batch of texts checked against the team's keys, scored in chunks, exported."""
