"""``kafkalog verify`` of the objects Aiven's tiered-storage plug-in wrote (SPEC Appendix D): every
chunk fetched and its GCM tag checked, every batch's CRC, every index part read, each offset index
entry checked against the batch it points at, each segment's batches against its manifest's offset
range, and the partition across its segments checked for holes (data loss)."""

from __future__ import annotations

from collections.abc import Callable

from kafkalog.errors import DataLossError, KafkaLogError
from kafkalog.format.records.stream import LogReader
from kafkalog.format.tiered_aiven import INDEX_PARTS, Keyring, RemoteSegment
from kafkalog.tools.validate import ERROR, WARNING, VerifyReport

__all__ = ["holds_tiered_objects", "verify_tiered"]


def holds_tiered_objects(path: str) -> bool:
    """Whether ``path`` (a directory or URL) is a prefix of the plug-in's objects: it holds an
    ``.rsm-manifest`` and no broker segment file (``<20 digits>.log``); a tree holding both is
    verified as broker files."""
    import re

    from kafkalog.format.tiered_aiven import open_store, parse_object_key

    try:
        keys = [k for k, _ in open_store(path).list("")]
    except OSError:
        return False
    plain = re.compile(r"(?:^|/)\d{20}\.log$")
    return any(k.endswith(".rsm-manifest") and parse_object_key(k) is not None for k in keys) and not any(plain.search(k) for k in keys)


def _segment(seg: RemoteSegment, report: VerifyReport) -> None:
    m = seg.manifest
    name = seg.name("log")
    for part in INDEX_PARTS:
        seg.index_part(part)  # decrypted, in range of the object
    boundaries: dict[int, int] = {}
    with seg.open_log() as f, LogReader(f, name=name) as reader:
        for b in reader.batches():
            boundaries[b.position] = b.last_offset
            if not b.is_valid:
                report.add(ERROR, "batch-crc", name, b.position, b.base_offset, "the batch's CRC does not match its bytes")
            if b.base_offset < m.start_offset or b.last_offset > m.end_offset:
                report.add(ERROR, "tiered-range", name, b.position, b.base_offset,
                           f"the batch's offsets {b.base_offset}-{b.last_offset} are outside the manifest's {m.start_offset}-{m.end_offset}")
            list(b.records())
        if reader.tail is not None:
            report.add(ERROR, "tiered-torn", name, reader.tail.position, None,
                       f"{reader.tail.size} bytes after the last whole batch of a tiered (closed) segment")
    idx = seg.offset_index()
    for off, pos in zip(idx.offsets.tolist(), idx.positions.tolist(), strict=True):
        if boundaries.get(pos) != off:
            report.add(ERROR, "index-position", seg.name("indexes"), pos, off,
                       f"offset index entry ({off}, {pos}) does not point at the batch ending at offset {off}")


def verify_tiered(prefix: str, keys: Keyring | None, report: VerifyReport, progress: Callable[[str], None] | None = None) -> None:
    """Add the findings of the plug-in's objects under ``prefix`` to ``report``."""
    from kafkalog.log.tiered import open_tiered

    warnings: list[str] = []
    parts = open_tiered(prefix, keys=keys, allow_gaps=True, warnings=warnings)
    for w in warnings:
        report.add(WARNING, "tiered-incomplete", w.split(": ", 1)[0], None, None, w.split(": ", 1)[1])
    for part in parts:
        for s in part.segments:
            assert s.remote is not None
            if progress is not None:
                progress(s.name)
            report.files += 3
            try:
                _segment(s.remote, report)
            except KafkaLogError as e:
                report.add(ERROR, type(e).__name__, e.file or s.name, e.position, e.offset, e.message)
            report.bytes += s.remote.fetched
        try:
            part.plan()
        except (DataLossError, KafkaLogError) as e:
            report.add(ERROR, type(e).__name__, e.file or part.name, e.position, e.offset, e.message)
        for g in part.gaps:
            report.add(ERROR, "data-loss", g.directory, None, g.start, g.message())
