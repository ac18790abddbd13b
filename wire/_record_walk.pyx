# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The record framing walk of wire/record_walk.py, compiled: same checks, same verdicts, the
same RecordSummary.

record_walk.py documents the checks and is the oracle (wire/tests/test_record_validation.py runs
both over Hypothesis-made batches and damage). The walk itself runs without the GIL, so a
worker thread checking a large inflated batch leaves the event loop free; keys are noted as
(position, length) and turned into bytes afterwards. Built by `pip install` (setup.py);
without it record_validation.py falls back to the Python walk.
"""

from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc

from .record_batch import InvalidRecord
from .record_walk import RecordSummary

cdef enum Fault:
    OK = 0
    SHORT_COUNT        # fewer records than declared
    BAD_LENGTH         # record length < 6 or past the end
    LONG_VARINT        # a varint longer than 5 (10) bytes
    PAST_END           # a field runs past the data
    BAD_OFFSET_DELTA
    BAD_KEY
    BAD_VALUE
    BAD_HEADER_COUNT
    BAD_HEADER_KEY
    BAD_HEADER_VALUE
    FIELDS_MISMATCH    # the fields do not end where the length says
    TRAILING           # bytes after the last declared record

cdef struct Walk:
    Py_ssize_t pos
    Py_ssize_t end
    int64_t index
    int64_t value      # the offending value, for the message
    Py_ssize_t* key_pos
    Py_ssize_t* key_len
    Py_ssize_t keys
    int64_t low        # the smallest timestampDelta
    int64_t high       # the largest
    int64_t keyless    # records without a key


cdef inline Fault _zigzag(const unsigned char* d, Walk* w, int max_bytes, uint64_t mask,
                          int64_t* out) noexcept nogil:
    cdef uint64_t raw = 0
    cdef int shift = 0
    cdef int i
    cdef unsigned char b
    for i in range(max_bytes):
        if w.pos >= w.end:
            return PAST_END
        b = d[w.pos]
        w.pos += 1
        raw |= (<uint64_t>(b & 0x7F)) << shift
        if b < 0x80:
            raw &= mask
            if mask == 0xFFFFFFFFu:  # an int32: zigzag within 32 bits
                out[0] = <int64_t>(<int>((<unsigned int>(raw >> 1)) ^ -(<unsigned int>(raw & 1))))
            else:
                out[0] = <int64_t>((raw >> 1) ^ -(raw & 1))
            return OK
        shift += 7
    return LONG_VARINT


cdef Fault _walk(const unsigned char* d, Walk* w, int64_t count, bint want_keys) noexcept nogil:
    cdef int64_t length, timestamp_delta, offset_delta, key_length, value_length, header_count, h
    cdef Py_ssize_t record_end
    cdef Fault f
    w.index = 0
    while w.index < count:
        if w.pos >= w.end:
            return SHORT_COUNT
        f = _zigzag(d, w, 5, 0xFFFFFFFFu, &length)
        if f != OK:
            return f
        if length < 6 or length > w.end - w.pos:
            w.value = length
            return BAD_LENGTH
        record_end = w.pos + length
        w.pos += 1  # attributes
        f = _zigzag(d, w, 10, 0xFFFFFFFFFFFFFFFFu, &timestamp_delta)
        if f != OK:
            return f
        if w.index == 0 or timestamp_delta < w.low:
            w.low = timestamp_delta
        if w.index == 0 or timestamp_delta > w.high:
            w.high = timestamp_delta
        f = _zigzag(d, w, 5, 0xFFFFFFFFu, &offset_delta)
        if f != OK:
            return f
        if offset_delta != w.index:
            w.value = offset_delta
            return BAD_OFFSET_DELTA
        f = _zigzag(d, w, 5, 0xFFFFFFFFu, &key_length)
        if f != OK:
            return f
        if key_length >= 0:
            if key_length > record_end - w.pos:
                w.value = key_length
                return BAD_KEY
            if want_keys:
                w.key_pos[w.keys] = w.pos
                w.key_len[w.keys] = key_length
                w.keys += 1
            w.pos += key_length
        elif key_length == -1:
            w.keyless += 1
        else:
            w.value = key_length
            return BAD_KEY
        f = _zigzag(d, w, 5, 0xFFFFFFFFu, &value_length)
        if f != OK:
            return f
        if value_length >= 0:
            if value_length > record_end - w.pos:
                w.value = value_length
                return BAD_VALUE
            w.pos += value_length
        elif value_length != -1:
            w.value = value_length
            return BAD_VALUE
        f = _zigzag(d, w, 5, 0xFFFFFFFFu, &header_count)
        if f != OK:
            return f
        if header_count != 0:
            if header_count < 0 or header_count > record_end - w.pos:
                w.value = header_count
                return BAD_HEADER_COUNT
            for h in range(header_count):
                f = _zigzag(d, w, 5, 0xFFFFFFFFu, &key_length)
                if f != OK:
                    return f
                if key_length < 0 or key_length > record_end - w.pos:
                    w.value = key_length
                    return BAD_HEADER_KEY
                w.pos += key_length
                f = _zigzag(d, w, 5, 0xFFFFFFFFu, &value_length)
                if f != OK:
                    return f
                if value_length < -1 or value_length > record_end - w.pos:
                    w.value = value_length
                    return BAD_HEADER_VALUE
                if value_length > 0:
                    w.pos += value_length
        if w.pos != record_end:
            w.value = length
            return FIELDS_MISMATCH
        w.index += 1
    if w.pos != w.end:
        w.value = w.end - w.pos
        return TRAILING
    return OK


_MESSAGES = {
    SHORT_COUNT: "batch declares {count} records but holds {index}",
    BAD_LENGTH: "record {index} claims {value} bytes",
    LONG_VARINT: "record {index}: varint too long",
    PAST_END: "a record runs past the end of the batch",
    BAD_OFFSET_DELTA: "record {index} has offset delta {value}",
    BAD_KEY: "record {index} has a key length of {value}",
    BAD_VALUE: "record {index} has a value length of {value}",
    BAD_HEADER_COUNT: "record {index} has an invalid header count {value}",
    BAD_HEADER_KEY: "record {index}: header key of {value} bytes",
    BAD_HEADER_VALUE: "record {index}: header value of {value} bytes",
    FIELDS_MISMATCH: "record {index} claims {value} bytes, its fields take a different number",
    TRAILING: "{value} bytes follow the {count} declared records",
}


def walk_records(data, Py_ssize_t pos, Py_ssize_t end, long long count, bint want_keys):
    """As record_walk.walk_records: a RecordSummary, its keys None unless `want_keys`; raises
    InvalidRecord."""
    cdef const unsigned char[::1] view = data
    cdef const unsigned char* d = &view[0] if view.shape[0] else NULL
    cdef Walk w
    cdef Fault f
    cdef Py_ssize_t most, i
    if pos < 0 or end > view.shape[0] or pos > end:
        raise ValueError("walk bounds outside the data")
    w.pos, w.end, w.value, w.keys = pos, end, 0, 0
    w.low, w.high, w.keyless = 0, 0, 0
    w.key_pos = w.key_len = NULL
    if want_keys:
        most = (end - pos) // 7 + 1  # a record takes at least 7 bytes: no more keys than this
        if count < most:
            most = count if count > 0 else 1
        w.key_pos = <Py_ssize_t*>malloc(most * sizeof(Py_ssize_t))
        w.key_len = <Py_ssize_t*>malloc(most * sizeof(Py_ssize_t))
        if w.key_pos == NULL or w.key_len == NULL:
            free(w.key_pos)
            free(w.key_len)
            raise MemoryError()
    try:
        with nogil:
            f = _walk(d, &w, count, want_keys)
        if f != OK:
            raise InvalidRecord(_MESSAGES[f].format(count=count, index=w.index, value=w.value))
        keys = None
        if want_keys:
            keys = set()
            for i in range(w.keys):
                keys.add(bytes(view[w.key_pos[i] : w.key_pos[i] + w.key_len[i]]))
        return RecordSummary(keys, w.low, w.high, w.keyless)
    finally:
        free(w.key_pos)
        free(w.key_len)
