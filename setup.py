"""Builds kafkalog's compiled core: every ``codec/kafkalog/fast/*.pyx`` becomes an extension module
beside the Python module it accelerates (a new ``.pyx`` builds with no edit here, but on Windows
one in :data:`_POSIX_ONLY`).

The project's metadata is in ``pyproject.toml``; this file only declares the extensions. Without a
working C compiler the build does not fail: it prints one line saying so and installs the
pure-Python path, which gives the same results, only slower (``kafkalog.fast.EXTENSIONS`` is then
False). ``KAFKALOG_NO_EXTENSIONS=1`` at build time skips the compiled core on purpose.
"""

from __future__ import annotations

import os
import sys
from glob import glob

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

try:  # setuptools >= 73 carries its own distutils; its errors are what a failed compile raises
    from setuptools.errors import CCompilerError, CompileError, ExecError, LinkError, PlatformError
except ImportError:  # pragma: no cover - older setuptools (pyproject.toml asks for 77+)
    from distutils.errors import CCompilerError, CompileError, LinkError
    from distutils.errors import DistutilsExecError as ExecError
    from distutils.errors import DistutilsPlatformError as PlatformError

#: What a missing or broken compiler raises while extensions build.
_BUILD_ERRORS = (CCompilerError, CompileError, ExecError, LinkError, PlatformError, OSError)
_NOTICE = (
    "kafkalog: the compiled core was not built ({why}); installing the pure-Python path, "
    "which gives the same results more slowly"
)


class OptionalBuildExt(build_ext):
    """``build_ext`` with optimising flags, that falls back to pure Python when compiling fails."""

    def run(self) -> None:
        try:
            super().run()
        except _BUILD_ERRORS as e:
            self._skip(e)

    def build_extensions(self) -> None:
        if self.compiler.compiler_type == "msvc":
            flags = ["/O2"]
        else:
            flags = ["-O3", "-fno-strict-aliasing"]  # as CPython's own extensions: we cast pointers over buffers
        for ext in self.extensions:
            ext.extra_compile_args = flags + list(ext.extra_compile_args or [])
        try:
            super().build_extensions()
        except _BUILD_ERRORS as e:
            self._skip(e)

    def _skip(self, error: BaseException) -> None:
        """Build no extension: the package imports its pure-Python path instead."""
        why = str(error).strip().splitlines()[-1] if str(error).strip() else type(error).__name__
        print(_NOTICE.format(why=why), file=sys.stderr)
        self.extensions = []


#: the kernels built on POSIX systems only (their plain twins run elsewhere)
_POSIX_ONLY = {"_dirs.pyx"}


def _extensions() -> list[Extension]:
    if os.environ.get("KAFKALOG_NO_EXTENSIONS"):
        print(_NOTICE.format(why="KAFKALOG_NO_EXTENSIONS is set"), file=sys.stderr)
        return []
    sources = sorted(glob(os.path.join("codec", "kafkalog", "fast", "*.pyx")))
    if os.name == "nt":  # the listing of directories calls POSIX's dirent.h: Windows lists with the plain twin
        sources = [s for s in sources if os.path.basename(s) not in _POSIX_ONLY]
    modules = [Extension("kafkalog.fast." + os.path.splitext(os.path.basename(s))[0], [s]) for s in sources]
    return cythonize(
        modules,
        language_level=3,
        compiler_directives={
            "boundscheck": False,  # the kernels check every byte against the buffer's length themselves
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
            "embedsignature": True,
        },
    )


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
