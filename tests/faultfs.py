"""A fault-injecting file layer for tests: what a power cut, a failing fsync or a full disk leave behind.

:class:`FaultFS` wraps the calls kafkalog writes with (``os.open``, ``os.pwrite``, ``os.write``,
``os.ftruncate``, ``os.fsync``, ``os.replace``, ``os.rename``, ``os.unlink``, ``os.remove`` and
the ``open`` of :mod:`kafkalog.format.files` and :mod:`kafkalog.format.epoch`) for files under one root
directory, and keeps a model of what is durable:

* a file's durable content is its content at its last ``fsync``; writes and truncations since
  then are kept in order as pending operations;
* a directory's durable entries are those at its last ``fsync``; creations, renames and unlinks
  since then are pending directory operations.

The real files are the page cache: the code under test reads them as a running process would.
:meth:`FaultFS.crash` then rewrites the root as the disk would hold it after the cut: each file
reverts to its durable content, optionally plus a prefix of its pending operations with the next
one cut short (a torn write); pending directory operations survive as a prefix (a journal that
keeps their order) or as a random subset (renames reordered). A process crash without a power
cut keeps everything. :meth:`FaultFS.arm` schedules one fault: the power going at the n-th write
operation (:class:`PowerCut` raised inside it), the n-th ``fsync`` failing with EIO (its data
stays undurable), or the n-th write failing with ENOSPC (sometimes after a short write). After an
EIO or ENOSPC the power goes a few operations later, as a broker that ignored the error would
meet its fate; every call after a cut raises :class:`PowerCut` again, as a dead process writes
nothing more.

Every ``fsync`` checks that the model's content equals the real file, so a write through a seam
the layer does not wrap fails loudly instead of going unmodelled.
"""

from __future__ import annotations

import builtins
import errno
import os
import random
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: the kafkalog modules whose ``open`` writes files
OPEN_MODULES = ("kafkalog.format.files", "kafkalog.format.epoch")

_Op = tuple  # ("w", position, bytes) | ("t", size)


class PowerCut(BaseException):
    """Raised inside a wrapped call when the simulated power goes (a BaseException: no ``except Exception`` swallows it)."""


class ModelError(AssertionError):
    """The model and the real file disagree: a write went through a seam the layer does not wrap."""


@dataclass(eq=False)
class FileState:
    """One inode: durable bytes and the operations since its last fsync."""

    durable: bytes = b""
    pending: list[_Op] = field(default_factory=list)


@dataclass(eq=False)
class DirState:
    """One directory: durable entries and the entry operations since its last fsync."""

    durable: dict[str, FileState] = field(default_factory=dict)
    pending: list[tuple[str, str, Any]] = field(default_factory=list)  # (op, name, FileState | new name | None)


def apply(content: bytes, ops: list[_Op], torn_last: int | None = None) -> bytes:
    """``content`` after ``ops``; ``torn_last`` bytes of one more write (given as the last op) when cut short."""
    buf = bytearray(content)
    for i, op in enumerate(ops):
        if op[0] == "t":
            size = op[1]
            del buf[size:]
            buf.extend(bytes(size - len(buf)))
        else:
            pos, data = op[1], op[2]
            if torn_last is not None and i == len(ops) - 1:
                data = data[:torn_last]
            if pos > len(buf):
                buf.extend(bytes(pos - len(buf)))
            buf[pos : pos + len(data)] = data
    return bytes(buf)


@dataclass
class Counts:
    """What the layer saw and did."""

    writes: int = 0
    fsyncs: int = 0
    dir_fsyncs: int = 0
    dir_ops: int = 0
    faults: dict[str, int] = field(default_factory=dict)


class _Writer:
    """A file object from ``open`` in a write mode whose writes are modelled."""

    def __init__(self, fs: FaultFS, f: Any, state: FileState) -> None:
        self._fs, self._f, self._state = fs, f, state

    def write(self, data: bytes) -> int:
        self._fs._before_write(len(data))
        pos = self._f.tell()
        n = self._f.write(data)
        self._state.pending.append(("w", pos, bytes(data)))
        return n

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)

    def __enter__(self) -> _Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        self._f.close()


class FaultFS:
    """The layer, installed with ``with FaultFS(root, rng) as fs:`` around code that writes under ``root``."""

    def __init__(self, root: str | os.PathLike[str], rng: random.Random) -> None:
        self.root = os.path.abspath(os.fspath(root))
        self.rng = rng
        self.counts = Counts()
        self._real: dict[str, Callable[..., Any]] = {}
        self._real_open: dict[str, Any] = {}
        self._inodes: dict[tuple[int, int], FileState] = {}
        self._dirs: dict[str, DirState] = {}
        self._fault: str | None = None
        self._countdown = 0
        self._cut_after: int | None = None
        self._enospc_next = False
        #: the fault that fired since the last :meth:`arm` (None if none did)
        self.fired: str | None = None
        self.crashed = False
        self._fds: set[int] = set()  # raw descriptors open on files under the root

    # -- install -------------------------------------------------------------------------------
    def __enter__(self) -> FaultFS:
        for name in ("open", "close", "pwrite", "write", "ftruncate", "fsync", "replace", "rename", "unlink", "remove"):
            self._real[name] = getattr(os, name)
            setattr(os, name, getattr(self, "_" + name))
        import importlib

        for mod in OPEN_MODULES:
            m = importlib.import_module(mod)
            self._real_open[mod] = m.__dict__.get("open")
            m.open = self._open_file  # type: ignore[attr-defined]
        self.reset_model()
        return self

    def __exit__(self, *exc: object) -> None:
        import importlib

        for name, fn in self._real.items():
            setattr(os, name, fn)
        for mod, prev in self._real_open.items():
            m = importlib.import_module(mod)
            if prev is None:
                del m.open  # type: ignore[attr-defined]
            else:
                m.open = prev  # type: ignore[attr-defined]

    def reset_model(self) -> None:
        """Take the files under the root as they are now as durable, with nothing pending."""
        self._inodes.clear()
        self._dirs.clear()
        for dirpath, _dirs, names in os.walk(self.root):
            d = self._dirs[dirpath] = DirState()
            for n in names:
                p = os.path.join(dirpath, n)
                with builtins.open(p, "rb") as f:
                    fs = FileState(f.read())
                d.durable[n] = fs
                st = os.stat(p)
                self._inodes[(st.st_dev, st.st_ino)] = fs

    # -- faults --------------------------------------------------------------------------------
    def arm(self, fault: str, after: int) -> None:
        """Schedule ``fault`` ("power", "eio" or "enospc") at the ``after``-th operation of its kind (1 = the next)."""
        if fault not in ("power", "eio", "enospc"):
            raise ValueError(fault)
        self._fault, self._countdown, self.fired = fault, after, None
        self._cut_after = None
        self._enospc_next = False

    def disarm(self) -> None:
        """No fault scheduled (operations run and are modelled)."""
        self._fault = None
        self._cut_after = None
        self._enospc_next = False

    def _count(self, kind: str) -> None:
        self.counts.faults[kind] = self.counts.faults.get(kind, 0) + 1

    def _cut(self) -> None:
        self.crashed = True
        raise PowerCut("simulated power cut")

    def _tick(self, op: str) -> None:
        """Before each modelled operation: a dead process does nothing; a scheduled fault may fire."""
        if self.crashed:
            raise PowerCut("the process is dead")
        if self._cut_after is not None:
            self._cut_after -= 1
            if self._cut_after <= 0:
                self._cut()
        if self._fault == "power" or (self._fault == "eio" and op == "fsync"):
            self._countdown -= 1
            if self._countdown <= 0:
                fault, self._fault = self._fault, None
                self.fired = fault
                self._count(fault)
                if fault == "power":
                    self._cut()
                self._cut_after = self.rng.randint(1, 30)
                raise OSError(errno.EIO, "simulated fsync failure (EIO)")

    def _before_write(self, size: int) -> int | None:
        """For a write of ``size`` bytes: raise ENOSPC, or return a short count to write first, or None."""
        self._tick("write")
        self.counts.writes += 1
        if self._enospc_next:
            self._enospc_next = False
            raise OSError(errno.ENOSPC, "simulated full disk (ENOSPC)")
        if self._fault == "enospc":
            self._countdown -= 1
            if self._countdown <= 0:
                self._fault = None
                self.fired = "enospc"
                self._count("enospc")
                self._cut_after = self.rng.randint(1, 30)
                if size > 1 and self.rng.random() < 0.5:
                    self._enospc_next = True
                    return self.rng.randrange(1, size)  # a short write; the next one fails
                raise OSError(errno.ENOSPC, "simulated full disk (ENOSPC)")
        return None

    # -- lookups -------------------------------------------------------------------------------
    def _mine(self, path: Any) -> str | None:
        if isinstance(path, int):
            return None
        p = os.path.abspath(os.fspath(path))
        return p if p == self.root or p.startswith(self.root + os.sep) else None

    def _dir(self, path: str) -> DirState:
        return self._dirs.setdefault(os.path.dirname(path), DirState())

    def _state_of_fd(self, fd: int) -> FileState | DirState | None:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            return next((d for p, d in self._dirs.items() if _same(p, st)), None)
        return self._inodes.get((st.st_dev, st.st_ino))

    def _new_file(self, path: str) -> FileState:
        fs = FileState()
        st = os.stat(path)
        self._inodes[(st.st_dev, st.st_ino)] = fs
        self._dir(path).pending.append(("link", os.path.basename(path), fs))
        self.counts.dir_ops += 1
        return fs

    # -- wrapped calls -------------------------------------------------------------------------
    def _open(self, path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        p = self._mine(path) if dir_fd is None else None
        if p is None:
            return self._real["open"](path, flags, mode, dir_fd=dir_fd)
        if p == self.root:
            fd = self._real["open"](p, flags, mode)
            self._fds.add(fd)
            return fd
        creating = bool(flags & os.O_CREAT) and not os.path.exists(p)
        if creating or flags & os.O_TRUNC:
            self._tick("create")
        fd = self._real["open"](p, flags, mode)
        self._fds.add(fd)
        if creating:
            self._new_file(p)
        elif flags & os.O_TRUNC:
            fs = self._state_of_fd(fd)
            if isinstance(fs, FileState):
                fs.pending.append(("t", 0))
        return fd

    def _close(self, fd: int) -> None:
        self._fds.discard(fd)
        return self._real["close"](fd)

    def _open_file(self, file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        p = self._mine(file)
        if p is None or not any(c in mode for c in "wxa+"):
            return builtins.open(file, mode, *args, **kwargs)
        creating = not os.path.exists(p)
        self._tick("create")
        f = builtins.open(p, mode, *args, **kwargs)  # noqa: SIM115 - handed to the caller
        if creating:
            fs = self._new_file(p)
        else:
            found = self._state_of_fd(f.fileno())
            if not isinstance(found, FileState):
                f.close()
                raise ModelError(f"{p} is not modelled")
            fs = found
            if "w" in mode:
                fs.pending.append(("t", 0))
        return _Writer(self, f, fs)

    def _pwrite(self, fd: int, data: Any, offset: int) -> int:
        fs = self._state_of_fd(fd)
        if not isinstance(fs, FileState):
            return self._real["pwrite"](fd, data, offset)
        data = bytes(data)
        short = self._before_write(len(data))
        if short is not None:
            data = data[:short]
        n = self._real["pwrite"](fd, data, offset)
        fs.pending.append(("w", offset, data[:n]))
        return n

    def _write(self, fd: int, data: Any) -> int:
        fs = self._state_of_fd(fd)
        if not isinstance(fs, FileState):
            return self._real["write"](fd, data)
        data = bytes(data)
        short = self._before_write(len(data))
        if short is not None:
            data = data[:short]
        pos = os.lseek(fd, 0, os.SEEK_CUR)
        n = self._real["write"](fd, data)
        fs.pending.append(("w", pos, data[:n]))
        return n

    def _ftruncate(self, fd: int, length: int) -> None:
        fs = self._state_of_fd(fd)
        if not isinstance(fs, FileState):
            return self._real["ftruncate"](fd, length)
        self._tick("truncate")
        self._real["ftruncate"](fd, length)
        fs.pending.append(("t", length))
        return None

    def _fsync(self, fd: int) -> None:
        state = self._state_of_fd(fd)
        if state is None:
            return self._real["fsync"](fd)
        self._tick("fsync")
        self._real["fsync"](fd)
        if isinstance(state, DirState):
            self.counts.dir_fsyncs += 1
            state.durable = _apply_dir(state.durable, state.pending)
            state.pending = []
        else:
            self.counts.fsyncs += 1
            content = apply(state.durable, state.pending)
            real = self._read_fd(fd)
            if real != content:
                raise ModelError(f"fd {fd}: the model holds {len(content)} bytes, the file {len(real)}: an unwrapped write")
            state.durable, state.pending = content, []
        return None

    def _read_fd(self, fd: int) -> bytes:
        rfd = self._real["open"](f"/proc/self/fd/{fd}", os.O_RDONLY)  # the fd may be write-only
        try:
            return os.pread(rfd, os.fstat(rfd).st_size + 1, 0)
        finally:
            self._real["close"](rfd)

    def _rename_like(self, name: str, src: Any, dst: Any, **kwargs: Any) -> None:
        s, d = self._mine(src), self._mine(dst)
        if s is None and d is None:
            return self._real[name](src, dst, **kwargs)
        if s is None or d is None or os.path.dirname(s) != os.path.dirname(d):
            raise ModelError(f"{name}({src!r}, {dst!r}) crosses the modelled directories")
        self._tick("rename")
        self._real[name](s, d, **kwargs)
        self._dir(s).pending.append(("rename", os.path.basename(s), os.path.basename(d)))
        self.counts.dir_ops += 1
        return None

    def _replace(self, src: Any, dst: Any, **kwargs: Any) -> None:
        return self._rename_like("replace", src, dst, **kwargs)

    def _rename(self, src: Any, dst: Any, **kwargs: Any) -> None:
        return self._rename_like("rename", src, dst, **kwargs)

    def _unlink_like(self, name: str, path: Any, **kwargs: Any) -> None:
        p = self._mine(path)
        if p is None:
            return self._real[name](path, **kwargs)
        self._tick("unlink")
        self._real[name](p, **kwargs)
        self._dir(p).pending.append(("unlink", os.path.basename(p), None))
        self.counts.dir_ops += 1
        return None

    def _unlink(self, path: Any, **kwargs: Any) -> None:
        return self._unlink_like("unlink", path, **kwargs)

    def _remove(self, path: Any, **kwargs: Any) -> None:
        return self._unlink_like("remove", path, **kwargs)

    # -- the cut -------------------------------------------------------------------------------
    def crash(self, *, power: bool = True, torn: bool = False, reorder: bool = False) -> None:
        """Rewrite the root as the disk holds it after the process died (``power=False``: a process crash,
        everything written survives) or after a power cut: durable content, plus with ``torn`` a prefix
        of each file's pending writes with the next one cut short; pending directory operations kept
        as a prefix, or with ``reorder`` as a random subset."""
        self.crashed = True
        self.disarm()
        for fd in self._fds:  # the dead writer's descriptors (its objects are abandoned)
            self._real["close"](fd)
        self._fds.clear()
        rng = self.rng
        layout: dict[str, dict[str, bytes]] = {}
        for path, d in self._dirs.items():
            if not power:
                ops = d.pending
            elif reorder:
                ops = [op for op in d.pending if rng.random() < 0.5]
            else:
                ops = d.pending[: rng.randint(0, len(d.pending))]
            entries = _apply_dir(d.durable, ops)
            files: dict[str, bytes] = {}
            for name, fs in entries.items():
                if not power:
                    files[name] = apply(fs.durable, fs.pending)
                elif torn and fs.pending:
                    k = rng.randint(0, len(fs.pending))
                    if k < len(fs.pending) and fs.pending[k][0] == "w" and rng.random() < 0.5:
                        files[name] = apply(fs.durable, fs.pending[: k + 1], rng.randrange(len(fs.pending[k][2]) + 1))
                    else:
                        files[name] = apply(fs.durable, fs.pending[:k])
                else:
                    files[name] = fs.durable
            layout[path] = files
        for path, files in layout.items():
            if not os.path.isdir(path):
                continue
            for n in os.listdir(path):
                p = os.path.join(path, n)
                if os.path.isfile(p) or os.path.islink(p):
                    self._real["unlink"](p)
            for n, content in files.items():
                with builtins.open(os.path.join(path, n), "wb") as f:
                    f.write(content)
        self.reset_model()
        self.crashed = False


def _apply_dir(entries: dict[str, FileState], ops: list[tuple[str, str, Any]]) -> dict[str, FileState]:
    out = dict(entries)
    for op, name, arg in ops:
        if op == "link":
            out[name] = arg
        elif op == "unlink":
            out.pop(name, None)
        elif name in out:  # rename
            out[arg] = out.pop(name)
    return out


def _same(path: str, st: os.stat_result) -> bool:
    try:
        s = os.stat(path)
    except OSError:
        return False
    return (s.st_dev, s.st_ino) == (st.st_dev, st.st_ino)
