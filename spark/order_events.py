"""The demo's event stream: JSON order events, as a shop's checkout service would emit them.

    {"order_id": "o-000042", "customer": "c-0173", "region": "eu-west", "amount": 37.5,
     "currency": "EUR", "items": 3, "event_time": "2026-03-02T10:04:31.250Z"}

Keyed by region (so one region's orders stay in order on one partition). Event times move
forward about 4 orders a second with up to 20 s of jitter (events arrive slightly out of order);
a few arrive very late, 5 minutes behind, which a 2-minute watermark drops once their window
has been emitted. `true_windows` gives what an aggregation over every event would say, so the
demo can show what the watermark kept and what it dropped.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from confluent_kafka import Producer

from spark.client_config import LIBRDKAFKA_LOG

REGIONS = {"eu-west": "EUR", "us-east": "USD", "ap-south": "INR", "sa-east": "BRL"}
START = datetime(2026, 3, 2, 10, 0, 0, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Order:
    order_id: str
    customer: str
    region: str
    amount: float
    currency: str
    items: int
    event_time: datetime
    late: bool

    def to_json(self) -> bytes:
        return json.dumps({
            "order_id": self.order_id, "customer": self.customer, "region": self.region,
            "amount": self.amount, "currency": self.currency, "items": self.items,
            "event_time": self.event_time.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        }).encode()


def generate(n: int, seed: int = 7, late_fraction: float = 0.02) -> list[Order]:
    rng = random.Random(seed)
    orders = []
    for i in range(n):
        region = rng.choice(list(REGIONS))
        on_time = START + timedelta(seconds=i / 4 + rng.uniform(-20, 20))
        late = i > n // 4 and rng.random() < late_fraction
        orders.append(Order(
            order_id=f"o-{i:06d}", customer=f"c-{rng.randrange(500):04d}", region=region,
            amount=round(rng.lognormvariate(3.3, 0.6), 2), currency=REGIONS[region],
            items=rng.randint(1, 6), event_time=on_time - timedelta(minutes=5) if late else on_time, late=late))
    return orders


def produce(bootstrap: str, topic: str, orders: list[Order]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                         "linger.ms": 10, "logger": LIBRDKAFKA_LOG})
    for o in orders:
        producer.produce(topic, key=o.region.encode(), value=o.to_json(),
                         timestamp=int(o.event_time.timestamp() * 1000))
        producer.poll(0)
    left = producer.flush(60)
    if left:
        raise RuntimeError(f"{left} order events were not acknowledged")


def true_windows(orders: list[Order], minutes: int = 1) -> dict[tuple[datetime, str], tuple[int, float]]:
    """(window start, region) -> (orders, revenue) over every event, late or not."""
    out: dict[tuple[datetime, str], list] = defaultdict(lambda: [0, 0.0])
    for o in orders:
        start = o.event_time.replace(second=0, microsecond=0)
        start -= timedelta(minutes=start.minute % minutes)
        acc = out[(start, o.region)]
        acc[0] += 1
        acc[1] += o.amount
    return {k: (c, round(s, 2)) for k, (c, s) in out.items()}
