"""The fast path: columnar decoding of record batches, records made in C, the codecs' C
decompressors, the JVM's lz4 and snappy compressors (``_compress``), Arrow output, the producer's
partitioner hash, Avro values decoded straight into Arrow columns (``avro``), and the listing
of local partition dirs that planning makes (``_dirs``, which the package plugs into
:mod:`kafkalog.log.source` through :func:`kafkalog.format.files.set_dir_lister`).

Its kernels are Cython extension modules (``fast/_*.pyx``) compiled when the package is installed;
nothing is compiled at run time. Each has a pure-Python twin beside it, which gives the same
results and the same errors: it is used where the extensions were not built (no compiler at
install) or when ``KAFKALOG_NO_EXTENSIONS`` is set to a non-empty value (as aiokafka's
``AIOKAFKA_NO_EXTENSIONS``). :data:`EXTENSIONS` says which path is in use. The Avro kernel's plain
path is fastavro's, in :mod:`kafkalog.dataset.values`, which the kernel hands a column back to. The
listing's twin is ``_scandir_entries`` in :mod:`kafkalog.log.source`, over ``os.scandir``.

Importing this package is cheap: it imports nothing until asked (no numpy). Each piece has a plain
path in :mod:`kafkalog.format` it is tested against; this layer imports only from there.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any

__all__ = ["DISABLED", "EXTENSIONS", "compiled"]

#: ``KAFKALOG_NO_EXTENSIONS`` is set: every kernel runs its pure-Python twin.
DISABLED = bool(os.environ.get("KAFKALOG_NO_EXTENSIONS"))


def compiled(name: str) -> ModuleType | None:
    """The compiled module ``kafkalog.fast.<name>``, or None when extensions are disabled or it was
    not built (the caller then uses its pure-Python twin)."""
    if DISABLED:
        return None
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ImportError:
        return None


def __getattr__(name: str) -> Any:
    """:data:`EXTENSIONS`: whether the compiled kernels are in use (computed on first use, so that
    ``import kafkalog.fast`` loads nothing)."""
    if name == "EXTENSIONS":
        value = compiled("_columnar") is not None
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
