"""CPU of the data-loss check planning makes for each partition: ``PartitionFiles.gaps()``
(:func:`kafkalog.log.gaps.find_gaps`: the last segment's index claims, snapshot names,
checkpoints and the ``.log``'s end), in one process, over a planning set of many partition dirs.

    python bench/gaps.py /work/scale-data/plan100k-spark/planning-10000/log --repeat 3

The partitions are discovered once (not timed); then, with the garbage collector off, each repeat
checks every partition and reports CPU microseconds per partition (user + system: the check is
three opens, reads and closes, the rest Python), beside a floor that only opens, reads and closes
the same three files of each dir. Run it against two trees (``PYTHONPATH=<tree>/codec``), one after
the other and several times: on a shared machine only ratios within one session mean much.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import time


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", help="a data dir of many partition dirs (bench/spark.py's planning sets)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    from kafkalog.log.replicas import discover

    files = discover([args.path])
    was = gc.isenabled()
    gc.disable()
    try:
        _measure(files, args.repeat)
    finally:
        if was:
            gc.enable()


def _measure(files: list, repeat: int) -> None:
    def floor() -> None:
        for pf in files:
            for name, _size in pf.listing:
                if name.endswith((".index", ".timeindex", ".log")):
                    fd = os.open(os.path.join(pf.dir, name), os.O_RDONLY)
                    os.read(fd, 1 << 16)
                    os.close(fd)

    def check() -> None:
        for pf in files:
            pf.gaps()

    runs: dict[str, list[float]] = {"floor_us": [], "gaps_us": []}
    for _ in range(repeat):
        for key, fn in (("floor_us", floor), ("gaps_us", check)):
            cpu = time.process_time()
            fn()
            runs[key].append((time.process_time() - cpu) / len(files) * 1e6)
    print(json.dumps({"partitions": len(files), **{k: [round(v, 1) for v in vs] for k, vs in runs.items()},
                      "gaps_us_median": round(statistics.median(runs["gaps_us"]), 1), "load": round(os.getloadavg()[0], 1)}))


if __name__ == "__main__":
    main()
