"""``./run test`` runs the suite with ``-n 2 --dist loadgroup``, and every test that uses Spark is marked
``xdist_group("spark")`` (tests/conftest.py) so that one worker runs them all on one Spark session and one
standalone cluster. pytest-xdist groups by renaming each such test ``<id>@spark``; pytest 9.2 keeps a
node's id elsewhere, so the renaming stopped working and both workers started their own session and
cluster (pyproject.toml pins pytest below 9.2). This test fails when the grouping is lost again."""

from __future__ import annotations

import pytest


def test_spark_tests_are_grouped_on_one_worker(request: pytest.FixtureRequest) -> None:
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not a worker of -n N --dist loadgroup")
    # the group a test names (``spark``; ``base-install`` for the tests of ./run wheel that share one built wheel)
    grouped = [(item.nodeid, m.kwargs.get("name", m.args[0] if m.args else "default"))
               for item in request.session.items if (m := item.get_closest_marker("xdist_group"))]
    if not grouped:
        pytest.skip("no test of this run is in a group")
    assert all(nodeid.endswith(f"@{name}") for nodeid, name in grouped), grouped[:3]
