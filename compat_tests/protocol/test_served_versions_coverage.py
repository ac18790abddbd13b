"""Every (api_key, version) ApiVersions advertises has a conformance test."""

from __future__ import annotations

import importlib

from compat_tests.helpers.served_versions import CONFORMANCE_MODULES, EXERCISED, served_pairs


def test_every_served_version_is_exercised():
    for name in CONFORMANCE_MODULES:
        importlib.import_module(name)
    missing = sorted(served_pairs() - EXERCISED)
    assert not missing, f"advertised (api_key, version) pairs without a conformance test: {missing}"
