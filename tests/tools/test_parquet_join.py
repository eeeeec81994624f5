"""kafkalog.tools.parquet_join: Parquet files written in parts, joined, are the file one pyarrow
ParquetWriter writes from the same batches, byte for byte (pyarrow is the independent writer here:
the expected bytes are its own), and read back as the same table."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import GOLDEN

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _batches() -> list:
    import kafkalog

    return list(kafkalog.scan(GOLDEN / "kafka" / "logdir", batch_rows=7, allow_gaps=True,
                              columns=["key", "value", "offset", "timestamp", "timestampType", "headers"]))


def _write(path: Path, batches: list, schema: object, **opts: object) -> None:
    with pq.ParquetWriter(path, schema, **opts) as w:
        for b in batches:
            w.write_batch(b)


@pytest.mark.parametrize("opts", [
    pytest.param({"compression": "snappy", "use_dictionary": ["timestampType", "headers.list.element.key"],
                  "write_statistics": ["offset", "timestamp", "timestampType"], "column_encoding": {"offset": "DELTA_BINARY_PACKED"}},
                 id="export's options"),
    pytest.param({"compression": "zstd"}, id="zstd, dictionaries and statistics everywhere"),
])
def test_parts_joined_are_the_file_one_writer_writes(opts: dict, tmp_path: Path) -> None:
    from kafkalog.tools.parquet_join import join

    batches = _batches()
    assert len(batches) > 20  # a row group of at most 7 rows per batch
    schema = batches[0].schema
    _write(tmp_path / "whole.parquet", batches, schema, **opts)
    for cuts in ([0, len(batches)], [0, 1, len(batches)], [0, 3, 4, 20, len(batches)], list(range(len(batches) + 1))):
        parts = []
        for k, (a, b) in enumerate(zip(cuts, cuts[1:], strict=False)):
            parts.append(str(tmp_path / f"p{k}.parquet"))
            _write(Path(parts[-1]), batches[a:b], schema, **opts)
        with open(tmp_path / "joined.parquet", "wb") as f:
            join(f, parts)
        assert (tmp_path / "joined.parquet").read_bytes() == (tmp_path / "whole.parquet").read_bytes(), cuts
    joined = pq.ParquetFile(tmp_path / "joined.parquet")
    assert joined.metadata.num_row_groups == len(batches)
    assert joined.read().equals(pa.Table.from_batches(batches))


@pytest.mark.parametrize(("opts", "what"), [({"write_page_index": True}, "page index"), ({"bloom_filter_options": {"key": {}}}, "bloom filter")])
def test_a_part_with_what_is_written_after_the_row_groups_is_refused(opts: dict, what: str, tmp_path: Path) -> None:
    """A page index or bloom filter sits between the last row group and the footer: the parts'
    cannot be joined into one writer's file, and are refused rather than joined into another."""
    from kafkalog.tools.parquet_join import join

    batches = _batches()[:2]
    try:
        _write(tmp_path / "p.parquet", batches, batches[0].schema, **opts)
    except TypeError:  # bloom filters came in pyarrow 20
        pytest.skip(f"this pyarrow does not write a {what}")
    with open(tmp_path / "out.parquet", "wb") as f, pytest.raises(ValueError, match=what):
        join(f, [str(tmp_path / "p.parquet")])


def test_a_part_that_is_not_a_whole_parquet_file_is_refused(tmp_path: Path) -> None:
    from kafkalog.tools.parquet_join import join

    (tmp_path / "half.parquet").write_bytes(b"PAR1 half")
    with open(tmp_path / "out.parquet", "wb") as f, pytest.raises(ValueError, match="not a whole Parquet file"):
        join(f, [str(tmp_path / "half.parquet")])
