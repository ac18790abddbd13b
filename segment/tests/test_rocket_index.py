"""The key index: slot chains against a dict of lists, file rollover, recovery cut, lookups via the store."""

from __future__ import annotations

import random
import shutil
from collections import defaultdict

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from segment.rocket import index_file
from segment.rocket.index_file import IndexFile, IndexService
from segment.rocket.store import RocketLogStore
from segment.rocket.key_lookup import lookup_key
from segment.tests.log_configs import log_config


def test_slot_chains_match_dict_of_lists(tmp_path):
    rng = random.Random(7)
    f = IndexFile(tmp_path / "i", slots=3, max_entries=500)  # 3 slots: every chain mixes many hashes
    oracle = defaultdict(list)
    for n in range(500):
        h = rng.choice([5, 8, 11, 14, 2**31 - 1, 0, 17])
        assert f.put(h, 1000 + n, 60_000 + n * 1000)
        oracle[h].append((1000 + n, 60_000 + n * 1000))
    assert f.full and not f.put(5, 1, 1)
    for h in list(oracle) + [3, 6]:
        assert f.lookup(h) == list(reversed(oracle[h]))
    f.close()
    f = IndexFile(tmp_path / "i")
    assert (f.slots, f.count, f.begin_phys, f.end_phys) == (3, 500, 1000, 1499)
    assert f.lookup(8) == list(reversed(oracle[8]))
    f.truncate(123)  # recovery: keep the first entries, rebuild the slots from them
    assert f.count == 123 and len(f.entries()) == 123
    for h in oracle:
        assert [p for p, _ in f.lookup(h)] == [p for p, _ in reversed(oracle[h]) if p < 1123]
    assert f.put(5, 7777, 0) and f.lookup(5)[0][0] == 7777
    f.close()


def test_service_rolls_files_and_recovers_to_checkpoint(tmp_path):
    svc = IndexService(tmp_path, slots=4, max_entries=10)
    oracle = defaultdict(list)
    for n in range(35):
        key = b"k%d" % (n % 6)
        svc.put("t", key, n * 100, 1_000)
        oracle[key].append(n * 100)
    assert len(svc.files) == 4
    assert [f.path.name for f in svc.files] == ["%020d" % p for p in (0, 1000, 2000, 3000)]
    for key, phys in oracle.items():
        assert [p for p, _ in svc.lookup("t", key)] == list(reversed(phys))
        assert svc.lookup("other-topic", key) == []
    name, count = svc.files[1].path.name, 4
    svc.close()
    svc = IndexService(tmp_path, slots=4, max_entries=10)
    svc.recover_to(name, count)
    assert len(svc.files) == 2 and svc.position() == (name, 4)
    for key, phys in oracle.items():
        assert [p for p, _ in svc.lookup("t", key)] == [p for p in reversed(phys) if p < 1400]
    svc.delete_files_before(1000)
    assert len(svc.files) == 1
    svc.close()


def keyed_batch(keys, ts=1_000, compression=0) -> bytearray:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=compression, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )
    for i, key in enumerate(keys):
        builder.append(i, timestamp=ts + i, key=key, value=b"value-of-%s" % (key or b"none"), headers=[])
    return builder.build()


def open_store(path):
    return RocketLogStore(path, commitlog_file_size=4096, queue_entries_per_file=4, index_slots=2, index_entries=16)


@pytest.mark.parametrize("collide", [False, True])
def test_lookup_checks_real_keys(tmp_path, monkeypatch, collide):
    if collide:
        monkeypatch.setattr(index_file, "key_hash", lambda topic, key: 42)  # every key shares one chain
    rng = random.Random(11)
    store = open_store(tmp_path)
    logs = {(t, p): store.open_partition(t, p, log_config()) for t in ("a", "b") for p in (0, 1)}
    oracle = defaultdict(list)
    for n in range(60):
        (topic, part), plog = rng.choice(sorted(logs.items()))
        keys = [rng.choice([b"x", b"y", b"z", None]) for _ in range(rng.randint(1, 4))]
        info = plog.append(keyed_batch(keys, compression=rng.choice([0, 1])), 0, 1_000)
        for i, key in enumerate(keys):
            if key is not None:
                oracle[(topic, key)].append((part, info.first_offset + i))
    for (topic, key), expected in oracle.items():
        hits = lookup_key(store, topic, key)
        assert [(h.partition, h.offset) for h in hits] == sorted(expected)
        assert all(h.value == b"value-of-" + key and h.topic == topic for h in hits)
        assert [h.offset for h in lookup_key(store, topic, key, partition=1)] == sorted(
            o for p, o in expected if p == 1
        )
    assert lookup_key(store, "a", b"nope") == []
    # truncated and deleted records are not found any more
    a0 = logs[("a", 0)]
    a0.truncate_to(a0.log_end_offset // 2)
    a0.delete_records_before(min(3, a0.log_end_offset))
    low, high = a0.log_start_offset, a0.log_end_offset
    for key in (b"x", b"y", b"z"):
        got = [h.offset for h in lookup_key(store, "a", key, partition=0)]
        assert got == sorted(o for p, o in oracle[("a", key)] if p == 0 and low <= o < high)
    store.close()


def test_index_rebuilt_after_crash(tmp_path):
    store = open_store(tmp_path)
    plog = store.open_partition("t", 0, log_config())
    for n in range(10):
        plog.append(keyed_batch([b"k%d" % (n % 3)]), 0, 1_000)
    store.checkpoint()
    for n in range(10, 20):
        plog.append(keyed_batch([b"k%d" % (n % 3)]), 0, 1_000)
    store.commit_writes()  # as after a request
    crashed = tmp_path / "crashed"
    shutil.copytree(tmp_path / "commitlog-store", crashed / "commitlog-store")
    store.close()
    again = open_store(crashed)
    assert again.abnormal
    for k in range(3):
        assert [h.offset for h in lookup_key(again, "t", b"k%d" % k)] == [n for n in range(20) if n % 3 == k]
    again.close()


def _filled(path, entries: int = 300) -> tuple[IndexFile, dict]:
    rng = random.Random(11)
    f = IndexFile(path, slots=7, max_entries=entries)
    oracle = defaultdict(list)
    for n in range(entries):
        h = rng.randrange(40)
        assert f.put(h, 1000 + n, 60_000 + n * 1000)
        oracle[h].append(1000 + n)
    return f, oracle


def test_recovery_undoes_only_the_entries_past_the_checkpoint(tmp_path):
    """The slots come back as they were at the kept count, from the entries past it alone: an
    entry below it is not read again (damage there, which a rebuild of every slot would index
    under its damaged hash, stays unseen)."""
    f, oracle = _filled(tmp_path / "i")
    h, phys, diff, prev = index_file.ENTRY.unpack_from(f._map, f._entry_pos(123))
    bad = next(x for x in range(1000, 1100) if x % f.slots != h % f.slots)  # another slot than its own
    index_file.ENTRY.pack_into(f._map, f._entry_pos(123), bad, phys, diff, prev)
    f.truncate(123)
    assert f.lookup(bad) == []  # a rebuild would have made entry 123 its slot's head
    for key in oracle:
        assert [p for p, _ in f.lookup(key)] == [p for p in reversed(oracle[key]) if p < 1123 and p != phys]
    f.close()


def test_a_slot_naming_an_entry_that_never_reached_disk_has_every_slot_rebuilt(tmp_path):
    f, oracle = _filled(tmp_path / "i")
    lost = f.count  # the newest entry: its slot names it; the slot was written back, the entry not
    f._map[f._entry_pos(lost):f._entry_pos(lost + 1)] = bytes(index_file.ENTRY_SIZE)
    f.truncate(123)
    for key in oracle:
        assert [p for p, _ in f.lookup(key)] == [p for p in reversed(oracle[key]) if p < 1123]
    f.close()
