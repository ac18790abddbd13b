"""The kinds of value a setting holds: how each is read from text, checked, shown, and which
Kafka type DescribeConfigs names for it.

A kind is the setting's validator too: `parse` raises ValueError with the reason, the same
for a flag, a TWINLOG_* variable, a `--config` file and a topic config. Two readings differ,
on purpose: serve's options are forgiving about case (`--storage-mode COMMITLOG`), while a
topic config's value is checked as Kafka checks it, exactly (`parse_topic`: ConfigDef's
ValidString is case-sensitive), because the broker keeps the text it was given.
"""

from __future__ import annotations

import re
from pathlib import Path

from wire.config_codes import ConfigType

LONG_MAX = 2**63 - 1


class Kind:
    """Free text; the base of the others."""

    metavar = "TEXT"
    config_type = ConfigType.STRING
    valid = ""  # the accepted values in words, for docs/configuration.md ("" when any text is)

    def parse(self, text):
        return text

    def parse_topic(self, text: str):
        return self.parse(text)

    def show(self, value) -> str:
        """For people: serve's help, `twinlog config show`, docs/configuration.md."""
        return "" if value is None else str(value)

    def described(self, value) -> str | None:
        """As DescribeConfigs reports it, in Kafka's terms."""
        return None if value is None else self.show(value)


class Int(Kind):
    """An integer in [lo, hi]; `long`: Kafka's LONG rather than INT. `never`: the value that
    means "never" here (0 for flush.messages), which Kafka spells Long.MAX_VALUE."""

    def __init__(self, lo: int | None = None, hi: int | None = None, long: bool = False, never: int | None = None):
        self.lo, self.hi, self.never = lo, hi, never
        self.metavar = "INTEGER"
        self.config_type = ConfigType.LONG if long else ConfigType.INT
        self.valid = "" if lo is None else f"at least {lo}" if hi is None else f"{lo} to {hi}"

    def parse(self, text) -> int:
        try:
            value = int(str(text).strip())
        except ValueError:
            raise ValueError(f"{text!r} is not an integer") from None
        if (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
            bounds = f"at least {self.lo}" if self.hi is None else f"in [{self.lo}, {self.hi}]"
            raise ValueError(f"{value} is not {bounds}")
        return value

    def described(self, value) -> str | None:
        return str(LONG_MAX) if value is not None and value == self.never else super().described(value)


class Double(Kind):
    def __init__(self, lo: float, hi: float):
        self.lo, self.hi = lo, hi
        self.metavar, self.config_type = "NUMBER", ConfigType.DOUBLE
        self.valid = f"{lo} to {hi}"

    def parse(self, text) -> float:
        try:
            value = float(str(text).strip())
        except ValueError:
            raise ValueError(f"{text!r} is not a number") from None
        if not self.lo <= value <= self.hi:  # NaN fails too
            raise ValueError(f"{value} is not in [{self.lo}, {self.hi}]")
        return value


class Bool(Kind):
    """`refuse_true`: true is refused with this reason (a feature the broker does not have)."""

    metavar, config_type, valid = "true|false", ConfigType.BOOLEAN, "true, false"

    def __init__(self, refuse_true: str | None = None):
        self.refuse_true = refuse_true
        if refuse_true:
            self.valid = "false"

    def parse(self, text) -> bool:
        if isinstance(text, bool):  # a click flag
            return text
        word = str(text).strip().lower()
        if word not in ("true", "false"):
            raise ValueError(f"{text!r} is not true or false")
        if word == "true" and self.refuse_true:
            raise ValueError(self.refuse_true)
        return word == "true"

    def show(self, value) -> str:
        return str(value).lower()


class Choice(Kind):
    def __init__(self, options, fold=str.lower):
        self.options, self.fold = tuple(options), fold
        self.metavar = "|".join(self.options)
        self.valid = ", ".join(self.options)

    def parse(self, text) -> str:
        value = self.fold(str(text).strip())
        if value not in self.options:
            raise ValueError(f"{text!r} is not one of {', '.join(self.options)}")
        return value

    def parse_topic(self, text: str) -> str:
        if text not in self.options:
            raise ValueError(f"{text!r} is not one of {', '.join(self.options)}")
        return text


class ChoiceList(Kind):
    """A comma-separated list of some of `options`, at least one (cleanup.policy)."""

    def __init__(self, options):
        self.options = tuple(options)
        self.metavar, self.config_type = ",".join(self.options), ConfigType.LIST
        self.valid = "a comma-separated list of " + ", ".join(self.options)

    def parse(self, text) -> str:
        items = str(text).split(",")
        if not text or any(item not in self.options for item in items):
            raise ValueError(f"{text!r} is not a comma-separated list of {', '.join(self.options)}")
        return str(text)


class ThrottledReplicas(Kind):
    """Kafka's ThrottledReplicaListValidator: "*" (every replica), or partition:broker pairs."""

    metavar, config_type = "PARTITION:BROKER,...", ConfigType.LIST
    valid = "*, or a comma-separated list of partitionId:brokerId"

    def parse(self, text) -> str:
        items = [item.strip() for item in str(text).split(",")]
        if items != ["*"] and any(item and not re.fullmatch(r"[0-9]+:[0-9]+", item) for item in items):
            raise ValueError("must be the literal '*' or a list of replicas in the following format: "
                             "[partitionId]:[brokerId],[partitionId]:[brokerId],...")
        return str(text)


class Text(Kind):
    def __init__(self, metavar: str = "TEXT", config_type: ConfigType = ConfigType.STRING):
        self.metavar, self.config_type = metavar, config_type


class FilePath(Kind):
    """A path; `must_exist`: an existing file (keys, certificates, user lists)."""

    def __init__(self, must_exist: bool):
        self.must_exist = must_exist
        self.metavar = "FILE" if must_exist else "PATH"

    def parse(self, text) -> Path:
        path = Path(text)
        if self.must_exist and not path.is_file():
            raise ValueError(f"{str(text)!r} is not a readable file")
        return path


class Items(Kind):
    """A repeatable option; in a file or the environment the items are separated by ';'."""

    def __init__(self, metavar: str):
        self.metavar, self.config_type = metavar, ConfigType.LIST

    def parse(self, text) -> tuple[str, ...]:
        items = text if isinstance(text, tuple) else str(text).split(";")
        return tuple(i.strip() for i in items if i.strip())

    def show(self, value) -> str:
        return ";".join(value)
