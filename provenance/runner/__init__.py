"""The process runner behind ``make run``: the embedded Redis, the supervisor that restarts crashed
children, and the process helpers."""
