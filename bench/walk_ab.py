#!/usr/bin/env python
"""The chunked columnar decoder of the working tree against the same decoder at another git revision, in one process.

    .venv/bin/python bench/walk_ab.py [--rev REV] [--rounds 25] [--mb 48] [--real DIR]

On a shared virtual machine separate runs of one program differ by 10-20%, which hides changes
of a few percent. Here the decoder as committed at ``--rev`` (default ``HEAD``) is loaded beside
the working tree's, and both decode the same bytes, held in memory, in ``--rounds`` interleaved
rounds: ``codec/kafkalog/fast/columnar.py`` at the revision, imported as a second module, with
its compiled kernels ``_columnar.pyx`` at the revision built into a temporary directory (Cython
and a C compiler are needed, as for ``pip install -e .``; the rest is the working tree's). The
working tree's kernels are the ones built in place (``./run test`` rebuilds them when a ``.pyx``
changes). For each data set the table gives the best and the median time of
:func:`kafkalog.fast.columnar.iter_chunks` (CRC checked, keys and values copied out) and the ratio
of medians. The data sets:

* ``1,000-record batches``: ``--mb`` MB of uncompressed v2 batches of 1,000 records, 16-byte keys,
  100-byte values, no headers (the workload of ``../shared/notes/measurements.md``);
* ``one-record batches, 3 headers``: one record a batch with the three short headers Kafka Connect
  writes (task.generation, task.id, current.iteration), 87-byte values, as in real connector topics;
* ``real``: every ``.log`` under ``--real`` (default: ``../shared/golden-real/cp760-flink-on-prem``
  when it is there, else the bundled part of it in ``golden/real``).

Each set is decoded with and without headers. A version whose rows differ from the other's
(count, offsets, key and value bytes) fails the run (exit 1).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
MODULE = "codec/kafkalog/fast/columnar.py"
PYX = "codec/kafkalog/fast/_columnar.pyx"
PXD_DIR = "codec/kafkalog/fast"
#: the real data set, whole (../shared) or as bundled
REAL_SETS = (REPO.parent / "shared" / "golden-real" / "cp760-flink-on-prem", REPO / "golden" / "real" / "cp760-flink-on-prem")


#: builds ``_columnar.pyx`` in the directory given, with setup.py's Cython directives
_BUILD = """
import os, sys
os.chdir(sys.argv[1])
from Cython.Build import cythonize
from setuptools import Extension, setup
directives = {"boundscheck": False, "wraparound": False, "cdivision": True, "initializedcheck": False}
setup(script_args=["build_ext", "--inplace", "-q"], ext_modules=cythonize(
    [Extension("_columnar", ["_columnar.pyx"], extra_compile_args=["-O3"])], language_level=3, compiler_directives=directives, quiet=True))
"""


def _git_show(rev: str, path: str) -> bytes:
    return subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{path}"], check=True, capture_output=True).stdout


def build_kernels(rev: str, where: Path) -> ModuleType | None:
    """``_columnar.pyx`` as committed at ``rev``, compiled in ``where`` and imported (None when the
    revision has no such file)."""
    try:
        source = _git_show(rev, PYX)
    except subprocess.CalledProcessError:
        return None
    where.mkdir()
    (where / "_columnar.pyx").write_bytes(source)
    # the kernels cimport from kafkalog.fast (the codec calls and the CRC of _native, the varint reader
    # of _varint): the .pxd files at the same revision, in a package tree Cython can search (at run
    # time the installed _native provides its functions)
    listed = subprocess.run(["git", "-C", str(REPO), "ls-tree", "--name-only", rev, PXD_DIR + "/"], check=True, capture_output=True, text=True)
    pxds = [p for p in listed.stdout.split() if p.endswith(".pxd")]
    if pxds:
        package = where / "kafkalog" / "fast"
        package.mkdir(parents=True)
        for d in (where / "kafkalog", package):
            (d / "__init__.py").write_bytes(b"")
        for p in pxds:
            (package / Path(p).name).write_bytes(_git_show(rev, p))
    subprocess.run([sys.executable, "-c", _BUILD, str(where)], check=True, capture_output=True)
    built = next(p for p in where.iterdir() if p.name.startswith("_columnar.") and p.suffix in (".so", ".pyd"))
    spec = importlib.util.spec_from_file_location("_columnar", built)  # the init function is named after the last part
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_revision(rev: str, where: Path) -> ModuleType:
    """``columnar.py`` as committed at ``rev``, imported as a module of its own, with the kernels
    compiled from the same revision."""
    from kafkalog import fast

    source = _git_show(rev, MODULE)
    tag = rev.replace("/", "_").replace("~", "_").replace("^", "_")
    kernels = build_kernels(rev, where / f"kernels_at_{tag}")
    path = where / f"columnar_at_{tag}.py"
    path.write_bytes(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # dataclasses look the module up by name
    working_tree = fast.compiled
    fast.compiled = lambda name: kernels if name == "_columnar" else working_tree(name)  # type: ignore[assignment]
    try:
        spec.loader.exec_module(module)
    finally:
        fast.compiled = working_tree  # type: ignore[assignment]
    return module


def thousand_record_batches(megabytes: float) -> bytes:
    """Uncompressed v2 batches of 1,000 records (16-byte keys, 100-byte values) up to ``megabytes``."""
    from kafkalog import RecordBatchBuilder

    out, size, base = [], 0, 0
    value = bytes(range(100))
    while size < megabytes * 1e6:
        b = RecordBatchBuilder(base)
        for i in range(1000):
            b.append(1_700_000_000_000 + base + i, (base + i).to_bytes(16, "big"), value)
        raw = b.build()
        out.append(raw)
        size += len(raw)
        base += 1000
    return b"".join(out)


def connect_batches(count: int) -> bytes:
    """``count`` one-record batches, each record carrying Kafka Connect's three short headers."""
    from kafkalog import RecordBatchBuilder

    headers = [("task.generation", b"30"), ("task.id", b"30"), ("current.iteration", b"30")]
    out = []
    for n in range(count):
        b = RecordBatchBuilder(n)
        b.append(1_713_533_697_963 + n, str(1000 + n).encode(), bytes(87), headers)
        out.append(b.build())
    return b"".join(out)


def decode(module: ModuleType, data: list[bytes], headers: bool) -> tuple[int, str]:
    """Decode every buffer; returns (rows, digest of offsets, keys and values)."""
    from kafkalog.format.records.stream import LogReader

    rows, digest = 0, hashlib.blake2b(digest_size=16)
    for buf in data:
        with LogReader(buf) as reader:
            for chunk in module.iter_chunks(reader, max_rows=32768, headers=headers, verify_crc=True):
                rows += len(chunk)
                digest.update(chunk.offsets.tobytes())
                if hasattr(chunk, "key_data"):
                    digest.update(chunk.key_data.tobytes())
                    digest.update(chunk.value_data.tobytes())
    return rows, digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", default="HEAD", help="the git revision to compare the working tree with (default HEAD)")
    ap.add_argument("--rounds", type=int, default=25, help="interleaved rounds (default 25)")
    ap.add_argument("--mb", type=float, default=48, help="size of the 1,000-record batch set in MB (default 48)")
    ap.add_argument("--real", type=Path, default=next((p for p in REAL_SETS if p.is_dir()), REAL_SETS[-1]), help="a directory of real .log files")
    args = ap.parse_args(argv)

    from kafkalog.fast import columnar

    with tempfile.TemporaryDirectory(prefix="kafkalog-walk-ab-") as tmp:
        try:
            versions = {args.rev: load_revision(args.rev, Path(tmp)), "working tree": columnar}
        except subprocess.CalledProcessError as e:
            ap.error(f"no {MODULE} at revision {args.rev!r}: {e.stderr.decode(errors='replace').strip()}")
        real = [p.read_bytes() for p in sorted(args.real.rglob("*.log")) if p.stat().st_size]
        sets = {
            "1,000-record batches": [thousand_record_batches(args.mb)],
            "one-record batches, 3 headers": [connect_batches(max(1000, int(args.mb * 1e6 / 200)))],
            f"real ({args.real.name}, {len(real)} files)": real,
        }
        cases = [(name, data, headers) for name, data in sets.items() for headers in (False, True)]
        ok = True
        for name, data, headers in cases:  # warm-up, and a check that both versions agree
            results = {v: decode(m, data, headers) for v, m in versions.items()}
            if len(set(results.values())) != 1:
                print(f"MISMATCH on {name} (headers={headers}): {results}", file=sys.stderr)
                ok = False
        times: dict[tuple[str, bool, str], list[float]] = {(n, h, v): [] for n, _, h in cases for v in versions}
        for _ in range(args.rounds):
            for name, data, headers in cases:
                for v, m in versions.items():
                    t = time.perf_counter()
                    decode(m, data, headers)
                    times[(name, headers, v)].append(time.perf_counter() - t)
    rev, tree = versions
    print(f"iter_chunks with CRC, data in memory; {args.rounds} interleaved rounds; ms (best / median)\n")
    print(f"| data | headers | {rev} | working tree | median, tree / {rev} |")
    print("|---|---|---|---|---|")
    for name, _, headers in cases:
        a, b = times[(name, headers, rev)], times[(name, headers, tree)]
        print(f"| {name} | {'yes' if headers else 'no'} | {min(a) * 1e3:.2f} / {statistics.median(a) * 1e3:.2f} | "
              f"{min(b) * 1e3:.2f} / {statistics.median(b) * 1e3:.2f} | {statistics.median(b) / statistics.median(a):.2f} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
