"""The sweeper: what the broker or a dead worker lost is published again."""
