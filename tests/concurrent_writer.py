"""A writer process for tests/log/test_concurrency.py: appends to one partition, rolls, compacts and
applies retention in cycles while readers run, and logs every record it appended.

    python concurrent_writer.py DIR CYCLES SEED TRUTH_FILE

Each record's value names its key and a sequence number, so a reader can tell a real record from
bytes that merely parse. ``TRUTH_FILE`` gets one line per appended record (``offset key value``,
hex) once the cycles are done, and a line ``cycles N`` at the end.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "codec"))

from kafkalog import RecordBatchBuilder  # noqa: E402
from kafkalog.format.compression import Codec  # noqa: E402
from kafkalog.log.unified import Log, LogConfig  # noqa: E402

#: a clock that moves 1 s per call: retention by time and compaction lag both come due
START_MS = 1_700_000_000_000
#: upper bound of the pause after each cycle
PACE_S = 0.1


def main(directory: str, cycles: int, seed: int, truth_file: str) -> None:
    rnd = random.Random(seed)
    now = [START_MS]

    def clock() -> int:
        return now[0]

    config = LogConfig(
        segment_bytes=8 * 1024,
        index_interval_bytes=512,
        cleanup_policy=("compact", "delete"),
        retention_bytes=48 * 1024,
        retention_ms=3_600_000,
        file_delete_delay_ms=60_000,
        delete_retention_ms=5_000,
        min_cleanable_dirty_ratio=0.1,
    )
    log = Log.open(directory, config, clock=clock, writable=True)
    truth: list[tuple[int, bytes, bytes | None]] = []
    seq = 0
    for cycle in range(cycles):
        for _ in range(rnd.randint(1, 6)):
            b = RecordBatchBuilder(0, compression=Codec.from_name(rnd.choice(["none", "none", "gzip", "lz4", "zstd"])), partition_leader_epoch=0)
            n = rnd.randint(1, 20)
            keys = []
            for _ in range(n):
                key = b"key-%02d" % rnd.randrange(40)
                tombstone = rnd.random() < 0.05
                value = None if tombstone else b"%s seq=%d " % (key, seq) + b"x" * rnd.randrange(200)
                b.append(now[0], key, value)
                keys.append((key, value))
                seq += 1
            info = log.append(b.build())
            first = info.first_offset if info.first_offset is not None else info.last_offset - n + 1
            truth.extend((first + i, k, v) for i, (k, v) in enumerate(keys))
            now[0] += 1000
        log.flush()
        if rnd.random() < 0.3:
            log.roll()
        if cycle % 3 == 0:
            compact(log, now[0])
        if cycle % 4 == 0:
            log.delete_old_segments(now[0])
        log.delete_pending_files(now[0])
        time.sleep(rnd.random() * PACE_S)  # let the readers in mid-cycle
    log.close()
    with open(truth_file, "w") as f:
        for off, k, v in truth:
            f.write(f"{off} {k.hex()} {'-' if v is None else v.hex()}\n")
        f.write(f"cycles {cycles}\n")


def compact(log: Log, now_ms: int) -> None:
    """One cleaner pass over the log, as Kafka's cleaner thread runs it."""
    from kafkalog.log.cleaner import compact as clean_pass

    clean_pass(log, now_ms)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
