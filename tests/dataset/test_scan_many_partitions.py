"""Planning a data dir of many partitions checks every one of them for lost offsets (SPEC §6.8),
however the listing is taken: a gap deep in the dir is reported as in a dir of one partition.

The damage and its offsets follow from Kafka's golden-0 (:func:`helpers.many_partitions`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kafkalog
from helpers import many_partitions
from kafkalog.errors import DataLossError

COUNT = 600
NO_LOG = 430
LOST_TAIL = 570


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return many_partitions(tmp_path_factory.mktemp("many") / "data", COUNT, no_log=NO_LOG, lost_tail=LOST_TAIL)


@pytest.mark.rule("R-LOSS-04")
def test_gaps_deep_in_many_partitions_fail_the_scan_before_any_read(many: Path) -> None:
    with pytest.raises(DataLossError) as info:
        kafkalog.scan(str(many), columns=["offset"])
    text = str(info.value)
    assert f"many-{NO_LOG}, offset 102: offsets 102 to 145 are in no .log" in text  # R-LOSS-01: the next segment starts at 146
    # R-LOSS-03: found by reading the last segment's .timeindex, which the listing did not size
    assert (f"many-{LOST_TAIL}: offset 264 is in no .log: the last segment 00000000000000000234.log ends at offset 264, "
            "and 00000000000000000234.timeindex has an entry for offset 264") in text
    assert [(g.directory.rsplit("/", 1)[-1], g.start, g.end) for g in info.value.gaps] == [
        (f"many-{NO_LOG}", 102, 146), (f"many-{LOST_TAIL}", 264, 265)]


def test_allowing_gaps_reads_every_other_offset_of_every_partition(many: Path) -> None:
    table = kafkalog.scan(str(many), columns=["partition", "offset"], allow_gaps=True).read_all()
    partition = table.column("partition").to_numpy()
    offset = table.column("offset").to_numpy()
    order = np.lexsort((offset, partition))
    partition, offset = partition[order], offset[order]

    def of(p: int) -> set[int]:
        lo, hi = np.searchsorted(partition, [p, p + 1])
        return set(offset[lo:hi].tolist())

    assert np.unique(partition).tolist() == list(range(COUNT))
    whole = of(0)
    assert of(NO_LOG) == whole - set(range(102, 146))
    assert of(LOST_TAIL) == whole - {264}
    undamaged = ~np.isin(partition, [NO_LOG, LOST_TAIL])
    rows = offset[undamaged].reshape(COUNT - 2, -1)  # raises unless every other partition has as many rows as partition 0
    assert (rows == np.array(sorted(whole))).all()


@pytest.mark.parametrize("enabled", [True, False])
def test_planning_leaves_the_garbage_collector_as_it_found_it(many: Path, enabled: bool) -> None:
    # planning holds the collector off (full collections over 100,000 partitions' objects cost more
    # than the planning), and gives it back as it was whether the planning ends or fails
    import gc

    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        with pytest.raises(DataLossError):
            kafkalog.scan(str(many), columns=["offset"])
        assert gc.isenabled() is enabled
        kafkalog.scan(str(many), columns=["offset"], allow_gaps=True)
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()
