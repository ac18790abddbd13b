"""Crash recovery: cut the commitlog of a crashed store at any byte, reopen, compare with what was written.

A crash is a copy of the store directory taken while it is open (abort file
present, queues and index holding entries for everything appended, the
checkpoint wherever the last flush left it). Writes are sequential, so a torn
write leaves the commitlog valid up to some byte C past the last checkpoint:
the model keeps every unit that ends at or before C and nothing else.
"""

from __future__ import annotations

import os
import shutil

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from segment.tests.segment_batches import make_batch, read_offsets

from segment.rocket.store import RocketLogStore
from segment.rocket.key_lookup import lookup_key
from segment.tests.log_configs import log_config

FILE = 1024
PARTS = (("t", 0), ("t", 1), ("other", 0))


def open_store(path):
    return RocketLogStore(path, commitlog_file_size=FILE, queue_entries_per_file=3, index_slots=4, index_entries=8)


def write_crashed(path, plan, flush_after):
    """Append plan[i] = (partition no, record count); returns (units, checkpointed offset, write end)."""
    store = open_store(path)
    logs = [store.open_partition(t, p, log_config()) for t, p in PARTS]
    units, flushed = [], 0
    for i, (which, n) in enumerate(plan):
        plog = logs[which]
        info = plog.append(make_batch(n, value_size=3), 0, 1_000)
        store.commit_writes()  # one request each: the broker writes its appends before answering
        last = plog.queue.last
        units.append((last.phys, last.size, which, info.first_offset, n))
        if i + 1 == flush_after:
            store.checkpoint()
            flushed = store.commitlog.write_pos
    crashed = path.parent / (path.name + "-crashed")
    shutil.copytree(path / "commitlog-store", crashed / "commitlog-store")
    end = store.commitlog.write_pos
    store.close()
    return crashed, units, flushed, end


def cut_commitlog(root, cut):
    """Cut at commitlog offset `cut`; returns the offset up to which the bytes are still as written.

    Files are sparse and read as zeros past a cut, so zero bytes written just after
    the cut (a batch often ends in one) are not lost by it.
    """
    cl = root / "commitlog-store" / "commitlog"
    intact = cut
    for f in sorted(cl.iterdir()):
        base = int(f.name)
        if base >= cut and base > 0:
            f.unlink()
        elif base <= cut < base + os.path.getsize(f):
            rest = f.read_bytes()[cut - base :]
            intact = cut + len(rest) - len(rest.lstrip(b"\0"))
            os.truncate(f, cut - base)
    return intact


def check_recovered(root, units, cut):
    store = open_store(root)
    assert store.abnormal
    survivors = [u for u in units if u[0] + u[1] <= cut]
    for which, (t, p) in enumerate(PARTS):
        mine = [u for u in survivors if u[2] == which]
        end = mine[-1][3] + mine[-1][4] if mine else 0
        plog = store.open_partition(t, p, log_config())
        assert plog.log_end_offset == end, (cut, t, p)
        assert len(plog.queue) == len(mine)
        assert [(e.phys, e.base_offset) for e in plog.queue.entries_from(0)] == [(u[0], u[3]) for u in mine]
        assert read_offsets(plog, plog.read(0, 1 << 20, end)) == list(range(end))
        assert [h.offset for h in lookup_key(store, t, b"k0", partition=p)] == [u[3] for u in mine]
        plog.append(make_batch(2), 0, 2_000)  # the store takes writes again after the cut
        assert read_offsets(plog, plog.read(end, 1 << 20, end + 2)) == [end, end + 1]
    store.close()
    store = open_store(root)  # and a clean reopen agrees
    assert not store.abnormal
    assert store.open_partition(*PARTS[0], log_config()).log_end_offset >= 2
    store.close()


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(1, 6)), min_size=1, max_size=25),
    st.integers(0, 25),
    st.data(),
)
def test_recovery_from_any_cut(tmp_path_factory, plan, flush_after, data):
    path = tmp_path_factory.mktemp("s")
    crashed, units, flushed, end = write_crashed(path, plan, flush_after)
    cut = data.draw(st.integers(flushed, end + 8), label="cut")
    check_recovered(crashed, units, cut_commitlog(crashed, cut))


def test_recovery_from_every_cut_of_a_small_store(tmp_path):
    plan = [(0, 1), (1, 2), (2, 1), (0, 3), (1, 1), (0, 1)] * 2
    crashed, units, _flushed, end = write_crashed(tmp_path / "s", plan, 0)
    assert units[-1][0] >= FILE  # the store spans two commitlog files
    boundaries = {0, end} | {u[0] for u in units} | {u[0] + u[1] for u in units}
    points = sorted({c for b in boundaries for c in (b - 1, b, b + 1) if 0 <= c <= end} | set(range(0, end, 13)))
    for cut in points:
        work = tmp_path / f"cut-{cut}"
        shutil.copytree(crashed, work)
        check_recovered(work, units, cut_commitlog(work, cut))
        shutil.rmtree(work)


def test_checkpoint_alone_survives_lost_queue_files(tmp_path):
    plan = [(i % 3, 2) for i in range(12)]
    crashed, units, _flushed, end = write_crashed(tmp_path / "s", plan, 6)
    shutil.rmtree(crashed / "commitlog-store" / "consumequeue" / "other")  # queue files lost entirely
    store = open_store(crashed)
    plog = store.open_partition("other", 0, log_config())
    # batches before the checkpoint were only in the lost files; those after it come back
    assert plog.log_start_offset == 4 and plog.log_end_offset == 8
    assert read_offsets(plog, plog.read(plog.log_start_offset, 1 << 20, 8))[-1] == 7
    store.close()


def test_periodic_flush_makes_the_commitlog_durable_without_a_checkpoint(tmp_path):
    """store.flush() (log.flush.interval.ms) fsyncs only the commitlog and records how far; the
    queues stay behind the last full checkpoint and a crash re-dispatches them from it."""
    from segment.rocket.checkpoint import read_checkpoint

    path = tmp_path / "s"
    store = open_store(path)
    plog = store.open_partition("other", 0, log_config())
    for _ in range(3):
        plog.append(make_batch(2, value_size=3), 0, 1_000)
    store.commit_writes()  # what the broker's flush loop does before each flush
    store.flush()
    ckpt = read_checkpoint(path / "commitlog-store")
    assert ckpt.flushed == store.commitlog.write_pos > 0
    assert ckpt.commitlog == 0  # no full checkpoint yet: queues and index not claimed durable
    crashed = path.parent / "crashed"
    shutil.copytree(path / "commitlog-store", crashed / "commitlog-store")
    store.close()
    reopened = open_store(crashed)
    again = reopened.open_partition("other", 0, log_config())
    assert (again.log_start_offset, again.log_end_offset) == (0, 6)
    assert read_offsets(again, again.read(0, 1 << 20, 6)) == list(range(6))
    reopened.close()


def test_a_crash_rescans_the_commitlog_from_its_checkpoint_only(tmp_path):
    """The units before the checkpoint were fsynced: recovery does not read them again. Shown by a
    damaged unit there, which is not found, while one past the checkpoint is cut."""
    store = RocketLogStore(tmp_path / "data", commitlog_file_size=1 << 20, queue_entries_per_file=8,
                           index_slots=16, index_entries=64)
    plog = store.open_partition("t", 0, log_config())
    for _ in range(20):
        plog.append(make_batch(1, value_size=3), 0, 1_000)
    store.commit_writes()  # what the broker does after each request: only then may a checkpoint count it
    store.checkpoint()
    for _ in range(5):
        plog.append(make_batch(1, value_size=3), 0, 1_000)
    store.commit_writes()
    below, past = plog.queue.entry(2), plog.queue.entry(22)
    shutil.copytree(tmp_path / "data", tmp_path / "crash")
    store.close()
    (commitlog_file,) = (tmp_path / "crash" / "commitlog-store" / "commitlog").iterdir()
    with open(commitlog_file, "r+b") as f:
        for entry in (below, past):
            f.seek(entry.phys + entry.size - 1)  # the unit's last byte, inside the batch's CRC
            byte = f.read(1)[0]
            f.seek(entry.phys + entry.size - 1)
            f.write(bytes([byte ^ 0xFF]))
    store = RocketLogStore(tmp_path / "crash", commitlog_file_size=1 << 20, queue_entries_per_file=8,
                           index_slots=16, index_entries=64)
    assert store.open_partition("t", 0, log_config()).log_end_offset == 22
    store.close()
