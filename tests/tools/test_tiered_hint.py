"""A folder of Aiven's tiered-storage objects given as a PATH (without ``--tiered``): ``cat``,
``info``, ``export`` and ``kafkalog.scan`` say it looks like tiered storage and name the prefix to
give ``--tiered``, which then reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import GOLDEN
from kafkalog.errors import LogNotFoundError
from kafkalog.tools.cli import main

AIVEN = GOLDEN / "tiered" / "aiven"


@pytest.mark.parametrize(("given", "prefix"), [("plain", "plain"), ("plain/tiered/golden-AAAAAAAAAAAAAAAAAAAAAQ/0", "plain/tiered")])
def test_a_tiered_storage_folder_gets_the_tiered_hint(given: str, prefix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """cat, info and export of a folder of Aiven's objects name the --tiered prefix to give, and
    that prefix reads; kafkalog.scan says the same."""
    import kafkalog

    path, hinted = str(AIVEN / given), str(AIVEN / prefix)
    hint = f"(this looks like tiered storage written by Aiven's plug-in: add --tiered {hinted};"
    for command in (["cat", path], ["info", path], ["export", path, "-o", str(tmp_path / "out")]):
        assert main(command) == 3
        err = capsys.readouterr().err
        assert "no Kafka partition directories" in err and hint in err, err
    with pytest.raises(LogNotFoundError, match="tiered storage written by Aiven's plug-in"):
        kafkalog.scan(path)
    assert main(["cat", "--tiered", hinted, "-c", "1", "-f", "%o\\n"]) == 0
    assert capsys.readouterr().out == "0\n"


def test_no_hint_for_a_folder_without_tiered_objects(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "notes.txt").write_text("not Kafka")
    assert main(["cat", str(tmp_path)]) == 3
    err = capsys.readouterr().err
    assert "no Kafka partition directories" in err and "tiered" not in err
