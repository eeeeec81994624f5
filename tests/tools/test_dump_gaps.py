"""``kafkalog dump`` of partition directories that lost offsets (R-LOSS-04): it fails before printing,
naming the partition and the offsets, unless ``--allow-gaps``, which dumps the rest with a warning.
The lost offsets follow from the names Kafka gave golden-0's segments (0, 51, 102, 146, 190, 234)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import GOLDEN, need_shared
from kafkalog.errors import DataLossError
from kafkalog.tools.dump import DumpOptions, dump


@pytest.fixture
def lossy(tmp_path: Path) -> Path:
    d = tmp_path / "data" / "golden-0"
    shutil.copytree(GOLDEN / "kafka" / "logdir" / "golden-0", d)
    (d / "00000000000000000102.log").unlink()
    return d


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkalog", "dump", *args], capture_output=True, text=True, check=False)


@pytest.mark.rule("R-LOSS-04")
@pytest.mark.parametrize("fmt", [[], ["--json"]], ids=["text", "json"])
def test_dump_fails_naming_partition_and_offsets(lossy: Path, fmt: list[str]) -> None:
    proc = _cli(*fmt, str(lossy.parent))
    assert proc.returncode == 1 and proc.stdout == ""
    assert f"{lossy}, offset 102: offsets 102 to 145 are in no .log" in proc.stderr and "--allow-gaps" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.rule("R-LOSS-04")
def test_allow_gaps_dumps_the_rest_with_a_warning(lossy: Path) -> None:
    proc = _cli("--json", "--allow-gaps", str(lossy))
    assert proc.returncode == 0, proc.stderr
    assert f"warning: {lossy}: offsets 102 to 145 are in no .log" in proc.stderr
    offsets = {o["offset"] for o in map(json.loads, proc.stdout.splitlines()) if o["type"] == "record"}
    assert min(offsets) == 0 and max(offsets) == 264 and not offsets & set(range(102, 146))


def test_the_python_api_raises_or_reports(lossy: Path) -> None:
    with pytest.raises(DataLossError) as info:
        dump([str(lossy)], DumpOptions(fmt="json"), io.StringIO(), io.StringIO())
    assert (info.value.file, info.value.offset) == (str(lossy), 102)
    err = io.StringIO()
    result = dump([str(lossy)], DumpOptions(fmt="json", allow_gaps=True), io.StringIO(), err)
    assert [(g.start, g.end) for g in result.gaps] == [(102, 146)] and "warning:" in err.getvalue()


def test_a_single_file_is_dumped_without_judging_its_directory(lossy: Path) -> None:
    proc = _cli(str(lossy / "00000000000000000102.index"))
    assert proc.returncode == 0, proc.stderr


def test_the_real_backup_fails_on_its_two_lost_partitions() -> None:
    data = need_shared("golden-real/cp760-flink-on-prem/data")
    proc = _cli("--json", str(data))
    assert proc.returncode == 1 and proc.stdout == ""
    assert "customers-0, offset 0: offsets 0 to 17080 are in no .log" in proc.stderr
    assert "products-0: offsets 0 to 17096 are in no .log" in proc.stderr
    proc = _cli(str(data / "orders-0"))
    assert proc.returncode == 0 and proc.stdout.startswith("Dumping ")
