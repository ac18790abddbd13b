"""Building kio responses whose fields differ between versions.

Handlers describe a response once with every field any version has; `make`
keeps the fields the requested version's class declares, so one handler
serves all versions without per-version branches.
"""

from __future__ import annotations

import dataclasses
import datetime
import sys
from functools import cache
from typing import Any


NO_THROTTLE = datetime.timedelta(0)


@cache
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def make(cls: type, **values: Any) -> Any:
    names = _field_names(cls)
    return cls(**{k: v for k, v in values.items() if k in names})


@cache
def nested(cls: type, name: str) -> Any:
    """The nested entity class `name` from the module of `cls`'s version; None if that version lacks it."""
    return getattr(sys.modules[cls.__module__], name, None)

