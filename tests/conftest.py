"""How the suite shares a machine when run in parallel (``pytest -n 2 --dist loadgroup``, as
``make test`` runs it; nothing changes without ``-n``).

Under ``--dist loadgroup`` the tests are dealt out to the workers by group: a test module runs
whole on one worker (its module-scoped fixtures, a model or a vLLM server, are built once),
the kernel tests share one Triton-interpreter child, and the web product's tests form two
shards (``WEB_FIRST``), each whole on one worker. A shard's tests share one real Redis, Celery
worker, Chromium and embedded generator, and a secret scan (marker ``secret_scan``,
tests/provenance/test_secret_scan.py, one per shard) must see every log line and answer of
the process that produced them, after them. The groups go out longest first: the two shards,
then the groups that hold a ``slow`` test, then the rest.

The groups are assigned here rather than by ``xdist_group`` marks: xdist renames a marked
test's node id to carry its group, which pytest >= 9.2 no longer lets a plugin do.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

# vLLM's CPU backend binds its engine's OpenMP thread to a core, the same one for every engine
# when left to choose: two engines started by the two xdist workers (the generator's tests and
# the playground's) would then share core 0 and each start several times slower. Each worker's
# engines get their own core.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _WORKER.startswith("gw") and _WORKER[2:].isdigit():
    os.environ.setdefault(
        "VLLM_CPU_OMP_THREADS_BIND", str(int(_WORKER[2:]) % max(1, os.cpu_count() or 1))
    )

# The kernel tests share one Triton-interpreter child, and so one worker.
SHARED = {"tests/kernels/": "kernels"}
# The web product's tests, in two shards. Each shard runs whole on one worker, with its own
# Redis, Celery worker, Chromium and embedded generator (session fixtures, started by the
# first test that needs them) and its own secret scan, run last (test_secret_scan.py holds
# one scan per shard). The entries below (folders and files under tests/provenance/) form the
# first shard, everything else the second: the two are about even on SQLite and on
# PostgreSQL (docs/testing.md). The playground's generator and browser tests stay together
# in the first, so that one vLLM server serves them.
WEB = "tests/provenance/"
WEB_SHARDS = ("web-1", "web-2")
WEB_FIRST = {
    "playground",
    "audits",
    "accounts",
    "public",
    "test_scale_out.py",
    "test_browser.py",
    "test_i18n_browser.py",
    "test_history_browser.py",
    "test_one_voice.py",
    "test_rate_limits.py",
    "test_spans.py",
    "test_secrets.py",
}


def group_of(nodeid: str) -> str:
    if nodeid.startswith(WEB):
        if nodeid.startswith(WEB + "test_secret_scan.py::") and nodeid.endswith("]"):
            shard = nodeid.rsplit("[", 1)[1][:-1]
            if shard in WEB_SHARDS:
                return shard
        first = nodeid[len(WEB) :].split("::", 1)[0].split("/", 1)[0]
        return WEB_SHARDS[0] if first in WEB_FIRST else WEB_SHARDS[1]
    for folder, group in SHARED.items():
        if nodeid.startswith(folder):
            return group
    return nodeid.split("::", 1)[0]  # the test's module


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    # Groups go out in collection order (below), not by their number of tests.
    config.option.loadscopereorder = False

    class SharedFixtures(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return SharedFixtures(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest groups first, so that no long one starts last: the web shards, then the
    groups holding a ``slow`` test, then the rest, each in its collection order."""
    slow = {group_of(item.nodeid) for item in items if item.get_closest_marker("slow")}

    def rank(item: pytest.Item) -> int:
        group = group_of(item.nodeid)
        return 0 if group in WEB_SHARDS else 1 if group in slow else 2

    items.sort(key=rank)
