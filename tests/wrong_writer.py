"""A deliberately wrong writer for tests/test_writer_conformance.py: kafkalog's write-case with one known bug.

Usage: python tests/wrong_writer.py BUG CASE_DIR OUT_DIR
Bugs: index-every-append (index.interval.bytes forced to 0: an offset and time index entry for every
append after a segment's first), eager-indexes (every segment's .index and .timeindex created with the
segment, as kafkalog did before it followed Kafka's LazyIndex), no-lag-roll (a compacted topic's
segments roll after segment.ms, ignoring max.compaction.lag.ms).
"""

from __future__ import annotations

import dataclasses
import os
import sys

import kafkalog.tools.writer_cases as writer_cases
from kafkalog.log.unified import LogConfig

BUGS = {"index-every-append", "eager-indexes", "no-lag-roll"}


def main(argv: list[str]) -> int:
    bug, case, out = argv
    assert bug in BUGS, bug
    if bug == "index-every-append":
        config = writer_cases.case_config
        writer_cases.case_config = lambda spec, version=None: dataclasses.replace(config(spec, version), index_interval_bytes=0)  # type: ignore[assignment]
    elif bug == "no-lag-roll":
        LogConfig.max_segment_ms = property(lambda self: self.segment_ms)  # type: ignore[assignment,method-assign]
    writer_cases.run_case(case, out, "4.0.0")  # the cases it runs over are golden/corpus/writer's, Kafka 4.0.0's
    if bug == "eager-indexes":  # what creating both indexes at roll, and trimming them at close, leaves
        for name in os.listdir(out):
            if name.endswith(".log"):
                for suffix in (".index", ".timeindex"):
                    path = os.path.join(out, name[: -len(".log")] + suffix)
                    if not os.path.exists(path):
                        open(path, "wb").close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
