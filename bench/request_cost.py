"""What one small request costs the broker, against what asyncio itself costs per request.

    .venv/bin/python bench/request_cost.py [--requests 20000] [--partitions 64] [--records 16]
        [--layouts segment,commitlog] [--depth 8] [--rounds 3]

Librdkafka sends one Produce per partition, so a transaction over 64 partitions is 64 small
requests and a broker's cost per request, not per byte, sets its rate (bench/README.md,
"Transactions"). This measures that cost alone, with no client library in the way:

- one raw connection (wire/client_codec.py) keeps --depth Produce v9 requests in flight, acks=1,
  each one batch of --records records of 100 B for one partition, the partitions taken in turn;
- per layout, a fresh twinlog broker (bench/broker_launcher.py), pinned to CPU 0 with the client
  on CPU 1; its CPU time (/proc) over the requests, divided by their count;
- the floor, in the same run and placement: a bare asyncio server (the broker's own event loop
  and transport kind) that frames each request and writes a fixed 40-byte answer. It parses
  nothing and stores nothing: what any asyncio broker pays per request before its own work.

Each figure is the median of --rounds passes (alternated broker / floor), after a warm-up pass.
Writes bench/results/request_cost.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from broker_launcher import BrokerProcess, broker_command, cpu_seconds, free_port, pinned  # noqa: E402
from machine_facts import machine_facts  # noqa: E402
from topic_admin import create_topic  # noqa: E402
from wire.batch_builder import build_batch  # noqa: E402
from wire.client_codec import encode_request  # noqa: E402
from wire.request_builder import build_request  # noqa: E402

BENCH = Path(__file__).resolve().parent
HOST = "127.0.0.1"
_SIZE = struct.Struct(">i")
FLOOR_ANSWER = 40  # bytes after the correlation id: about a one-partition Produce answer


def produce_requests(topic: str, partitions: int, records: int, count: int) -> list[bytes]:
    batch = bytes(build_batch([(None, b"x" * 100)] * records, int(time.time() * 1000)))
    return [encode_request(build_request(0, 9, transactional_id=None, acks=1, timeout=10_000, topic_data=[
        {"name": topic, "partition_data": [{"index": i % partitions, "records": batch}]}]), i + 1, "request-cost")
        for i in range(count)]


def drive(port: int, requests: list[bytes], depth: int) -> None:
    """Send every request with `depth` in flight; return once each has its answer."""
    with socket.create_connection((HOST, port)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf, sent, answered = b"", 0, 0
        while sent < min(depth, len(requests)):
            s.sendall(requests[sent])
            sent += 1
        while answered < len(requests):
            while len(buf) < 4 or len(buf) < 4 + _SIZE.unpack_from(buf)[0]:
                chunk = s.recv(1 << 20)
                if not chunk:
                    raise ConnectionError(f"the server closed the connection after {answered} answers")
                buf += chunk
            buf = buf[4 + _SIZE.unpack_from(buf)[0]:]
            answered += 1
            if sent < len(requests):
                s.sendall(requests[sent])
                sent += 1


def measure(pid: int, port: int, requests: list[bytes], depth: int) -> dict:
    cpu0, t0 = cpu_seconds(pid), time.perf_counter()
    drive(port, requests, depth)
    secs, cpu = time.perf_counter() - t0, cpu_seconds(pid) - cpu0
    return {"requests_s": len(requests) / secs, "cpu_us_per_request": cpu / len(requests) * 1e6,
            "cpu_share": cpu / secs}


class _Floor(asyncio.Protocol):
    def connection_made(self, transport) -> None:
        self.transport, self.buf = transport, b""

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while len(self.buf) >= 4:
            size = _SIZE.unpack_from(self.buf)[0]
            if len(self.buf) < 4 + size:
                break
            answer = self.buf[8:12] + bytes(FLOOR_ANSWER)  # the request's correlation id
            self.buf = self.buf[4 + size:]
            self.transport.write(_SIZE.pack(len(answer)) + answer)


def serve_floor(port: int) -> None:
    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(_Floor, HOST, port)
        async with server:
            await server.serve_forever()
    asyncio.run(main())


def _median(passes: list[dict]) -> dict:
    return {k: statistics.median(p[k] for p in passes) for k in passes[0]}


def run_layout(layout: str, ns, work: Path, cpus: tuple[set[int] | None, set[int] | None]) -> dict:
    broker_cpus, _ = cpus
    data = work / layout
    port = free_port()
    broker = BrokerProcess(broker_command("twinlog", None, ["--storage-mode", layout], data, HOST, port),
                           HOST, port, work / f"broker-{layout}.log", broker_cpus)
    floor_port = free_port()
    while floor_port == port:  # neither is bound yet: free_port may name the broker's port again
        floor_port = free_port()
    floor = subprocess.Popen(pinned([sys.executable, __file__, "--serve-floor", str(floor_port)], broker_cpus))
    try:
        broker.start()
        create_topic(broker.bootstrap, "request-cost", ns.partitions)
        requests = produce_requests("request-cost", ns.partitions, ns.records, ns.requests)
        _wait_listening(floor_port)
        measure(broker.proc.pid, port, requests[:2000], ns.depth)  # warm-up: files, caches
        measure(floor.pid, floor_port, requests[:2000], ns.depth)
        twinlog, bare = [], []
        for _ in range(ns.rounds):
            twinlog.append(measure(broker.proc.pid, port, requests, ns.depth))
            bare.append(measure(floor.pid, floor_port, requests, ns.depth))
    finally:
        broker.stop()
        floor.kill()
        floor.wait()
    out = {"layout": layout, "twinlog": _median(twinlog), "floor": _median(bare), "passes": {"twinlog": twinlog,
                                                                                          "floor": bare}}
    print(f"{layout:9}: twinlog {out['twinlog']['cpu_us_per_request']:6.1f} us of CPU a request "
          f"({out['twinlog']['requests_s']:,.0f}/s); bare asyncio {out['floor']['cpu_us_per_request']:5.1f} us "
          f"({out['floor']['requests_s']:,.0f}/s)", flush=True)
    return out


def _wait_listening(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((HOST, port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--partitions", type=int, default=64)
    parser.add_argument("--records", type=int, default=16, help="100 B records in each request's batch")
    parser.add_argument("--depth", type=int, default=8, help="requests in flight")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--layouts", default="segment,commitlog")
    parser.add_argument("--serve-floor", type=int, help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.serve_floor:
        return serve_floor(ns.serve_floor)
    usable = sorted(os.sched_getaffinity(0))
    cpus = ({usable[0]}, set(usable[1:])) if len(usable) >= 2 else (None, None)
    if cpus[1]:
        os.sched_setaffinity(0, cpus[1])
    (BENCH / "results" / "tmp").mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="request-cost-", dir=BENCH / "results" / "tmp"))
    results = {"machine": machine_facts(), "settings": {k: v for k, v in vars(ns).items() if k != "serve_floor"},
               "load_average": os.getloadavg(), "layouts": []}
    try:
        for layout in ns.layouts.split(","):
            results["layouts"].append(run_layout(layout, ns, work, cpus))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = BENCH / "results" / "request_cost.json"
    out.write_text(json.dumps(results, indent=1, default=str))
    print(f"results in {out}")


if __name__ == "__main__":
    main()
