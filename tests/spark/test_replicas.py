"""The Spark source reads copies of one topic-partition by the rule of every kafkalog reader (SPEC
§6.9): the three-broker backup of :mod:`replica_backup`, as one folder or as its copies in any
order, gives the records the leader appended, each once; a diverged copy fails the read naming
both copies, and ``failOnDataLoss=false`` reads the history Kafka keeps."""

from __future__ import annotations

import itertools
from pathlib import Path

import pyarrow as pa
import pytest

from kafkalog_spark import DataLossError
from replica_backup import RECORDS, UNCLEAN_AT, UNCLEAN_RECORDS, build_backup

from ._support import read_in_process


def _rows(table: pa.Table | None) -> list[tuple[int, int, bytes, bytes]]:
    assert table is not None
    d = table.to_pydict()
    ts = table.column("timestamp").cast(pa.int64()).to_pylist()
    return sorted(zip(d["offset"], [t // 1000 for t in ts], d["key"], d["value"], strict=True))


@pytest.mark.rule("R-REP-01", "R-REP-03", "R-REP-04")
def test_copies_in_any_order_and_a_diverged_copy(tmp_path: Path) -> None:
    b = build_backup(tmp_path)
    want = [(o, ts, k, v) for o, (ts, k, v) in sorted(RECORDS.items())]
    copies = [b.copy(n) for n in (1, 2, 3)]
    for paths in ([str(b.backup)], *(list(p) for p in itertools.permutations(copies)), [b.copy(3), b.copy(2)]):
        table, _, _ = read_in_process({"path": ",".join(paths)})
        assert _rows(table) == want, paths
    old, new = b.copy(1), b.copy(4)
    for paths in ([old, new], [new, old]):
        with pytest.raises(DataLossError) as err:
            read_in_process({"path": ",".join(paths)})
        assert "replica divergence" in str(err.value) and old in str(err.value) and new in str(err.value)
        table, _, _ = read_in_process({"path": ",".join(paths), "failOnDataLoss": "false"})
        kept = {**{o: r for o, r in RECORDS.items() if o < UNCLEAN_AT}, **UNCLEAN_RECORDS}
        assert _rows(table) == [(o, ts, k, v) for o, (ts, k, v) in sorted(kept.items())]
