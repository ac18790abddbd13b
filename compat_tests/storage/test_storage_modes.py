"""Both storage engines on one broker: a topic's `storage.mode` is chosen at creation and kept.

Runs once per broker default (`--storage-mode`, the storage_mode fixture): each run creates a
topic of the other mode beside one of the default, so every combination is covered.
"""

from __future__ import annotations

from pathlib import Path

from compat_tests.helpers.raw_kafka import Client, make_batch, read_records
from compat_tests.helpers.topics import unique_topic

NONE, INVALID_CONFIG = 0, 40
TOPIC_RESOURCE = 2
DEFAULT_CONFIG, STATIC_BROKER_CONFIG, DYNAMIC_TOPIC_CONFIG = 5, 4, 1


def storage_mode_config(client: Client, topic: str):
    r = client.request(32, 4, include_synonyms=False, include_documentation=False, resources=[
        {"resource_type": TOPIC_RESOURCE, "resource_name": topic, "configuration_keys": ["storage.mode"]}])
    (res,) = r.results
    (entry,) = res.configs
    return entry.value, entry.config_source


def values(client: Client, topic: str) -> list[bytes]:
    p = client.fetch(topic, 0, 0)
    assert p.error_code == NONE, p
    return [v for _o, _t, _k, v in read_records(p.records)]


def files_of(data_dir: Path, topic: str) -> dict[str, bool]:
    return {"segment": (data_dir / f"{topic}-0").is_dir(),
            "commitlog": (data_dir / "commitlog-store" / "consumequeue" / topic / "0").is_dir()}


def test_topics_of_both_modes_on_one_broker(fresh_broker, storage_mode):
    other = "commitlog" if storage_mode == "segment" else "segment"
    default_topic, other_topic = unique_topic("default-mode"), unique_topic("other-mode")
    with Client.to(fresh_broker) as c:
        c.create_topic(default_topic, 1)
        c.create_topic(other_topic, 1, {"storage.mode": other})
        for i in range(3):
            assert c.produce(default_topic, 0, make_batch([b"d%d" % i])).base_offset == i
            assert c.produce(other_topic, 0, make_batch([b"o%d" % i, b"o%d+" % i])).base_offset == 2 * i
        # A topic that does not set storage.mode has the broker's, and its source: --storage-mode
        # (STATIC_BROKER_CONFIG) when the broker was started with it, else DEFAULT_CONFIG.
        broker_source = STATIC_BROKER_CONFIG if "--storage-mode" in fresh_broker.command() else DEFAULT_CONFIG
        assert storage_mode_config(c, default_topic) == (storage_mode, broker_source)
        assert storage_mode_config(c, other_topic) == (other, DYNAMIC_TOPIC_CONFIG)

    # Each topic's data is in its own engine's layout, and only there.
    data = Path(fresh_broker.data_dir)
    assert files_of(data, default_topic) == {storage_mode: True, other: False}
    assert files_of(data, other_topic) == {other: True, storage_mode: False}

    fresh_broker.kill()  # recovery of both engines at the next start
    fresh_broker.start()
    with Client.to(fresh_broker) as c:
        assert values(c, default_topic) == [b"d0", b"d1", b"d2"]
        assert values(c, other_topic) == [b"o0", b"o0+", b"o1", b"o1+", b"o2", b"o2+"]
        assert storage_mode_config(c, other_topic) == (other, DYNAMIC_TOPIC_CONFIG)
        assert c.produce(other_topic, 0, make_batch([b"after"])).base_offset == 6


def test_unknown_storage_mode_is_invalid_config(broker):
    name = unique_topic("bad-mode")
    with Client.to(broker) as c:
        r = c.request(19, 7, validate_only=False, timeout=10_000, topics=[{
            "name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [],
            "configs": [{"name": "storage.mode", "value": "tiered"}]}])
        (t,) = r.topics
        assert t.error_code == INVALID_CONFIG, t
        (md,) = c.metadata([name]).topics
        assert md.error_code != NONE  # nothing was created
