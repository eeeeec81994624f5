"""The source's planning of a data dir of many partitions checks each for lost offsets (SPEC §6.8),
as kafkalog's other readers do (``tests/dataset/test_scan_many_partitions.py``): a ``.log`` missing
deep in the dir fails the planning, naming the partition and the offsets Kafka's segment names give."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import many_partitions
from kafkalog_spark import DataLossError
from kafkalog_spark.planning import SlicePack
from kafkalog_spark.source import KafkaLogReader, source_schema

COUNT = 1500
NO_LOG = 1230


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return many_partitions(tmp_path_factory.mktemp("many") / "data", COUNT, no_log=NO_LOG)


@pytest.mark.rule("R-LOSS-04")
def test_a_missing_log_deep_in_many_partitions_fails_the_planning(many: Path) -> None:
    with pytest.raises(DataLossError, match=f"many-{NO_LOG}.*offsets 102 to 145 are in no .log"):
        KafkaLogReader({"path": str(many)}, source_schema()).partitions()


def test_without_fail_on_data_loss_every_partition_is_planned_but_the_lost_offsets(many: Path) -> None:
    packs = KafkaLogReader({"path": str(many), "failOnDataLoss": "false"}, source_schema()).partitions()
    slices = [sl for p in packs if isinstance(p, SlicePack) for sl in p.slices]
    assert {sl.partition for sl in slices} == set(range(COUNT))
    lossy = sorted((sl.lo, sl.log.rsplit("/", 1)[-1]) for sl in slices if sl.partition == NO_LOG)
    assert [name for _, name in lossy] == [f"{b:020d}.log" for b in (0, 51, 146, 190, 234)]


@pytest.mark.parametrize("enabled", [True, False])
def test_planning_leaves_the_garbage_collector_as_it_found_it(many: Path, enabled: bool) -> None:
    # as kafkalog.scan's planning (tests/dataset/test_scan_many_partitions.py)
    import gc

    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        with pytest.raises(DataLossError):
            KafkaLogReader({"path": str(many)}, source_schema()).partitions()
        assert gc.isenabled() is enabled
        KafkaLogReader({"path": str(many), "failOnDataLoss": "false"}, source_schema()).partitions()
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()
