"""The one-way import graph: provenance -> generator -> detector -> kernels.

Read statically from the source (every import statement, including those inside functions),
so a lazy import cannot hide a dependency that points the wrong way.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Lower layers never import higher ones; a package may import those below it.
LAYERS = ["kernels", "detector", "generator", "provenance"]
WEB = {"django", "rest_framework", "celery", "drf_spectacular"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(path): path for layer in LAYERS for path in (ROOT / layer).rglob("*.py")}


@cache
def _imports(module: str) -> frozenset[str]:
    """Absolute names of everything ``module`` imports (``from a import b`` gives a and
    a.b: b may be a submodule)."""
    path = _modules()[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return frozenset(found)


def _project_imports(module: str) -> set[str]:
    return {name for name in _imports(module) if name in _modules()}


def _closure(module: str) -> set[str]:
    """Project modules reachable from ``module`` through imports (packages' __init__ too)."""
    seen, todo = set(), [module]
    while todo:
        current = todo.pop()
        for name in _project_imports(current):
            parts = name.split(".")
            for i in range(1, len(parts) + 1):  # importing a.b.c runs a and a.b first
                parent = ".".join(parts[:i])
                if parent in _modules() and parent not in seen:
                    seen.add(parent)
                    todo.append(parent)
    return seen


def test_the_graph_sees_the_packages_and_their_imports():
    modules = _modules()
    assert {
        "kernels",
        "detector.evidence.detection",
        "generator",
        "provenance.checks.tasks",
    } <= set(modules)
    assert "provenance.checks.services" in _project_imports("provenance.checks.tasks")
    assert "detector.evidence.detection" in _project_imports("provenance.scoring.service")


@pytest.mark.parametrize("layer", LAYERS)
def test_imports_point_only_down_the_layers(layer):
    allowed = LAYERS[: LAYERS.index(layer) + 1]
    wrong = {
        (module, name)
        for module in _modules()
        if module.split(".")[0] == layer
        for name in _project_imports(module)
        if name.split(".")[0] not in allowed
    }
    assert not wrong, f"{layer} imports a layer above it: {sorted(wrong)}"


def test_kernels_import_no_project_package():
    wrong = {
        (module, name)
        for module in _modules()
        if module.split(".")[0] == "kernels"
        for name in _project_imports(module)
        if not name.startswith("kernels")
    }
    assert not wrong


@pytest.mark.parametrize("layer", ["kernels", "detector", "generator"])
def test_nothing_below_the_web_layer_imports_django(layer):
    wrong = {
        (module, name)
        for module in _modules()
        if module.split(".")[0] == layer
        for name in _imports(module)
        if name.split(".")[0] in WEB
    }
    assert not wrong, f"{layer} imports the web stack: {sorted(wrong)}"


def test_checks_services_never_import_the_tasks_even_indirectly():
    services = [m for m in _modules() if m.startswith("provenance.checks.services")]
    assert len(services) > 1
    for module in services:
        assert "provenance.checks.tasks" not in _closure(module), module


def _edges() -> dict[str, set[str]]:
    """module -> the project modules it imports (a package's ``__init__`` counts only when it
    is named itself: ``from a.b import c`` reads a.b, not a)."""
    modules = _modules()
    return {
        module: {name for name in _project_imports(module) if name != module and name in modules}
        for module in modules
    }


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found)


def test_the_circle_finder_finds_a_planted_circle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(edges) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_in_the_product():
    """No two product modules import each other, directly or through others, counting the
    imports inside functions (which a lazy import would otherwise hide)."""
    assert _circles(_edges()) == []


# The detector's pipeline, bottom up: a stage imports only the stages below it (and itself).
DETECTOR_STAGES = [
    "core",
    "text",
    "evidence",
    "reading",
    "decision",
    "credentials",
    "reports",
    "cli",
]


def _stage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "detector" else None


def test_the_detector_stages_import_only_stages_below_them():
    wrong = set()
    for module in _modules():
        stage = _stage(module)
        if stage not in DETECTOR_STAGES:
            continue
        allowed = DETECTOR_STAGES[: DETECTOR_STAGES.index(stage) + 1]
        for name in _project_imports(module):
            other = _stage(name)
            if other in DETECTOR_STAGES and other not in allowed:
                wrong.add((module, name))
    assert not wrong, f"a detector stage imports one above it: {sorted(wrong)}"


def test_the_evidence_stage_never_reaches_the_decision():
    """Evidence computes scores, p-values and spans; the verdict is the decision's."""
    evidence = [m for m in _modules() if _stage(m) == "evidence"]
    assert "detector.evidence.localize" in evidence
    for module in evidence:
        assert not any(_stage(m) == "decision" for m in _closure(module)), module


# The apps of provenance/ (and the modules at its root), bottom up. An app imports apps of its
# own layer or below, never above, and no two apps import each other.
APP_LAYERS = [
    # Foundation: settings and shared helpers, the scoring service (keys in, decision out),
    # accounts and their authentication.
    {
        *("env", "private_files", "settings", "errors", "api_errors"),
        *("api_input", "middleware", "throttling", "cache", "celery", "i18n", "reporting"),
        *("lib", "scoring", "accounts"),
    },
    # Registries the checks write to: keys, workers, the detection log and quota, webhooks.
    {"keys", "heartbeats", "usage", "webhooks"},
    # One text checked, stored and shown.
    {"checks"},
    # Surfaces built on checks: batches, streams, the playground, signed reports, public
    # verification, the operator's metrics.
    {"audits", "streams", "playground", "reports", "public", "metrics"},
    # What stands on public verification: C2PA's soft binding resolution.
    {"softbinding"},
    # Composing apps: what runs over all of the above (retention, the sweeper, the runner of
    # `make run`) and the project's entry points.
    {"retention", "sweeper", "runner", "health", "preload", "urls", "wsgi"},
]


def _app(module: str) -> str | None:
    """The app (or root module) of provenance/ that ``module`` belongs to."""
    parts = module.split(".")
    return parts[1] if parts[0] == "provenance" and len(parts) > 1 else None


def _app_edges() -> set[tuple[str, str]]:
    """(app, app it imports), read from every import statement, those in functions too."""
    edges = set()
    for module in _modules():
        source = _app(module)
        for name in _project_imports(module) if source else ():
            target = _app(name)
            if target and target != source:
                edges.add((source, target))
    return edges


def _layer(app: str) -> int:
    return next(i for i, layer in enumerate(APP_LAYERS) if app in layer)


def test_every_app_has_a_layer():
    apps = {_app(module) for module in _modules()} - {None}
    assert {"checks", "scoring", "audits", "health"} <= apps
    assert apps == set().union(*APP_LAYERS), "place a new app in APP_LAYERS"


def test_no_two_apps_import_each_other():
    edges = _app_edges()
    assert ("checks", "keys") in edges  # the graph sees the apps' imports
    both = sorted((a, b) for a, b in edges if a < b and (b, a) in edges)
    assert not both, f"apps importing each other: {both}"


def test_no_app_imports_an_app_above_it():
    up = sorted((a, b) for a, b in _app_edges() if _layer(b) > _layer(a))
    assert not up, f"apps importing a layer above them: {up}"


def test_the_scoring_service_imports_no_app():
    """Keys in, decision out: every surface calls it, so it reaches only the detector (and the
    generator's embedded model), never an app of provenance/."""
    scoring = [m for m in _modules() if _app(m) == "scoring"]
    assert "provenance.scoring.service" in scoring
    reached = {name for m in scoring for name in _closure(m)}
    assert "detector.decision.decide" in reached
    assert {_app(name) for name in reached} <= {None, "scoring"}, sorted(reached)
