"""Both metadata sources answer the whole ClusterView protocol, with the same parameters, so a
handler never needs to ask which one it has."""

from __future__ import annotations

import inspect

import pytest

from broker.cluster.single_broker_view import SingleBrokerView
from broker.cluster.image_view import ClusterImageView
from broker.cluster.view import ClusterView


def _members(cls) -> dict[str, object]:
    return {name: value for name, value in vars(cls).items() if not name.startswith("_")}


PROTOCOL = _members(ClusterView)


@pytest.mark.parametrize("view", [SingleBrokerView, ClusterImageView])
@pytest.mark.parametrize("name", sorted(PROTOCOL))
def test_each_view_answers_each_call_of_the_protocol_alike(view, name):
    wanted = PROTOCOL[name]
    got = _members(view).get(name)
    assert got is not None, f"{view.__name__} lacks {name}"
    if isinstance(wanted, property):
        assert isinstance(got, property), f"{view.__name__}.{name} is not a property"
        return
    assert inspect.iscoroutinefunction(got) == inspect.iscoroutinefunction(wanted), f"{view.__name__}.{name}"
    assert list(inspect.signature(got).parameters) == list(inspect.signature(wanted).parameters)
