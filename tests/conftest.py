"""Session-wide test configuration: ../shared detection and one SparkSession for the whole run."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

from helpers import SHARED


def pytest_configure(config):  # noqa: ANN001, ANN201 - pytest hook
    """``@pytest.mark.rule("R-XXX-NN", ...)``: the SPEC.md rules a test exercises (tests/test_spec_rules.py)."""
    config.addinivalue_line("markers", "rule(*ids): SPEC.md rule ids this test exercises")


def pytest_report_header(config):  # noqa: ANN001, ANN201 - pytest hook
    state = "present" if SHARED.exists() else "ABSENT: tests over it are skipped"
    return f"kafkalog shared data: {SHARED} ({state})"


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local[2] SparkSession for the whole test session, with kafkalog's source registered.

    Workers run this interpreter (PYSPARK_PYTHON), so they import the same kafkalog.
    """
    pyspark_sql = pytest.importorskip("pyspark.sql", reason="pyspark is not installed (extra [spark])")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        pyspark_sql.SparkSession.builder.master("local[2]")
        .appName("kafkalog-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    import kafkalog_spark

    kafkalog_spark.register(session)
    yield session
    session.stop()


def pytest_collection_modifyitems(config, items):  # noqa: ANN001, ANN201 - pytest hook
    """Run every test that uses the Spark session on one xdist worker, so only one session starts."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("spark"))
            item.add_marker(pytest.mark.spark)
