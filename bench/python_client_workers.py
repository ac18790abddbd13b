"""Secondary load generators: the pure-Python clients, kafka-python and aiokafka.

They produce the same records as the confluent-kafka worker (acks=1, no compression, 1 MiB
batches, linger 5 ms, one partition) for a fixed time, and report what was acknowledged:
every send's future is kept and checked after the final flush. Their rows show what a user of
those clients gets from twinlog; the client's own CPU is the limit long before the broker's
(the report prints both CPU figures).
"""

from __future__ import annotations

import asyncio
import os
import time

from load_workers import _cpu_self, _pin


def kafka_python_produce_worker(p: dict, ready, go, out) -> None:
    _pin(p["cpus"])
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=p["bootstrap"], acks=1, linger_ms=p["linger_ms"],
                             batch_size=p["batch_bytes"], max_request_size=4 << 20,
                             request_timeout_ms=60_000)
    topic, value, partition = p["topic"], os.urandom(p["value_size"]), p["partition"]
    producer.send(topic, value, partition=partition).get(timeout=30)
    ready.put(os.getpid())
    go.wait(60)
    send, futures = producer.send, []
    cpu0, t0 = _cpu_self(), time.monotonic()
    deadline = t0 + p["seconds"]
    while time.monotonic() < deadline:
        futures.extend(send(topic, value, partition=partition) for _ in range(500))
    producer.flush(p["flush_timeout"])
    t1, cpu1 = time.monotonic(), _cpu_self()
    failed = [f for f in futures if not f.is_done or f.failed()]
    out.put({"worker": os.getpid(), "sent": len(futures), "acked": len(futures) - len(failed),
             "failed": len(failed), "unacked": 0, "warmup_acked": 1, "bytes": (len(futures) - len(failed)) * len(value),
             "t0": t0, "t1": t1, "client_cpu_s": cpu1 - cpu0,
             "errors": [repr(f.exception) for f in failed[:3] if f.is_done]})
    producer.close(5)


def aiokafka_produce_worker(p: dict, ready, go, out) -> None:
    _pin(p["cpus"])
    asyncio.run(_aiokafka_produce(p, ready, go, out))


async def _aiokafka_produce(p: dict, ready, go, out) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=p["bootstrap"], acks=1, linger_ms=p["linger_ms"],
                                max_batch_size=p["batch_bytes"], max_request_size=4 << 20,
                                request_timeout_ms=60_000)
    await producer.start()
    try:
        topic, value, partition = p["topic"], os.urandom(p["value_size"]), p["partition"]
        await producer.send_and_wait(topic, value, partition=partition)
        ready.put(os.getpid())
        await asyncio.get_running_loop().run_in_executor(None, go.wait, 60)
        futures = []
        cpu0, t0 = _cpu_self(), time.monotonic()
        deadline = t0 + p["seconds"]
        while time.monotonic() < deadline:
            for _ in range(500):
                # send() waits only when the accumulator is full; its result is the ack's future
                futures.append(await producer.send(topic, value, partition=partition))
        await producer.flush()
        results = await asyncio.gather(*futures, return_exceptions=True)
        t1, cpu1 = time.monotonic(), _cpu_self()
        failed = [x for x in results if isinstance(x, BaseException)]
        out.put({"worker": os.getpid(), "sent": len(futures), "acked": len(futures) - len(failed),
                 "failed": len(failed), "unacked": 0, "warmup_acked": 1,
                 "bytes": (len(futures) - len(failed)) * len(value), "t0": t0, "t1": t1,
                 "client_cpu_s": cpu1 - cpu0, "errors": [repr(x) for x in failed[:3]]})
    finally:
        await producer.stop()
