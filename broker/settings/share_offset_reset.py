"""share.auto.offset.reset's values (KIP-932, and KIP-1106's by_duration, Kafka 4.1+): where a
share-partition with no state starts. `latest` (the high watermark), `earliest` (the log start),
or `by_duration:<ISO-8601 duration>`: the first record whose timestamp is at or after now less
the duration (the high watermark when there is none).

Checked as Kafka's ShareGroupAutoOffsetResetStrategy checks it: the words exactly (`LATEST` and
`none` are refused), `by_duration:` followed by what java.time.Duration.parse reads
(`PnDTnHnMn.nS`, letters in either case, each part signed or not, at least one part, and no bare
`T`), and the whole not negative. A broker flag (serve's forgiving reading) may spell the words
in any case.
"""

from __future__ import annotations

import re

from replica.readable_partition import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP

from broker.settings.kinds import Kind

LATEST, EARLIEST, BY_DURATION = "latest", "earliest", "by_duration"
_DURATION = re.compile(r"([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?"
                       r"(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?", re.IGNORECASE)
_NANOS = {"D": 86_400 * 10**9, "H": 3_600 * 10**9, "M": 60 * 10**9, "S": 10**9}
_FORMAT = "The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'."


def duration_ms(iso: str) -> int:
    """An ISO-8601 duration as java.time.Duration.parse reads it, in milliseconds (rounded
    down); raises ValueError for one it does not read."""
    m = _DURATION.fullmatch(iso)
    if m is None or m.group(3) in ("T", "t") or not any(m.group(i) for i in (2, 4, 5, 6)):
        raise ValueError(f"{iso!r} is not an ISO-8601 duration")
    nanos = sum(int(m.group(i)) * _NANOS[unit] for i, unit in ((2, "D"), (4, "H"), (5, "M"), (6, "S"))
                if m.group(i))
    if m.group(7):  # the fraction takes the seconds' sign
        fraction = int(m.group(7).ljust(9, "0"))
        nanos += -fraction if m.group(6).startswith("-") else fraction
    return (-nanos if m.group(1) == "-" else nanos) // 1_000_000


class ShareOffsetReset(Kind):
    metavar = "latest|earliest|by_duration:PnDTnHnMn.nS"
    valid = "latest, earliest, by_duration:<ISO-8601 duration, not negative>"

    def parse(self, text) -> str:
        word = str(text).strip()
        return self.parse_topic(word.lower() if word.lower() in (LATEST, EARLIEST) else word)

    def parse_topic(self, text: str) -> str:
        if text in (LATEST, EARLIEST):
            return text
        prefix, colon, iso = text.partition(":")
        if prefix != BY_DURATION or not colon:
            raise ValueError(_FORMAT)
        try:
            negative = duration_ms(iso) < 0
        except ValueError:
            raise ValueError(_FORMAT) from None
        if negative:
            raise ValueError(_FORMAT)
        return text


def reset_timestamp(value: str, now_ms: int) -> int:
    """What a share-partition starting under `value` looks for: EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP, or the earliest record timestamp it takes."""
    if value == EARLIEST:
        return EARLIEST_TIMESTAMP
    if value == LATEST:
        return LATEST_TIMESTAMP
    return now_ms - duration_ms(value.partition(":")[2])
