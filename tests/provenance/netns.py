"""Hosts for the scale-out test: one network namespace per host, each with one veth into a
bridge that lives in a hub namespace. Addresses exist only inside the namespaces (the
machine's own network is untouched) and ``close()`` always removes everything it created:
processes first, then the namespaces (their veths go with them)."""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Sequence
from pathlib import Path

from provenance.runner.processes import stop_process


class NamespacesUnavailable(RuntimeError):
    pass


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise NamespacesUnavailable(f"ip {' '.join(args)}: {done.stderr.strip()}")


class Hosts:
    """``Hosts(["db", "web", ...])``: host ``name`` has address ``address(name)``."""

    def __init__(self, names: Sequence[str]) -> None:
        self.tag = secrets.token_hex(3)
        self.names = list(names)
        self.subnet = f"10.{secrets.randbelow(200) + 20}.{secrets.randbelow(250) + 1}"
        self.created: list[str] = []
        self.processes: list[subprocess.Popen[bytes]] = []

    def namespace(self, name: str) -> str:
        return f"pv{self.tag}-{name}"

    def address(self, name: str) -> str:
        return f"{self.subnet}.{self.names.index(name) + 1}"

    def up(self) -> Hosts:
        if os.geteuid() != 0:
            raise NamespacesUnavailable("network namespaces need root (CAP_NET_ADMIN)")
        try:
            hub = self._add("hub")
            _ip("-n", hub, "link", "add", "br0", "type", "bridge")
            _ip("-n", hub, "link", "set", "br0", "up")
            for i, name in enumerate(self.names):
                ns, inside, outside = self._add(name), f"e{self.tag}{i}", f"b{self.tag}{i}"
                _ip("link", "add", inside, "netns", ns, "type", "veth", "peer", "name", outside)
                _ip("link", "set", outside, "netns", hub)
                _ip("-n", hub, "link", "set", outside, "master", "br0", "up")
                _ip("-n", ns, "addr", "add", f"{self.address(name)}/24", "dev", inside)
                _ip("-n", ns, "link", "set", inside, "up")
                _ip("-n", ns, "link", "set", "lo", "up")
        except NamespacesUnavailable:
            self.close()
            raise
        return self

    def _add(self, name: str) -> str:
        ns = self.namespace(name)
        _ip("netns", "add", ns)
        self.created.append(ns)
        return ns

    def run(self, name: str) -> list[str]:
        """The prefix that runs a command on host ``name``."""
        return ["ip", "netns", "exec", self.namespace(name)]

    def start(
        self, name: str, args: list[str], env: dict[str, str], log: Path
    ) -> subprocess.Popen[bytes]:
        """A long-running process on host ``name`` (``ip netns exec`` execs it: same pid)."""
        with log.open("ab") as out:
            process = subprocess.Popen(
                [*self.run(name), *args], env=env, stdout=out, stderr=subprocess.STDOUT
            )
        self.processes.append(process)
        return process

    def close(self) -> None:
        for process in reversed(self.processes):
            stop_process(process, timeout=10)
        for ns in reversed(self.created):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self.created.clear()
