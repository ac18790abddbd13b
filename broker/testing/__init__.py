"""A real broker for tests: TwinlogBroker (twinlog_broker.py) and the `twinlog_broker` pytest
fixture (pytest_plugin.py). Users import `from broker.testing import TwinlogBroker`.

In a container: `from broker.testing.container import TwinlogContainer` (container.py; it needs
the testcontainers package, so it is not imported here), the image from image.py (`make image`)."""

from broker.testing.twinlog_broker import BrokerStartError, TwinlogBroker

__all__ = ["BrokerStartError", "TwinlogBroker"]
