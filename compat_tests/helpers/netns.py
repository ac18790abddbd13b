"""A private network of Linux network namespaces, for tests that cut links between real processes.

    root namespace (the test, its clients)
        └─ <tag>-h ──veth── switch namespace <tag>-sw: bridge br0
                                 ├─veth── <tag>-e   (etcd)      10.213.X.10
                                 ├─veth── <tag>-b1  (broker 1)  10.213.X.11
                                 └─veth── ...

Every host is a namespace with one interface (eth0, on the bridge) and one address of a private
/24 chosen so it clashes with no route of the root namespace; the root namespace gets one veth
(<tag>-h, address .1) so the test's clients reach every host directly. Processes run in a host
with `host.argv(command)` (`ip netns exec`, which execs: the pid is the process's own).

Faults are iptables rules in the namespaces of the hosts they concern — never in the root
namespace, whose rules, routes and interfaces belong to the machine:

  - `cut(a, bs, "reject")`: a and each b refuse each other's TCP packets with a reset
    (REJECT --reject-with tcp-reset): a connect is refused at once, as by a dead process, and
    the connections already open are reset (`ss -K`, both sides) instead of idling on;
  - `cut(a, bs, "drop")`: the packets vanish: connects and open connections time out;
  - `cut_clients(hs)`: the test's clients' packets to each h vanish (rules in h alone);
  - `heal()`: every rule goes, in every host.

`close()` deletes every namespace (and so every veth and the bridge); it runs at exit too, so a
failed or interrupted test leaves nothing behind. Needs root, iproute2 and iptables.
"""

from __future__ import annotations

import atexit
import ipaddress
import itertools
import os
import subprocess
from dataclasses import dataclass

SUBNET_PREFIX = "10.213"
FIRST_HOST = 10
CUT_MODES = ("reject", "drop")

_OPEN: list["Network"] = []
_COUNTER = itertools.count()


def _run(*argv: str, check: bool = True) -> str:
    done = subprocess.run(argv, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def _free_subnet(attempt: int) -> ipaddress.IPv4Network:
    """A 10.213.X.0/24 that no route of the root namespace covers (another run's host veth)."""
    used = [ipaddress.ip_network(line.split()[0], strict=False)
            for line in _run("ip", "-4", "route", "show").splitlines() if line and line[0].isdigit()]
    start = os.getpid() + 7 * attempt  # a later network of this process, another subnet
    for x in (start + i for i in range(250)):
        net = ipaddress.ip_network(f"{SUBNET_PREFIX}.{x % 250}.0/24")
        if not any(net.overlaps(u) for u in used if u.prefixlen > 0):
            return net
    raise RuntimeError(f"no free {SUBNET_PREFIX}.X.0/24 left")


@dataclass(frozen=True)
class Host:
    name: str
    namespace: str
    ip: str

    def argv(self, command: list[str]) -> list[str]:
        """`command` run inside this host's namespace."""
        return ["ip", "netns", "exec", self.namespace, *command]

    def run(self, *command: str, check: bool = True) -> str:
        return _run(*self.argv(list(command)), check=check)


class Network:
    def __init__(self) -> None:
        count = next(_COUNTER)
        self.tag = f"tl{os.getpid() % 10000}{count % 10}"  # <= 7 chars: names stay <= 15
        self.subnet = _free_subnet(count)
        self._addresses = iter(list(self.subnet.hosts())[FIRST_HOST - 1:])
        self.gateway = str(next(iter(self.subnet.hosts())))  # the root namespace's end
        self.switch = f"{self.tag}-sw"
        self.hosts: dict[str, Host] = {}
        self._namespaces: list[str] = []
        self._root_link = f"{self.tag}-h"
        _OPEN.append(self)
        try:
            self._add_namespace(self.switch)
            _run("ip", "-n", self.switch, "link", "add", "br0", "type", "bridge")
            _run("ip", "-n", self.switch, "link", "set", "br0", "up")
            _run("ip", "link", "add", self._root_link, "type", "veth", "peer", "name", "root", "netns", self.switch)
            self._plug("root")
            _run("ip", "addr", "add", f"{self.gateway}/{self.subnet.prefixlen}", "dev", self._root_link)
            _run("ip", "link", "set", self._root_link, "up")
        except BaseException:
            self.close()
            raise

    def _add_namespace(self, name: str) -> None:
        _run("ip", "netns", "add", name)
        self._namespaces.append(name)
        _run("ip", "-n", name, "link", "set", "lo", "up")

    def _plug(self, port: str) -> None:
        _run("ip", "-n", self.switch, "link", "set", port, "master", "br0")
        _run("ip", "-n", self.switch, "link", "set", port, "up")

    def add_host(self, name: str) -> Host:
        """A new namespace on the bridge, with the next free address."""
        if len(name) > 6 or name in self.hosts:
            raise ValueError(f"host name {name!r}: taken, or over 6 characters")
        host = Host(name, f"{self.tag}-{name}", str(next(self._addresses)))
        self._add_namespace(host.namespace)
        _run("ip", "-n", host.namespace, "link", "add", "eth0", "type", "veth", "peer", "name", name,
             "netns", self.switch)
        self._plug(name)
        _run("ip", "-n", host.namespace, "addr", "add", f"{host.ip}/{self.subnet.prefixlen}", "dev", "eth0")
        _run("ip", "-n", host.namespace, "link", "set", "eth0", "up")
        self.hosts[name] = host
        return host

    # ------------------------------------------------------------------ faults
    def cut(self, a: Host, others: list[Host], mode: str = "reject") -> None:
        """Cut every link between `a` and each of `others`, both directions."""
        if mode not in CUT_MODES:
            raise ValueError(f"cut mode {mode!r}: one of {CUT_MODES}")
        for x, y in [(a, b) for b in others] + [(b, a) for b in others]:
            # a reset passes: it is the refusal the other side's rule sends, and REJECT would drop it
            action = (["-p", "tcp", "!", "--tcp-flags", "RST", "RST", "-j", "REJECT", "--reject-with", "tcp-reset"]
                      if mode == "reject" else ["-j", "DROP"])
            x.run("iptables", "-w", "-I", "INPUT", "-s", y.ip, *action)
        if mode == "reject":  # open connections would otherwise learn of the cut only when they send
            for b in others:
                self.reset_connections(a, b)
                self.reset_connections(b, a)

    def cut_clients(self, hosts: list[Host]) -> None:
        """Drop what the test's clients (the root namespace) send to each of `hosts`: rules in
        those hosts alone, so their connections to the clients stall as in a DROP cut."""
        for host in hosts:
            host.run("iptables", "-w", "-I", "INPUT", "-s", self.gateway, "-j", "DROP")

    @staticmethod
    def reset_connections(a: Host, b: Host) -> None:
        """Abort a's TCP connections to b (`ss -K`: the socket ends with a reset, as the kernel
        ends a connection whose packets come back refused)."""
        a.run("ss", "-K", "dst", b.ip, check=False)

    def heal(self) -> None:
        """Remove every cut."""
        for host in self.hosts.values():
            host.run("iptables", "-w", "-F", "INPUT")

    # ---------------------------------------------------------------- teardown
    def close(self) -> None:
        """Delete every namespace: their interfaces, the veths' other ends and the bridge go
        with them. Idempotent."""
        for name in reversed(self._namespaces):
            _run("ip", "netns", "del", name, check=False)
        self._namespaces.clear()
        _run("ip", "link", "del", self._root_link, check=False)  # gone already with its peer, normally
        if self in _OPEN:
            _OPEN.remove(self)

    def __enter__(self) -> "Network":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@atexit.register
def _close_leftovers() -> None:
    for network in list(_OPEN):
        network.close()
