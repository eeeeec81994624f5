"""A deliberately wrong dumper for tests/tools/test_corpus.py: kafkalog's canonical JSON with known bugs.

Usage: python tests/wrong_dumper.py BUG[,BUG...] PATH [--private-key ID=FILE]...
(the conformance runner adds a case's private keys at the end of the command, as kafkalog dump takes them)
Bugs: drop-headers (every record's headers printed as []), swap-ts-magic1 (CreateTime and
LogAppendTime swapped on magic 1 entries), accept-bad-crc (isValid always true), exit-zero (exit
status 0 even when a file could not be read).
"""

from __future__ import annotations

import io
import sys

from kafkalog.format.tiered_aiven import read_private_keys
from kafkalog.tools.canonical import dumps
from kafkalog.tools.dump import DumpOptions, dump

BUGS = {"drop-headers", "swap-ts-magic1", "accept-bad-crc", "exit-zero"}
_SWAP = {"CreateTime": "LogAppendTime", "LogAppendTime": "CreateTime"}


def _break(obj: dict, bugs: set[str]) -> dict:
    if "drop-headers" in bugs and obj["type"] == "record":
        obj["headers"] = []
    if "swap-ts-magic1" in bugs and obj["type"] == "batch" and obj["magic"] == 1:
        obj["timestampType"] = _SWAP.get(obj["timestampType"], obj["timestampType"])
    if "accept-bad-crc" in bugs and "isValid" in obj:
        obj["isValid"] = True
    return obj


def main(argv: list[str]) -> int:
    import json

    bugs = set(argv[0].split(","))
    assert bugs <= BUGS, bugs - BUGS
    out, err = io.StringIO(), io.StringIO()
    paths, keys = argv[1:], []
    while "--private-key" in paths:
        at = paths.index("--private-key")
        keys.append(paths[at + 1])
        del paths[at : at + 2]
    result = dump(paths, DumpOptions(fmt="json", keys=read_private_keys(keys) if keys else None), out, err)
    for line in out.getvalue().splitlines():
        sys.stdout.write(dumps(_break(json.loads(line), bugs)) + "\n")
    sys.stderr.write(err.getvalue())
    return 0 if "exit-zero" in bugs or not result.errors else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
