"""`make cluster`: etcd and three brokers on this machine, until Ctrl-C.

    data/cluster/etcd/         etcd's data (client port 2379, peer port 2380)
    data/cluster/broker-1/     node 1 on port 9092, its log in broker-1.log
    data/cluster/broker-2/     node 2 on port 9093
    data/cluster/broker-3/     node 3 on port 9094

Topics default to replication factor 3 with min.insync.replicas 2, so acks=all survives one
broker down. etcd is Debian's `etcd` (package etcd-server). Ctrl-C (or SIGTERM) stops the
brokers cleanly (each flushes and writes its clean-shutdown marker), then etcd; a second
start reuses the data.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path


def _start_etcd(root: Path, client_port: int) -> subprocess.Popen:
    binary = shutil.which("etcd")
    if binary is None:
        sys.exit("etcd not found: install Debian's etcd-server (make test-deps does)")
    url = f"http://127.0.0.1:{client_port}"
    peer = f"http://127.0.0.1:{client_port + 1}"
    log = open(root / "etcd.log", "ab")
    return subprocess.Popen(
        [binary, "--name", "twinlog", "--data-dir", str(root / "etcd"), "--listen-client-urls", url,
         "--advertise-client-urls", url, "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
         "--initial-cluster", f"twinlog={peer}"],
        stdout=log, stderr=subprocess.STDOUT)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("data/cluster"))
    parser.add_argument("--first-port", type=int, default=9092)
    parser.add_argument("--etcd-port", type=int, default=2379)
    parser.add_argument("--brokers", type=int, default=3)
    args = parser.parse_args()
    root = args.data_dir
    root.mkdir(parents=True, exist_ok=True)
    etcd = _start_etcd(root, args.etcd_port)
    time.sleep(1.0)
    if etcd.poll() is not None:
        sys.exit(f"etcd exited with {etcd.returncode}: see {root / 'etcd.log'}")
    brokers = []
    for node in range(1, args.brokers + 1):
        port = args.first_port + node - 1
        log = open(root / f"broker-{node}.log", "ab")
        brokers.append(subprocess.Popen(
            [sys.executable, "-m", "broker", "serve", "--node-id", str(node), "--port", str(port),
             "--data-dir", str(root / f"broker-{node}"), "--etcd", f"http://127.0.0.1:{args.etcd_port}",
             "--default-replication-factor", str(min(3, args.brokers)),
             "--min-insync-replicas", str(min(2, args.brokers))],
            stdout=log, stderr=subprocess.STDOUT))
    bootstrap = ",".join(f"127.0.0.1:{args.first_port + i}" for i in range(args.brokers))
    print(f"twinlog cluster: etcd http://127.0.0.1:{args.etcd_port}, brokers {bootstrap}")
    print(f"bootstrap.servers={bootstrap}   (logs in {root}/; Ctrl-C stops)", flush=True)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    try:
        while not stop and all(p.poll() is None for p in brokers):
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    for p in brokers:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for node, p in enumerate(brokers, 1):
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
        print(f"broker {node} stopped ({p.returncode})")
    etcd.terminate()
    etcd.wait(10)
    print("etcd stopped")


if __name__ == "__main__":
    main()
