"""The two block compressors behind Kafka's lz4 and snappy bytes, in plain Python (SPEC appendix A.3, A.4).

Kafka compresses with the JVM's libraries: lz4-java 1.8.0 and snappy-java 1.1.10.5, both over native
code (liblz4 1.9.3 through lz4-java's JNI binding, libsnappy 1.1.10). Their blocks are not what the
Python packages' compressors produce for the same input (the ``lz4`` package's fast block mode, the
Rust ``snap`` crate behind ``cramjam``), so a writer that wants Kafka's bytes must run the same
algorithms. Both are small and deterministic:

* :func:`lz4_block` is liblz4's default (fast) compressor, acceleration 1, in its mode for inputs
  shorter than 65,547 bytes (every Kafka block is at most 64 KiB): a greedy LZ4 parse over an
  8,192-entry hash table of 16-bit positions. lz4-java's pure-Java fallback, used only where its JNI
  library does not load, differs from it near the end of some inputs.
* :func:`snappy_raw` is libsnappy 1.1.10's ``RawCompress`` (what snappy-java's ``Snappy.compress``
  calls) as built without a CRC32 instruction for the hash: the length varint, then each 64 KiB
  fragment compressed with a fresh hash table sized by the fragment.

These are the reference implementations; :mod:`kafkalog.fast` has compiled twins that must give the
same bytes (tests/format/test_compressors.py holds both to the output of lz4-java and snappy-java).
"""

from __future__ import annotations

__all__ = ["LZ4_64K_LIMIT", "lz4_block", "snappy_raw"]

# ------------------------------------------------------------------------------ lz4 (lz4-java)
#: liblz4 runs its 64 KiB mode below this input size; Kafka's blocks are all below it.
LZ4_64K_LIMIT = 65536 + 11
_LZ4_MIN_MATCH = 4
_LZ4_LAST_LITERALS = 5  # the last 5 bytes are always literals
_LZ4_MF_LIMIT = 12  # no match starts in the last 12 bytes
_LZ4_SKIP_STRENGTH = 6  # after 64 misses the search step grows by one
_LZ4_HASH_SHIFT = 32 - 13  # 2^13 table entries
_LZ4_PRIME = 2654435761  # -1640531535 as an unsigned 32-bit int


def _lz4_len(out: bytearray, n: int) -> None:
    """The length continuation bytes: 255 while at least 255 remains, then the rest."""
    while n >= 255:
        out.append(255)
        n -= 255
    out.append(n)


def lz4_block(src: bytes) -> bytes:
    """One raw LZ4 block of ``src`` exactly as lz4-java 1.8.0's fast compressor writes it (R-LZ4-07).

    Only inputs shorter than :data:`LZ4_64K_LIMIT` (lz4-java's other variant is not needed by Kafka)."""
    n = len(src)
    if n >= LZ4_64K_LIMIT:
        raise ValueError(f"lz4 block input of {n} bytes is not below {LZ4_64K_LIMIT}")
    out = bytearray()
    anchor = 0
    if n >= _LZ4_MF_LIMIT + 1:
        mv = memoryview(src)
        ints = [int.from_bytes(mv[i : i + 4], "little") for i in range(n - 3)]  # the 4 bytes at each position
        table = [0] * (1 << 13)
        src_limit = n - _LZ4_LAST_LITERALS
        mf_limit = n - _LZ4_MF_LIMIT
        s = 1
        while True:  # one iteration: a literal run, then one or more matches
            forward = s
            step = 1
            attempts = 1 << _LZ4_SKIP_STRENGTH
            while True:  # find a 4-byte match, the step growing with the misses
                s = forward
                forward += step
                step = attempts >> _LZ4_SKIP_STRENGTH
                attempts += 1
                if forward > mf_limit + 1:  # so the last position tried is mf_limit itself
                    break
                h = (ints[s] * _LZ4_PRIME & 0xFFFFFFFF) >> _LZ4_HASH_SHIFT
                ref = table[h]
                table[h] = s
                if ints[ref] == ints[s]:
                    break
            if forward > mf_limit + 1:
                break
            while ref > 0 and s > anchor and src[ref - 1] == src[s - 1]:  # extend backwards
                ref -= 1
                s -= 1
            run = s - anchor
            token = len(out)
            if run >= 15:
                out.append(0xF0)
                _lz4_len(out, run - 15)
            else:
                out.append(run << 4)
            out += mv[anchor:s]
            while True:  # one match; then maybe another one right after it
                offset = s - ref
                out += offset.to_bytes(2, "little")
                s += _LZ4_MIN_MATCH
                ref += _LZ4_MIN_MATCH
                length = 0
                while s + length < src_limit and src[ref + length] == src[s + length]:
                    length += 1
                s += length
                if length >= 15:
                    out[token] |= 15
                    _lz4_len(out, length - 15)
                else:
                    out[token] |= length
                if s > mf_limit:
                    anchor = s
                    break
                table[(ints[s - 2] * _LZ4_PRIME & 0xFFFFFFFF) >> _LZ4_HASH_SHIFT] = s - 2
                h = (ints[s] * _LZ4_PRIME & 0xFFFFFFFF) >> _LZ4_HASH_SHIFT
                ref = table[h]
                table[h] = s
                if ints[s] != ints[ref]:
                    break
                token = len(out)
                out.append(0)
            if s > mf_limit:
                break
            anchor = s
            s += 1
    run = n - anchor
    if run >= 15:
        out.append(0xF0)
        _lz4_len(out, run - 15)
    else:
        out.append(run << 4)
    out += src[anchor:]
    return bytes(out)


# -------------------------------------------------------------------- snappy (libsnappy 1.1.10)
_SNAPPY_FRAGMENT = 1 << 16  # compressed independently, each with a fresh table
_SNAPPY_MAGIC = 0x1E35A7BD
_SNAPPY_INPUT_MARGIN = 15  # no match is looked for in the last 15 bytes of a fragment


def _snappy_table_bits(size: int) -> int:
    """log2 of the hash table's entries for a fragment: the smallest power of two at least
    ``size``, kept within 2^8 .. 2^14."""
    if size > 1 << 14:
        return 14
    if size < 1 << 8:
        return 8
    return (size - 1).bit_length()


def _snappy_literal(out: bytearray, lit: bytes | memoryview) -> None:
    n = len(lit) - 1
    if n < 60:
        out.append(n << 2)
    else:
        count = (n.bit_length() - 1 >> 3) + 1  # bytes of the length
        out.append(59 + count << 2)
        out += n.to_bytes(count, "little")
    out += lit


def _snappy_copy_upto64(out: bytearray, offset: int, length: int) -> None:
    if length < 12 and offset < 2048:  # 2 bytes: length 4..11, an 11-bit offset
        out.append(1 | length - 4 << 2 | offset >> 8 << 5)
        out.append(offset & 0xFF)
    else:  # 3 bytes: length 1..64, a 16-bit offset
        out.append(2 | length - 1 << 2)
        out += offset.to_bytes(2, "little")


def _snappy_copy(out: bytearray, offset: int, length: int) -> None:
    while length >= 68:  # pieces of 64, leaving at least 4
        _snappy_copy_upto64(out, offset, 64)
        length -= 64
    if length > 64:
        _snappy_copy_upto64(out, offset, 60)
        length -= 60
    _snappy_copy_upto64(out, offset, length)


def _snappy_fragment(out: bytearray, frag: memoryview) -> None:
    """Compress one fragment (at most 64 KiB) as libsnappy 1.1.10's CompressFragment does."""
    n = len(frag)
    ip = 0
    if n >= _SNAPPY_INPUT_MARGIN:
        ints = [int.from_bytes(frag[i : i + 4], "little") for i in range(n - 3)]
        shift = 31 - 14 + 1  # libsnappy keeps the product's high 15 bits, drops the lowest, masks to the table
        mask = (1 << _snappy_table_bits(n)) - 1
        table = [0] * (mask + 1)
        ip_limit = n - _SNAPPY_INPUT_MARGIN
        while True:  # one iteration: a literal, then one or more copies
            next_emit = ip
            ip += 1
            skip = 32
            found = False
            if ip_limit - ip >= 16:  # the first 16 positions are each tried
                for i in range(16):
                    h = (ints[ip + i] * _SNAPPY_MAGIC & 0xFFFFFFFF) >> shift & mask
                    candidate = table[h]
                    table[h] = ip + i
                    if ints[candidate] == ints[ip + i]:
                        ip += i
                        found = True
                        break
                else:
                    ip += 16
                    skip += 16
            if not found:
                while True:  # then every (skip / 32)th position, skip growing with each miss
                    h = (ints[ip] * _SNAPPY_MAGIC & 0xFFFFFFFF) >> shift & mask
                    step = skip >> 5
                    skip += step
                    next_ip = ip + step
                    if next_ip > ip_limit:
                        ip = next_emit
                        break
                    candidate = table[h]
                    table[h] = ip
                    if ints[candidate] == ints[ip]:
                        found = True
                        break
                    ip = next_ip
                if not found:
                    break  # the rest is one literal
            _snappy_literal(out, frag[next_emit:ip])
            while True:  # copies, as long as the next position matches too
                base = ip
                length = 4
                while ip + length < n and frag[candidate + length] == frag[ip + length]:
                    length += 1
                ip += length
                _snappy_copy(out, base - candidate, length)
                if ip >= ip_limit:
                    break
                table[(ints[ip - 1] * _SNAPPY_MAGIC & 0xFFFFFFFF) >> shift & mask] = ip - 1
                h = (ints[ip] * _SNAPPY_MAGIC & 0xFFFFFFFF) >> shift & mask
                candidate = table[h]
                table[h] = ip
                if ints[candidate] != ints[ip]:
                    break
            if ip >= ip_limit:
                break
    if ip < n:
        _snappy_literal(out, frag[ip:])


def snappy_raw(src: bytes) -> bytes:
    """Raw snappy of ``src`` exactly as libsnappy 1.1.10 compresses it (snappy-java 1.1.10.5's
    ``Snappy.compress``; R-SNAPPY-05): the uncompressed length as a varint, then the fragments."""
    n = len(src)
    out = bytearray()
    v = n
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    mv = memoryview(src)
    for i in range(0, n, _SNAPPY_FRAGMENT):
        _snappy_fragment(out, mv[i : i + _SNAPPY_FRAGMENT])
    return bytes(out)
