"""Writes compress.in: the inputs JdkOracle.java's ``lz4`` and ``snappy-write`` modes compress
(README.md in this folder). Run once; the table it wrote is committed, with Java's answers.

Each input aims at one part of the two compressors: the payloads of Kafka's own batches (golden/kafka/
records), every length around the ends where no match may start (lz4's last 12 bytes, snappy's last
15), long copies (split into pieces), offsets past 2047 (snappy's 3-byte copies), literal lengths
around the 1-byte and 2-byte length forms, incompressible data (the skip heuristics), many distinct
4-byte strings (hash collisions) and an input over one lz4 block (64 KiB), two snappy-java chunks
(32 KiB) and one snappy fragment (64 KiB).
"""

from __future__ import annotations

import random
from pathlib import Path

from kafkalog import Codec, LogReader
from kafkalog.format.compression import decompress

HERE = Path(__file__).resolve().parent


def _text(rnd: random.Random, n: int, words: int = 300, noise: float = 0.2) -> bytes:
    vocab = [bytes(rnd.choice(b"abcdefghij") for _ in range(rnd.randint(2, 9))) for _ in range(words)]
    out = bytearray()
    while len(out) < n:
        r = rnd.random()
        if r < 0.7:
            out += rnd.choice(vocab) + b" "
        elif r < 0.7 + noise:
            out += rnd.randbytes(rnd.randint(1, 6))
        else:
            out += b'{"k": %d, "v": "%s"}' % (rnd.randint(0, 10**6), rnd.choice(vocab))
    return bytes(out[:n])


def inputs() -> list[bytes]:
    rnd = random.Random(26)
    out: list[bytes] = []
    for folder in sorted((HERE.parents[2] / "golden" / "kafka" / "records").iterdir()):
        with LogReader(folder / "00000000000000000000.log") as r:
            for b in r.batches():
                if b.compression is not Codec.NONE:
                    raw = b.data[61:] if b.magic == 2 else b.msg.value
                    out.append(decompress(b.compression, raw, magic=b.magic))
    for n in range(21):  # every short length: all literals, or the first possible matches
        out.append(b"a" * n)
        out.append(bytes(range(n)))
    for n in (20, 26, 27, 28, 29, 40, 100, 383):  # a 4-byte match ending 8 to 15 bytes before the end
        for back in (16, 15, 14, 13, 12, 11, 10):
            if back < n - 4:
                u = bytearray(rnd.sample(range(256), 256) * 2)[:n]
                u[:4] = b"WXYZ"
                u[n - back : n - back + 4] = b"WXYZ"
                out.append(bytes(u))
    for n in (15, 16, 17, 31, 32, 33, 34, 47, 48, 49):  # around snappy's 15-byte margin and 16-byte first scan
        out.append((b"abcdefg" * 8)[:n])
        out.append(bytes(rnd.choice(b"ab") for _ in range(n)))
    out += [b"a" * 1000, b"ab" * 700, b"abc" * 2000, b"x" * 67, b"x" * 68, b"x" * 69, b"x" * 72, b"x" * 133]  # long copies
    block = rnd.randbytes(3000)
    out.append(block + block[:100] + rnd.randbytes(50) + block[1000:1400])  # offsets past 2047 and 2048
    for n in (59, 60, 61, 62, 255, 256, 257, 270, 271, 300):  # literal lengths (random: no matches)
        out.append(rnd.randbytes(n))
    out.append(rnd.randbytes(3000) + b"abcdabcdabcd" + rnd.randbytes(2000))  # skipping over incompressible data
    out.append(bytes(rnd.choice(b"0123456789abcdef") for _ in range(5000)))  # many distinct 4-byte strings
    out.append(_text(rnd, 6000, words=2000))
    out.append(_text(rnd, 70000, words=50, noise=0.01))  # two lz4 blocks, three snappy-java chunks, two snappy fragments
    return out


if __name__ == "__main__":
    with open(HERE / "compress.in", "w", encoding="ascii") as f:
        for data in inputs():
            f.write(data.hex() + "\n")
