"""What both layouts' log cleaner tests share: random logs to clean (with producers' sequences as
a producer sends them), the log read back as a fetch reads it and as a table, producer state
compared before and after, and a crash at the n-th file operation of a round."""

from __future__ import annotations

import os
import shutil

from hypothesis import strategies as st

from wire.record_batch import iter_batches
from wire.records import iter_records


def read_all(plog):
    """(offset, key, value) of every record, and the headers of every batch, read as a fetch reads."""
    out, headers, offset = [], [], plog.log_start_offset
    while offset < plog.log_end_offset:
        regions = plog.read(offset, 1 << 20, plog.log_end_offset)
        assert regions, f"nothing read at {offset}"
        data = b"".join(plog.read_bytes(r) for r in regions)
        for pos, header in iter_batches(data):
            headers.append(header)
            out += [(r.offset, r.key, r.value) for r in iter_records(data[pos : pos + header.size])]
            offset = header.last_offset + 1
    return out, headers


def table(records):
    """The log read as a table: latest value per key, a tombstone removes its key."""
    view = {}
    for _offset, key, value in records:
        if value is None:
            view.pop(key, None)
        else:
            view[key] = value
    return view


keys = st.sampled_from([b"a", b"b", b"c", b"d", b"e"])
batches = st.lists(st.tuples(st.lists(st.tuples(keys, st.one_of(st.none(), st.binary(min_size=1, max_size=30))),
                                      min_size=1, max_size=6),
                             st.sampled_from([(-1, -1, -1), (5, 0, 0)])),
                   min_size=1, max_size=30)


def fix_sequences(batches):
    """Idempotent batches carry increasing sequences, as a producer sends them."""
    out, seq = [], 0
    for recs, producer in batches:
        if producer[0] >= 0:
            producer = (producer[0], producer[1], seq)
            seq += len(recs)
        out.append((recs, producer))
    return out


def check_producer_state(before_headers, after_headers):
    def last(headers):
        state = {}
        for h in headers:
            if h.has_producer_id:
                state[h.producer_id] = (h.producer_epoch, h.last_sequence, h.last_offset)
        return state
    assert last(after_headers) == last(before_headers)


class Crash(Exception):
    pass


def crash_after(monkeypatch, n):
    """Make the n-th rename/unlink/rmtree from now on raise, as a kill -9 at that point would stop."""
    calls = [0]

    def wrap(real):
        def op(*args, **kwargs):
            if calls[0] == n:
                raise Crash()
            calls[0] += 1
            return real(*args, **kwargs)
        return op

    monkeypatch.setattr(os, "rename", wrap(os.rename))
    monkeypatch.setattr(os, "unlink", wrap(os.unlink))
    monkeypatch.setattr(shutil, "rmtree", wrap(shutil.rmtree))


CRASH_BATCHES = [([(b"a", b"1"), (b"b", b"1")], (-1, -1, -1)), ([(b"a", b"2"), (b"c", b"x" * 200)], (-1, -1, -1)),
                 ([(b"b", None), (b"c", b"3")], (-1, -1, -1)), ([(b"a", b"4")] * 3, (-1, -1, -1))] * 4
