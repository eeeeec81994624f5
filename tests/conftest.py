"""Session-wide test configuration: report whether ../shared was found."""

from __future__ import annotations

from helpers import SHARED


def pytest_report_header(config):  # noqa: ANN001, ANN201 - pytest hook
    state = "present" if SHARED.exists() else "ABSENT: tests over it are skipped"
    return f"kafkalog shared data: {SHARED} ({state})"
