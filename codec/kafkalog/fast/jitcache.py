"""Where numba caches kafkalog's compiled code: beside the modules when that directory is
writable (numba's own choice), else in a per-user directory, so that a package installed
read-only (a system site-packages, a container image, a read-only mount) compiles once per user
instead of on every run.

The per-user directory is ``$KAFKALOG_CACHE_DIR``, else ``$XDG_CACHE_HOME/kafkalog``, else
``~/.cache/kafkalog`` (then ``<tmp>/kafkalog-<uid>`` when even that cannot be written), with a
``numba`` folder in it. ``NUMBA_CACHE_DIR``, when set, still wins for every function, as numba
documents. Only functions defined in kafkalog's own files are placed here.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

__all__ = ["install", "user_cache_dir"]

#: the ``kafkalog`` package directory (this module is in its ``fast`` folder)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_cache_dir() -> str:
    """The per-user directory kafkalog caches in when its package directory is read-only."""
    explicit = os.environ.get("KAFKALOG_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kafkalog")


def _candidates() -> list[str]:
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return [os.path.join(user_cache_dir(), "numba"), os.path.join(tempfile.gettempdir(), f"kafkalog-{uid}", "numba")]


def install() -> None:
    """Put kafkalog's locator in numba's list, right after the in-tree ``__pycache__`` one
    (idempotent; call before any ``numba.njit(cache=True)`` of kafkalog runs)."""
    from numba.core import caching

    def named(name: str) -> Any:  # numba 0.68 dropped the leading underscore of these names
        return getattr(caching, name, None) or getattr(caching, "_" + name)

    impl, user_provided, in_tree = named("CacheImpl"), named("UserProvidedCacheLocator"), named("InTreeCacheLocator")
    if any(getattr(c, "_kafkalog", False) for c in impl._locator_classes):
        return

    class KafkalogCacheLocator(user_provided):  # type: ignore[misc,valid-type]
        """Caches kafkalog's functions under :func:`user_cache_dir` (never other packages')."""

        _kafkalog = True

        def __init__(self, py_func: Any, py_file: str, root: str = "") -> None:
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = os.path.join(root, self.get_suitable_cache_subpath(py_file))

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> KafkalogCacheLocator | None:
            if not os.path.abspath(py_file).startswith(_PACKAGE_DIR + os.sep):
                return None
            for root in _candidates():
                self = cls(py_func, py_file, root)
                try:
                    self.ensure_cache_path()
                except OSError:
                    continue
                return self
            return None

    classes = list(impl._locator_classes)
    at = classes.index(in_tree) + 1 if in_tree in classes else 0
    classes.insert(at, KafkalogCacheLocator)
    impl._locator_classes = classes
