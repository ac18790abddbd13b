"""A broker without --etcd never loads the etcd client: aetcd with gRPC and protobuf was 40% of a
broker's start-up CPU (0.67 -> 0.43 s a start), and the test suite starts brokers by the hundred.
Only broker.py's clustered branch imports broker.cluster.member; other modules name it for types
only. Checked in a fresh interpreter, since this one may have loaded it for another test."""

import subprocess
import sys

ETCD_CLIENT = ("aetcd", "grpc")


def test_loading_a_broker_leaves_the_etcd_client_unloaded():
    probe = ("import sys, broker.lifecycle, broker.cli.main; "
             f"print(sorted(m for m in {ETCD_CLIENT!r} if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert loaded.stdout.strip() == "[]", loaded.stdout + loaded.stderr

