"""What the transaction APIs share: the error a fenced producer gets, per API version.

PRODUCER_FENCED came with KIP-588; a client speaking an older version of an API knows only
INVALID_PRODUCER_EPOCH for it, and Kafka answers that (its KafkaApis converts per version).
"""

from __future__ import annotations

import datetime

from wire.error_codes import ErrorCode
from wire.protocol import RequestHeader

# api key -> the first version answered PRODUCER_FENCED
_FIRST_PRODUCER_FENCED = {
    22: 4,  # InitProducerId
    24: 2,  # AddPartitionsToTxn
    25: 2,  # AddOffsetsToTxn
    26: 2,  # EndTxn
    28: 3,  # TxnOffsetCommit
}


def for_version(code: ErrorCode, header: RequestHeader) -> ErrorCode:
    if code is ErrorCode.producer_fenced and header.api_version < _FIRST_PRODUCER_FENCED.get(header.api_key, 0):
        return ErrorCode.invalid_producer_epoch
    return code


def ms(value: datetime.timedelta | int) -> int:
    """A kio duration field (a timedelta) in milliseconds."""
    return int(value.total_seconds() * 1000) if isinstance(value, datetime.timedelta) else int(value)
