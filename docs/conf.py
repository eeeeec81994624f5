"""Sphinx configuration for kafkalog's documentation (built with -W in the test suite)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "codec"), str(ROOT / "spark_ext")]

project = "kafkalog"
author = "the kafkalog developers"
copyright = "2026, the kafkalog developers"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]
# The test suite's build (tests/test_docs.py) leaves out the highlighted source pages (viewcode): a
# fifth of the build's CPU, pages that hold no prose to check; the published build keeps them.
if os.environ.get("KAFKALOG_DOCS_NO_VIEWCODE") == "1":
    extensions.remove("sphinx.ext.viewcode")
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 4
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build"]
autodoc_typehints = "description"
autodoc_member_order = "bysource"
html_theme = "alabaster"
suppress_warnings = ["myst.xref_missing"]
