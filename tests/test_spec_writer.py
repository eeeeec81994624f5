"""Writer-side points SPEC.md 1.1 pins (issue #26), each checked on the files a segment manager leaves.

Expected values follow from the rules' text and the Kafka classes they cite (LogSegment.append,
ProducerStateManager.takeSnapshot, LeaderEpochFileCache, DefaultRecordBatch.setMaxTimestamp, UnifiedLog.append
@1eb7644), or are Kafka-written files of golden/corpus/writer; never kafkalog's own output pasted back.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from helpers import GOLDEN
from kafkalog import Codec, LegacyBatchBuilder, LogReader, RecordBatchBuilder
from kafkalog.format.epoch import LeaderEpochCache
from kafkalog.format.primitives import crc32c
from kafkalog.format.records.control import ControlType
from kafkalog.format.snapshot import read_producer_snapshot
from kafkalog.format.txnindex import read_txn_index
from kafkalog.log.cleaner import CleanerConfig, clean
from kafkalog.log.producer_state import AppendOrigin
from kafkalog.log.unified import Log, LogConfig

WRITER = GOLDEN / "corpus" / "writer"
T0 = 1_700_000_000_000


def _name(offset: int, ext: str) -> str:
    return f"{offset:020d}.{ext}"


def _open(d: Path, **cfg: object) -> Log:
    return Log.open(d, LogConfig(**cfg), writable=True, sync=False, clock=lambda: T0 + 10_000)  # type: ignore[arg-type]


def _batch(n: int = 1, *, ts: int = T0, **kw: object) -> bytes:
    b = RecordBatchBuilder(0, **kw)  # type: ignore[arg-type]
    for i in range(n):
        b.append(ts + i, b"k%d" % i, b"v" * 20)
    return b.build()


# ---------------------------------------------------------------------------- R-IDX-09, R-RCV-10
@pytest.mark.rule("R-IDX-09", "R-RCV-10")
def test_every_append_opens_both_indexes_and_a_bare_roll_opens_none(tmp_path: Path) -> None:
    # Kafka's own files: a segment reached by a roll and given one append has both indexes at close,
    # an empty .index and a .timeindex holding only the final entry of R-TIDX-04
    kafka = WRITER / "roll-by-size" / "expected"
    assert (kafka / _name(147, "log")).stat().st_size > 0
    assert (kafka / _name(147, "index")).stat().st_size == 0 and (kafka / _name(147, "timeindex")).stat().st_size == 12
    d = tmp_path / "t-0"
    log = _open(d)
    log.append(_batch())
    log.roll()
    log.append(_batch())  # the only append to segment 1: no index entry, but both files opened
    log.roll()  # segment 2: rolled to, never appended to
    log.close(flush=False)  # UnifiedLog.close: no flush first
    assert (d / _name(1, "index")).read_bytes() == b"" and (d / _name(1, "timeindex")).read_bytes() == struct.pack(">qi", T0, 0)
    assert (d / _name(2, "log")).exists()
    assert not (d / _name(2, "index")).exists() and not (d / _name(2, "timeindex")).exists()
    # the next load recovers the .log without .index at once (R-RCV-05), creating both files
    log = _open(d)
    log.close(flush=False)
    assert (d / _name(2, "index")).read_bytes() == b"" == (d / _name(2, "timeindex")).read_bytes()
    # a broker's shutdown flushes first, which opens the active segment's indexes: 0-byte files
    d2 = tmp_path / "u-0"
    log = _open(d2)
    log.append(_batch())
    log.roll()
    log.close(flush=True)
    assert (d2 / _name(1, "index")).read_bytes() == b"" == (d2 / _name(1, "timeindex")).read_bytes()
    assert (d2 / _name(0, "index")).read_bytes() == b"" and len((d2 / _name(0, "timeindex")).read_bytes()) == 12


# ------------------------------------------------------------------------------------ R-SNAP-08
@pytest.mark.rule("R-SNAP-08")
def test_a_snapshot_is_taken_when_the_end_offset_passes_the_last_snapshot(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = _open(d)
    log.append(_batch(3))
    log.roll()  # end offset 3 > last snapshot 0: 3.snapshot
    assert (d / _name(3, "snapshot")).exists()
    (d / _name(3, "snapshot")).unlink()
    log.roll()  # an explicit roll at the same offset (R-ROLL-04): 3 is not above 3, nothing written
    log.close(flush=False)  # nor at close, although no file of that name exists
    assert not (d / _name(3, "snapshot")).exists()
    # the other way round: a file of that name does not stop a snapshot that is due
    d2 = tmp_path / "u-0"
    log = _open(d2)
    log.append(_batch(2))
    (d2 / _name(2, "snapshot")).write_bytes(b"junk" * 25)  # longer than the snapshot
    log.close(flush=False)
    assert read_producer_snapshot(d2 / _name(2, "snapshot")) == []  # replaced by the (empty) state at 2


# ------------------------------------------------------------------------------------ R-CKPT-11
def _checkpoint(d: Path) -> bytes:
    return (d / "leader-epoch-checkpoint").read_bytes()


@pytest.mark.rule("R-CKPT-11")
def test_leader_epoch_cache_creation_assignment_and_clearing(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = _open(d)
    assert _checkpoint(d) == b""  # created empty with the log
    log.append(_batch(2), leader_epoch=3)
    assert _checkpoint(d) == b"0\n1\n3 0\n"
    ino = (d / "leader-epoch-checkpoint").stat().st_ino
    log.append(_batch(2), leader_epoch=3)  # the same epoch from a later offset: no change, no rewrite
    assert (d / "leader-epoch-checkpoint").stat().st_ino == ino and _checkpoint(d) == b"0\n1\n3 0\n"
    legacy = LegacyBatchBuilder(1, 4)
    legacy.append(T0, b"k", b"v")
    log.append(legacy.build(), assign_offsets=False)  # a magic 1 message after magic 2 data clears the cache
    assert _checkpoint(d) == b"0\n0\n"
    log.append(_follower_batch(5, epoch=7), assign_offsets=False)
    assert _checkpoint(d) == b"0\n1\n7 5\n"
    log.append(_follower_batch(6, epoch=6), assign_offsets=False)  # a lower epoch removes 7
    assert _checkpoint(d) == b"0\n1\n6 6\n"
    log.close(flush=False)
    cache = LeaderEpochCache(None)
    for e, s in ((1, 0), (4, 10)):
        cache.assign(e, s)
    assert cache.assign(4, 7)  # the latest epoch from a smaller start offset replaces its entry
    assert [(x.epoch, x.start_offset) for x in cache.entries] == [(1, 0), (4, 7)]
    assert not cache.assign(4, 9)


def _follower_batch(offset: int, *, epoch: int) -> bytes:
    """A one-record magic 2 batch as a follower receives it: offset and leader epoch already set."""
    b = RecordBatchBuilder(offset, partition_leader_epoch=epoch)
    b.append(T0, b"k", b"v")
    return b.build()


# -------------------------------------------------------------------------------------- R-WR-09
def _stamped(batch: bytes, attributes: int, max_timestamp: int) -> bytes:
    d = bytearray(batch)
    struct.pack_into(">h", d, 21, attributes)
    struct.pack_into(">q", d, 35, max_timestamp)
    struct.pack_into(">I", d, 17, crc32c(memoryview(d)[21:]))
    return bytes(d)


@pytest.mark.rule("R-WR-09")
def test_stamping_in_place_recomputes_max_timestamp_and_rewrites_attributes(tmp_path: Path) -> None:
    b = RecordBatchBuilder(0, compression=Codec.GZIP)
    for ts in (T0, T0 + 5, T0 + 2):
        b.append(ts, b"k", b"v" * 30)
    good = b.build()
    assert struct.unpack_from(">q", good, 35)[0] == T0 + 5
    d = tmp_path / "t-0"
    log = _open(d)
    log.append(_stamped(good, 0x0200 | 0x01, T0), leader_epoch=0)  # a wrong max timestamp and an unknown bit 9
    log.append(_stamped(good, 0x0200 | 0x01, T0 + 5), leader_epoch=0)  # header already right: kept as it is
    # bit 3 (LogAppendTime) set by the producer: every record reads as the header's max timestamp (R-V2-12)
    log.append(_stamped(good, 0x0008 | 0x01, T0 + 1), leader_epoch=0)
    log.close(flush=False)
    first, second, third = list(LogReader(d / _name(0, "log")).batches())
    assert struct.unpack_from(">h", first.data, 21)[0] == 0x01  # codec only: bit 9 cleared
    assert struct.unpack_from(">q", first.data, 35)[0] == T0 + 5  # from the records, not the header
    assert first.is_valid and first.data[61:] == good[61:]  # the compressed records are kept byte for byte
    assert struct.unpack_from(">h", second.data, 21)[0] == 0x0201 and second.data[61:] == good[61:]
    assert struct.unpack_from(">h", third.data, 21)[0] == 0x01 and third.max_timestamp == T0 + 1 and third.is_valid


# ------------------------------------------------------------------------------------ R-ROLL-08
@pytest.mark.rule("R-ROLL-08")
def test_the_roll_comes_before_the_producer_state_and_txnindex_updates(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = _open(d)
    log.append(_batch(2, producer_id=7, producer_epoch=0, base_sequence=0), leader_epoch=0)
    log.append(_batch(2, producer_id=9, producer_epoch=0, base_sequence=0, is_transactional=True), leader_epoch=0)
    size = log.active_segment.size
    log.close(flush=False)
    log = _open(d, segment_bytes=size + 20)  # the next append does not fit: it rolls
    marker = RecordBatchBuilder(0, producer_id=9, producer_epoch=0, is_transactional=True, is_control=True)
    marker.append_end_txn_marker(ControlType.ABORT, 0, T0)
    log.append(marker.build(), leader_epoch=0, origin=AppendOrigin.COORDINATOR)
    assert [s.base_offset for s in log.segments] == [0, 4]
    log.close(flush=False)
    # the roll's snapshot holds the state before the marker: producer 9's transaction still open
    entries = {e.producer_id: e for e in read_producer_snapshot(d / _name(4, "snapshot"))}
    assert entries[9].current_txn_first_offset == 2
    # the marker's .txnindex entry went to the segment the append was written to, the new one
    assert not (d / _name(0, "txnindex")).exists()
    [txn] = read_txn_index(d / _name(4, "txnindex"))
    assert (txn.producer_id, txn.first_offset, txn.last_offset) == (9, 2, 4)
    entries = {e.producer_id: e for e in read_producer_snapshot(d / _name(5, "snapshot"))}
    assert entries[9].current_txn_first_offset == -1


# ------------------------------------------------------------------------------ R-CMP-01, R-CMP-12
def _keyed(*records: tuple[bytes, int]) -> bytes:
    b = RecordBatchBuilder(0)
    for key, ts in records:
        b.append(ts, key, b"v")
    return b.build()


@pytest.mark.rule("R-CMP-12")
def test_a_rebuilt_batch_gives_the_time_index_its_last_offset(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = _open(d, cleanup_policy=("compact",))
    log.append(_keyed((b"a", T0 + 5), (b"b", T0 + 1)), leader_epoch=0)  # offsets 0, 1: b is superseded
    log.append(_keyed((b"b", T0 + 2)), leader_epoch=0)  # offset 2
    log.roll()
    result = clean(log, 0, 3, T0 + 10_000, cleaner_config=CleanerConfig(dedupe_buffer_size=1 << 16))
    assert result.end_offset == 3
    log.close(flush=False)
    first, second = list(LogReader(d / _name(0, "log")).batches())
    assert [r.offset for r in first.records()] == [0] and first.last_offset == 1  # rebuilt, last offset kept
    # one chunk, one append: max timestamp T0+5 at the rebuilt batch's last offset 1, not its kept record's 0
    assert (d / _name(0, "timeindex")).read_bytes() == struct.pack(">qi", T0 + 5, 1)
    assert second.last_offset == 2


@pytest.mark.rule("R-CMP-01", "R-CMP-06")
def test_a_pass_ends_where_the_offset_map_filled(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = _open(d, cleanup_policy=("compact",))
    for key in (b"a", b"a", b"b", b"c", b"d"):  # offsets 0-4, one batch each
        log.append(_keyed((key, T0)), leader_epoch=0)
    log.roll()
    for key in (b"a", b"e"):  # offsets 5, 6
        log.append(_keyed((key, T0)), leader_epoch=0)
    log.roll()
    seg1 = (d / _name(5, "log")).read_bytes()
    # 3 slots of 24 bytes (MD5 + offset), full at int(3 * 0.9) = 2 keys: a, b; the map stops at c@3
    cfg = CleanerConfig(dedupe_buffer_size=72, dedupe_buffer_load_factor=0.9)
    result = clean(log, 0, 7, T0 + 10_000, cleaner_config=cfg)
    # the latest offset was last set to b@2 (the batch of c never finished): the pass ends at 3, not at 7
    assert result.end_offset == 3
    assert [g.replaced for g in result.groups] == [[0]]  # segment 5 is at or above the end offset
    log.close(flush=False)
    kept = [(r.offset, r.key) for b in LogReader(d / _name(0, "log")).batches() for r in b.records()]
    assert kept == [(1, b"a"), (2, b"b"), (3, b"c"), (4, b"d")]  # a@0 removed; c, d above the map's latest offset
    assert (d / _name(5, "log")).read_bytes() == seg1  # a@5 never entered the map: a@1 stays


# ------------------------------------------------------------------------------------ R-SNAP-05
_JAVA_HASH_ORDER = """
import java.io.*;
import java.util.*;
public class HashOrder {
  public static void main(String[] args) throws IOException {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    for (String line; (line = in.readLine()) != null; ) {
      HashMap<Long, Integer> m = new HashMap<>();
      for (String op : line.trim().split(" ")) {
        if (op.equals("c")) m.clear();
        else if (op.startsWith("d")) m.remove(Long.parseLong(op.substring(1)));
        else m.put(Long.parseLong(op.substring(1)), 0);
      }
      StringJoiner out = new StringJoiner(" ");
      for (Long k : m.keySet()) out.add(k.toString());
      System.out.println(out);
    }
  }
}
"""


def _hash_map_scenarios() -> list[list[tuple[str, int]]]:
    import random

    rnd = random.Random(26)
    pools = [
        lambda: rnd.randrange(0, 10_000),  # small producer ids
        lambda: rnd.randrange(0, 2**63),  # any id
        lambda: rnd.randrange(-(2**63), 2**63),  # negative ones too
        lambda: rnd.randrange(0, 64) * 2**32 + rnd.randrange(0, 4) * 1024,  # high words fold onto low bits
        lambda: rnd.randrange(0, 40) * 16 + 3,  # one bucket of 16: collisions, treeify-resizes, splits
    ]
    out = []
    for _ in range(60):
        pool = rnd.choice(pools)
        ops: list[tuple[str, int]] = []
        keys: list[int] = []
        for _ in range(rnd.randrange(1, 120)):
            r = rnd.random()
            if keys and r < 0.15:
                ops.append(("d", rnd.choice(keys)))
            elif r < 0.17:
                ops.append(("c", 0))
            else:
                k = pool() if not keys or r < 0.9 else rnd.choice(keys)  # re-put an existing key now and then
                keys.append(k)
                ops.append(("p", k))
        out.append(ops)
    return out


@pytest.mark.rule("R-SNAP-05")
def test_snapshot_entry_order_is_java_hash_map_order(tmp_path: Path) -> None:
    """The model of R-SNAP-05 against java.util.HashMap<Long, _> itself, run by the JDK."""
    import shutil
    import subprocess

    from kafkalog.log.producer_state import JavaLongHashMap

    java = shutil.which("java")
    if java is None:
        pytest.skip("no JDK on PATH")
    scenarios = []
    for ops in _hash_map_scenarios():
        m: JavaLongHashMap[int] = JavaLongHashMap()
        for op, k in ops:
            if op == "c":
                m.clear()
            elif op == "d":
                m.pop(k, None)
            else:
                m[k] = 0
        if len(m._table) >= 64 and max(map(len, m._table)) > 8:  # a tree bin in Java: item 4 leaves its order open
            continue
        scenarios.append((ops, list(m)))
    assert len(scenarios) > 40
    src = tmp_path / "HashOrder.java"
    src.write_text(_JAVA_HASH_ORDER, encoding="utf-8")
    stdin = "".join(" ".join(("c" if op == "c" else f"{op}{k}") for op, k in ops) + "\n" for ops, _ in scenarios)
    proc = subprocess.run([java, str(src)], input=stdin, capture_output=True, text=True, check=True, timeout=300)
    got = [[int(x) for x in line.split()] for line in proc.stdout.splitlines()]
    assert got == [order for _, order in scenarios]
