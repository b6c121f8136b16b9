"""How the suite shares a machine when run in parallel (``pytest -n 2 --dist loadgroup``, as
``make test`` runs it; nothing changes without ``-n``).

Under ``--dist loadgroup`` the tests are dealt out to the workers by group, in collection
order: a test module runs whole on one worker (its module-scoped fixtures, a model or a vLLM
server, are built once), the kernel tests share one Triton-interpreter child, and the web
product's tests run together on one worker. Those share one real Redis, Celery worker,
Chromium and embedded generator per session, and the session-wide secret scan (marker
``secret_scan``, tests/provenance/test_secret_scan.py) must see every log line and answer of
the process that produced them, after them. The product's group is collected first: it is
the longest, and the other worker takes the rest meanwhile, the runner's and the scale-out
tests (``ON_THEIR_OWN``) among them.

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

# Test folders whose files share session fixtures, and so one worker.
SHARED = {"tests/provenance/": "provenance", "tests/kernels/": "kernels"}
# Web product tests that use none of those fixtures (they start their own processes: `make
# run`, hosts in network namespaces) and are among the longest: free to go to the other worker.
ON_THEIR_OWN = ("tests/provenance/runner/", "tests/provenance/test_scale_out.py")


def group_of(nodeid: str) -> str:
    if nodeid.startswith(ON_THEIR_OWN):
        return nodeid.split("::", 1)[0]
    for folder, group in SHARED.items():
        if nodeid.startswith(folder):
            return group
    return nodeid.split("::", 1)[0]  # the test's module


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedFixtures(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return SharedFixtures(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: group_of(item.nodeid) != "provenance")
