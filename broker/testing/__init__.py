"""A real broker for tests: TwinlogBroker (twinlog_broker.py) and the `twinlog_broker` pytest
fixture (pytest_plugin.py). Users import `from broker.testing import TwinlogBroker`."""

from broker.testing.twinlog_broker import BrokerStartError, TwinlogBroker

__all__ = ["BrokerStartError", "TwinlogBroker"]
