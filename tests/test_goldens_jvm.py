"""golden/kafka-<release>/ and the decoders' message data (codec/kafkalog/internal/data/
messages-<X.Y>.json) are exactly what golden/jvm/generate.sh writes with that release's jars.

The normal suite only checks that every release in golden/jvm/releases.txt has its committed
goldens; the regeneration (Maven, Java 17, Maven Central) is marked ``jvm`` and skipped, with the
reason, where Maven cannot resolve a release's jars.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
GENERATOR = REPO / "golden" / "jvm" / "generate.sh"
DATA = REPO / "codec" / "kafkalog" / "internal" / "data"
RELEASES = [
    line.strip()
    for line in (REPO / "golden" / "jvm" / "releases.txt").read_text(encoding="utf-8").splitlines()
    if line.strip() and not line.startswith("#")
]
TOPICS = ["consumer_offsets", "share_group_state", "transaction_state", "cluster_metadata", "remote_log_metadata"]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("release", RELEASES)
def test_every_release_has_its_goldens(release: str) -> None:
    """Each release has a log per internal topic and its DumpLogSegments output, decoded and not."""
    root = REPO / "golden" / f"kafka-{release}"
    for topic in TOPICS:
        log = root / f"__{topic}-0" / "00000000000000000000.log"
        assert log.stat().st_size > 0, log
        for kind in ("decoded", "deep"):
            text = (root / "dump" / f"{topic}-{kind}.txt").read_text(encoding="utf-8")
            assert text.startswith(f"Dumping __{topic}-0/00000000000000000000.log\n"), (release, topic, kind)


def _generate(*args: str) -> None:
    """Runs ``golden/jvm/generate.sh args...``; skips (with the reason) where it cannot reach Kafka's jars."""
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not on PATH: golden/jvm/generate.sh needs Java 17 and Maven")
    proc = subprocess.run([str(GENERATOR), *args], capture_output=True, text=True, timeout=1800)
    if proc.returncode == 3:
        pytest.skip(f"Maven cannot resolve Kafka {args[-1]}'s jars (is Maven Central reachable?): {proc.stderr[-500:]}")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.jvm
@pytest.mark.parametrize("release", RELEASES)
def test_regeneration_is_byte_identical(release: str, tmp_path: Path) -> None:
    """``golden/jvm/generate.sh`` run again writes the committed files, byte for byte, and no others."""
    _generate(str(tmp_path), release)
    made = _tree(tmp_path / f"kafka-{release}")
    committed = _tree(REPO / "golden" / f"kafka-{release}")
    assert sorted(made) == sorted(committed)
    assert [name for name in made if made[name] != committed[name]] == []


@pytest.mark.parametrize("release", RELEASES)
def test_every_release_has_its_message_data(release: str) -> None:
    """Each release line's data file is the one generated from the release in releases.txt."""
    line = release.rsplit(".", 1)[0]
    doc = json.loads((DATA / f"messages-{line}.json").read_text(encoding="utf-8"))
    assert doc["release"] == release
    assert sorted(p.name for p in DATA.glob("messages-*.json")) == sorted(
        f"messages-{r.rsplit('.', 1)[0]}.json" for r in RELEASES
    )


@pytest.mark.jvm
@pytest.mark.parametrize("release", RELEASES)
def test_message_data_regeneration_is_byte_identical(release: str, tmp_path: Path) -> None:
    """``generate.sh --schemas`` (``./run goldens``) writes the committed message data, byte for byte."""
    _generate("--schemas", str(tmp_path), release)
    name = f"messages-{release.rsplit('.', 1)[0]}.json"
    assert [p.name for p in tmp_path.iterdir()] == [name]
    assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes()
