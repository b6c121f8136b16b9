"""The robustness benchmark's parts (``benchmarks/bench_robustness.py`` is its command):
``generation`` (the cached texts), ``edits`` (edits with their record), ``columns`` (the
deployable statistics), ``oracle`` (tests told where the edits are), ``masked`` (suspected
edits), ``tables`` (the edit and planted-passage tables) and ``common`` (settings and the
run's columns)."""
