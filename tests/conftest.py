"""How the suite shares a machine when run in parallel (``pytest -n 2 --dist loadgroup``, as
``make test`` runs it; nothing changes without ``-n``).

Under ``--dist loadgroup`` the tests are dealt out to the workers by group, in collection
order: a test module runs whole on one worker (its module-scoped fixtures, a model or a vLLM
server, are built once), the kernel tests share one Triton-interpreter child, and the web
product's tests run together on one worker. Those share one real Redis, Celery worker,
Chromium and embedded generator per session, and the session-wide secret scan (marker
``secret_scan``, tests/provenance/test_secret_scan.py) must see every log line and answer of
the process that produced them, after them. The product's group is collected first: it is
the longest, and the other worker takes the rest meanwhile.

The groups are assigned here rather than by ``xdist_group`` marks: xdist renames a marked
test's node id to carry its group, which pytest >= 9.2 no longer lets a plugin do.
"""

from __future__ import annotations

from typing import Any

import pytest

# Test folders whose files share session fixtures, and so one worker.
SHARED = {"tests/provenance/": "provenance", "tests/kernels/": "kernels"}


def group_of(nodeid: str) -> str:
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
