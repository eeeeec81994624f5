"""The objects Aiven's tiered-storage plug-in writes for one segment (SPEC §10), read back.

Aiven-Open/tiered-storage-for-apache-kafka stores each segment a broker tiers as three objects,
``<prefix><topic>-<topic id>/<partition>/<20-digit start offset>-<segment id>.<suffix>``:

* ``.log``: the segment cut into chunks of ``chunk.size`` bytes, each chunk zstd-compressed (one
  frame) and then AES-256-GCM encrypted (12-byte IV, ciphertext, 16-byte tag) when those options
  are on;
* ``.indexes``: offset index, time index, producer snapshot, leader-epoch checkpoint text and
  transaction index, concatenated (each encrypted on its own when encryption is on, never compressed);
* ``.rsm-manifest``: JSON naming the chunk sizes (a ``fixed`` or ``variable`` chunk index), the
  position of each index, and the segment's data key wrapped by RSA-OAEP with SHA3-512.

:class:`RemoteSegment` reads them through an :class:`ObjectStore` (local files or any fsspec URL)
with ranged reads, and presents the ``.log`` as a seekable file (:meth:`RemoteSegment.open_log`)
that :class:`~kafkalog.format.records.stream.LogReader` reads as it reads a local segment: a
batch that spans chunks comes out whole, and only the chunks holding the bytes asked for are fetched.

The data key is unwrapped with pycryptodome (the ``tiered`` extra): the plug-in wraps it as
``RSA/NONE/OAEPWithSHA3-512AndMGF1Padding`` (Bouncy Castle), SHA3-512 for both the OAEP digest and
MGF1, a combination the ``cryptography`` package refuses (its OpenSSL binding accepts only SHA-1
and SHA-2 for MGF1 in OAEP) while pycryptodome's ``PKCS1_OAEP`` takes any hash for both.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kafkalog.errors import (
    CorruptChunkError,
    DataKeyError,
    ManifestError,
    RemoteObjectMissingError,
    TruncatedObjectError,
)
from kafkalog.format.files import RemoteFile, is_url, url_filesystem
from kafkalog.format.index import OffsetIndex, TimeIndex

__all__ = [
    "INDEX_PARTS", "Chunk", "Keyring", "LocalStore", "Manifest", "ObjectStore", "RemoteSegment", "UrlStore",
    "open_store", "parse_manifest", "parse_object_key", "read_private_keys",
]

#: the parts of ``.indexes`` in the order the plug-in concatenates them, by their manifest names
INDEX_PARTS = ("offset", "timestamp", "producerSnapshot", "leaderEpoch", "transaction")
#: AES-GCM as the plug-in uses it (AesEncryptionProvider, SegmentEncryptionMetadataV1)
IV_SIZE = 12
TAG_SIZE = 16
#: the sanity bound the plug-in puts on the decoded chunk-size list (TransformedChunksDeserializer)
MAX_CHUNK_LIST_BYTES = 10 * 1024 * 1024

#: ``<topic>-<22-char topic id>/<partition>/<20-digit start offset>-<22-char segment id>.<suffix>``
_KEY = re.compile(
    r"(?:^|/)(?P<topic>[^/]+)-(?P<topic_id>[A-Za-z0-9_-]{22})/(?P<partition>\d+)/"
    r"(?P<offset>\d{20})-(?P<segment_id>[A-Za-z0-9_-]{22})\.(?P<suffix>log|indexes|rsm-manifest)$"
)


@dataclass(frozen=True)
class ObjectKey:
    """What an object's key says: its topic, partition, segment and which of the three objects it is."""

    topic: str
    topic_id: str
    partition: int
    start_offset: int
    segment_id: str
    suffix: str
    main: str  # the key without ``.<suffix>``


def parse_object_key(key: str) -> ObjectKey | None:
    """The fields of one of the plug-in's object keys (ObjectKeyFactory.mainPath), or None."""
    m = _KEY.search(key)
    if m is None:
        return None
    return ObjectKey(m["topic"], m["topic_id"], int(m["partition"]), int(m["offset"]), m["segment_id"], m["suffix"],
                     key[: -len(m["suffix"]) - 1])


# ------------------------------------------------------------------------------- object stores
class ObjectStore(Protocol):
    """Where the objects are: ranged reads and a listing. Reading never writes."""

    def read(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        """Bytes ``[start, end)`` of object ``key`` (to its end when ``end`` is None); fewer when
        the object is shorter. A missing object raises FileNotFoundError."""
        ...

    def list(self, prefix: str = "") -> list[tuple[str, int]]:
        """(key, size) of every object under ``prefix``, sorted by key."""
        ...

    def display(self, key: str) -> str:
        """The key as the user would name it (a path or URL), for messages."""
        ...


class LocalStore:
    """Objects as files under a directory (the plug-in's FileSystemStorage makes the same keys as S3)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.fspath(root)

    def _path(self, key: str) -> str:
        return os.path.join(self.root, *key.split("/")) if key else self.root

    def read(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        """Bytes of a file, opened read-only."""
        with open(self._path(key), "rb") as f:
            f.seek(start)
            return f.read() if end is None else f.read(max(0, end - start))

    def list(self, prefix: str = "") -> list[tuple[str, int]]:
        """Every file under ``prefix`` with its size."""
        out = []
        top = self._path(prefix)
        if os.path.isfile(top):
            return [(prefix, os.path.getsize(top))]
        for dirpath, _dirs, names in os.walk(top):
            for n in names:
                p = os.path.join(dirpath, n)
                out.append((os.path.relpath(p, self.root).replace(os.sep, "/"), os.path.getsize(p)))
        return sorted(out)

    def display(self, key: str) -> str:
        """The file's path."""
        return self._path(key)


class UrlStore:
    """Objects under a URL (``s3://bucket/prefix``, any fsspec protocol): ranged GETs, one listing."""

    def __init__(self, url: str, fs: Any = None) -> None:
        self.url = url.rstrip("/")
        if fs is None:
            fs, base = url_filesystem(self.url)
        else:
            base = fs._strip_protocol(self.url)
        self.fs = fs
        self.base = base.rstrip("/")

    def _path(self, key: str) -> str:
        return f"{self.base}/{key}" if key else self.base

    def read(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        """A ranged read of the object (one request)."""
        path = self._path(key)
        if end is None:
            return self.fs.cat_file(path, start=start or None)
        if end <= start:
            return b""
        return self.fs.cat_file(path, start=start, end=end)

    def list(self, prefix: str = "") -> list[tuple[str, int]]:
        """One recursive listing under ``prefix``."""
        top = self._path(prefix)
        try:
            found = self.fs.find(top, detail=True)
        except FileNotFoundError:
            return []
        n = len(self.base) + 1
        return sorted((p[n:], int(info.get("size") or 0)) for p, info in found.items() if info.get("type", "file") == "file")

    def display(self, key: str) -> str:
        """The object's URL."""
        return f"{self.url}/{key}" if key else self.url


def open_store(root: str | os.PathLike[str]) -> LocalStore | UrlStore:
    """The store holding the plug-in's objects under ``root`` (a directory or a URL)."""
    return UrlStore(root) if is_url(root) else LocalStore(root)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------ keys
class Keyring:
    """Private RSA keys by the plug-in's key-pair id (``encryption.key.pairs.<id>.private.key.file``).

    Holds PEM text; ``repr`` never shows it."""

    def __init__(self, pems: Mapping[str, bytes] | None = None) -> None:
        self._pems = dict(pems or {})
        self._keys: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"Keyring(ids={sorted(self._pems)})"

    def __bool__(self) -> bool:
        return bool(self._pems)

    def __getstate__(self) -> dict[str, Any]:
        return {"_pems": self._pems, "_keys": {}}  # parsed keys are made again where the keyring is unpickled

    @property
    def ids(self) -> list[str]:
        """The key ids held."""
        return sorted(self._pems)

    def pems(self) -> dict[str, bytes]:
        """The PEM text by id (to ship to workers)."""
        return dict(self._pems)

    def _key(self, key_id: str, where: str) -> Any:
        if key_id not in self._keys:
            if key_id not in self._pems:
                given = ", ".join(self.ids) or "none"
                raise DataKeyError(
                    f"the data key is wrapped with key pair {key_id!r}, and no private key has that id "
                    f"(given: {given}; pass --private-key {key_id}=FILE)", file=where)
            try:
                from Crypto.PublicKey import RSA
            except ImportError:
                raise DataKeyError("decrypting needs pycryptodome (pip install 'kafkalog[tiered]')", file=where) from None
            try:
                self._keys[key_id] = RSA.import_key(self._pems[key_id])
            except (ValueError, IndexError, TypeError):
                raise DataKeyError(f"the private key given for {key_id!r} is not an RSA private key in PEM or DER form",
                                   file=where) from None
            if not self._keys[key_id].has_private():
                raise DataKeyError(f"the key given for {key_id!r} is a public key; the private key is needed", file=where)
        return self._keys[key_id]

    def unwrap(self, key_id: str, wrapped: bytes, where: str) -> bytes:
        """The AES data key: ``wrapped`` decrypted with RSA-OAEP, SHA3-512 for digest and MGF1
        (RsaEncryptionProvider)."""
        key = self._key(key_id, where)
        from Crypto.Cipher import PKCS1_OAEP
        from Crypto.Hash import SHA3_512

        cipher = PKCS1_OAEP.new(key, hashAlgo=SHA3_512)  # MGF1 defaults to the same hash: SHA3-512
        try:
            data_key = cipher.decrypt(wrapped)
        except ValueError:
            raise DataKeyError(f"the private key given for {key_id!r} does not unwrap this segment's data key "
                               "(a different key pair, or a corrupted manifest)", file=where) from None
        if len(data_key) not in (16, 24, 32):
            raise DataKeyError(f"the unwrapped data key is {len(data_key)} bytes, not an AES key", file=where)
        return data_key


def read_private_keys(specs: list[str] | Mapping[str, str]) -> Keyring:
    """A keyring from ``ID=FILE`` strings (the CLI's ``--private-key``) or an ``{id: file}`` mapping.
    Raises ValueError for a malformed spec and OSError for an unreadable file."""
    pairs: list[tuple[str, str]] = []
    if isinstance(specs, Mapping):
        pairs = list(specs.items())
    else:
        for s in specs:
            key_id, sep, path = s.partition("=")
            if not sep or not key_id or not path:
                raise ValueError(f"--private-key takes ID=FILE (the plug-in's key pair id and a PEM file), not {s!r}")
            pairs.append((key_id, path))
    pems = {}
    for key_id, path in pairs:
        with open(path, "rb") as f:
            pems[key_id] = f.read()
    return Keyring(pems)


# -------------------------------------------------------------------------------- manifest
@dataclass(frozen=True)
class Chunk:
    """One chunk of the ``.log``: where its bytes are in the segment and in the object."""

    index: int
    original_position: int
    original_size: int
    transformed_position: int
    transformed_size: int


@dataclass(frozen=True)
class Encryption:
    """The manifest's ``encryption``: the wrapped data key (by key-pair id) and the GCM AAD."""

    key_id: str
    wrapped_key: bytes
    aad: bytes


@dataclass(frozen=True)
class Manifest:
    """A parsed ``.rsm-manifest`` (SegmentManifestV1)."""

    version: str
    chunk_index_type: str
    original_chunk_size: int
    original_file_size: int
    chunks: tuple[Chunk, ...]
    indexes: dict[str, tuple[int, int]]  # part -> (position, size) in ``.indexes``; absent parts left out
    compression: bool
    encryption: Encryption | None
    start_offset: int
    end_offset: int
    segment_id: str
    topic: str
    partition: int
    topic_id: str
    metadata: dict[str, Any]  # remoteLogSegmentMetadata as written

    @property
    def transformed_size(self) -> int:
        """The size the ``.log`` object must have."""
        return sum(c.transformed_size for c in self.chunks)

    def chunks_for(self, start: int, end: int) -> list[Chunk]:
        """The chunks holding segment bytes ``[start, end)`` (AbstractChunkIndex.chunksForRange)."""
        if end <= start or not self.chunks:
            return []
        size = self.original_chunk_size
        first, last = start // size, (min(end, self.original_file_size) - 1) // size
        return list(self.chunks[first : last + 1])


def _field(obj: Any, name: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(obj, dict) or name not in obj:
        raise ManifestError(f"the manifest has no {name!r} field", file=where)
    v = obj[name]
    if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
        raise ManifestError(f"the manifest's {name!r} is {type(v).__name__} {v!r}, not {getattr(kind, '__name__', kind)}", file=where)
    return v


def _size(obj: Any, name: str, where: str, *, positive: bool = False) -> int:
    v = _field(obj, name, int, where)
    if v < (1 if positive else 0) or v > 0x7FFFFFFF:
        raise ManifestError(f"the manifest's {name!r} is {v}, outside the plug-in's int range", file=where)
    return v


def _chunk_sizes(text: str, where: str) -> list[int]:
    """The ``variable`` index's ``transformedChunks``: base64 of one zstd frame of ChunkSizesBinaryCodec
    bytes (count, then base, width and count-1 values above the base in that width, then the last
    value in full; all big-endian)."""
    import zstandard  # loaded where a tiered manifest is read, not by every verify (tests/test_startup.py)

    try:
        raw = base64.b64decode(text, validate=True)
        data = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    except (binascii.Error, ValueError, zstandard.ZstdError) as e:
        raise ManifestError(f"the manifest's transformedChunks is not base64 of a zstd frame: {e}", file=where) from None
    if len(data) > MAX_CHUNK_LIST_BYTES:
        raise ManifestError(f"the manifest's transformedChunks decodes to {len(data)} bytes, over the plug-in's bound", file=where)
    try:
        (count,) = struct.unpack_from(">i", data, 0)
        if count == 0:
            return []
        if count == 1:
            return [struct.unpack_from(">i", data, 4)[0]]
        base, width = struct.unpack_from(">ib", data, 4)
        if count < 0 or not 1 <= width <= 4 or len(data) != 9 + (count - 1) * width + 4:
            raise struct.error(f"count {count}, width {width}, {len(data)} bytes")
        pos = 9
        sizes = []
        for _ in range(count - 1):
            sizes.append(int.from_bytes(data[pos : pos + width], "big") + base)
            pos += width
        sizes.append(struct.unpack_from(">i", data, pos)[0])
    except struct.error as e:
        raise ManifestError(f"the manifest's chunk-size list is malformed: {e}", file=where) from None
    if any(s < 0 for s in sizes):
        raise ManifestError("the manifest's chunk-size list holds a negative size", file=where)
    return sizes


def parse_manifest(data: bytes, where: str = "<manifest>") -> Manifest:
    """Parse a ``.rsm-manifest``; a version other than "1" or a malformed field raises :class:`ManifestError`."""
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, ValueError) as e:
        raise ManifestError(f"the manifest is not JSON: {e}", file=where) from None
    if not isinstance(doc, dict):
        raise ManifestError("the manifest is not a JSON object", file=where)
    version = doc.get("version")
    if version != "1":
        raise ManifestError(f"manifest version {version!r} is unknown (this reader knows version \"1\", "
                            "the plug-in's SegmentManifestV1)", file=where)
    ci = _field(doc, "chunkIndex", dict, where)
    kind = ci.get("type")
    chunk_size = _size(ci, "originalChunkSize", where, positive=True)
    file_size = _size(ci, "originalFileSize", where)
    count = -(-file_size // chunk_size)
    if kind == "fixed":
        t_size = _size(ci, "transformedChunkSize", where)
        t_final = _size(ci, "finalTransformedChunkSize", where)
        sizes = [t_size] * (count - 1) + [t_final] if count else []
    elif kind == "variable":
        sizes = _chunk_sizes(_field(ci, "transformedChunks", str, where), where)
        if len(sizes) != count:
            raise ManifestError(f"the manifest lists {len(sizes)} chunk sizes for a {file_size}-byte segment cut in "
                                f"{chunk_size}-byte chunks ({count} chunks)", file=where)
    else:
        raise ManifestError(f"chunk index type {kind!r} is unknown (known: fixed, variable)", file=where)
    chunks = []
    opos = tpos = 0
    for i, ts in enumerate(sizes):
        osize = min(chunk_size, file_size - opos)
        chunks.append(Chunk(i, opos, osize, tpos, ts))
        opos += osize
        tpos += ts
    si = _field(doc, "segmentIndexes", dict, where)
    indexes: dict[str, tuple[int, int]] = {}
    for part in INDEX_PARTS:
        if part in si and si[part] is not None:
            indexes[part] = (_size(si[part], "position", where), _size(si[part], "size", where))
    compression = _field(doc, "compression", bool, where)
    enc = None
    if doc.get("encryption") is not None:
        e = _field(doc, "encryption", dict, where)
        key_id, sep, wrapped = _field(e, "dataKey", str, where).partition(":")
        try:
            if not sep or not key_id or ":" in wrapped:
                raise ValueError("not <key id>:<base64>")
            enc = Encryption(key_id, base64.b64decode(wrapped, validate=True), base64.b64decode(_field(e, "aad", str, where), validate=True))
        except (binascii.Error, ValueError) as err:
            raise ManifestError(f"the manifest's encryption.dataKey or aad is malformed: {err}", file=where) from None
    md = _field(doc, "remoteLogSegmentMetadata", dict, where)
    sid = _field(md, "remoteLogSegmentId", dict, where)
    tip = _field(sid, "topicIdPartition", dict, where)
    tp = _field(tip, "topicPartition", dict, where)
    return Manifest(
        version, kind, chunk_size, file_size, tuple(chunks), indexes, compression, enc,
        _field(md, "startOffset", int, where), _field(md, "endOffset", int, where), _field(sid, "id", str, where),
        _field(tp, "topic", str, where), _field(tp, "partition", int, where), _field(tip, "topicId", str, where), md,
    )


# ------------------------------------------------------------------------------- a segment
class RemoteSegment:
    """One tiered segment: its three objects in ``store`` under ``main`` (the key without suffix).

    The manifest is read on first use; the data key is unwrapped with ``keys`` when the segment is
    encrypted. ``fetched`` counts the bytes read from the store (manifest, ``.indexes``, chunks)."""

    def __init__(self, store: ObjectStore, main: str, keys: Keyring | None = None) -> None:
        self.store = store
        self.main = main
        self.keys = keys or Keyring()
        self._manifest: Manifest | None = None
        self._data_key: bytes | None = None
        self._indexes: bytes | None = None
        self.fetched = 0

    def key(self, suffix: str) -> str:
        """The key of one of the segment's objects."""
        return f"{self.main}.{suffix}"

    def name(self, suffix: str) -> str:
        """The path or URL of one of the segment's objects, for messages."""
        return self.store.display(self.key(suffix))

    def _read(self, suffix: str, start: int = 0, end: int | None = None) -> bytes:
        try:
            data = self.store.read(self.key(suffix), start, end)
        except FileNotFoundError:
            raise RemoteObjectMissingError(f"the segment's .{suffix} object is missing", file=self.name(suffix)) from None
        self.fetched += len(data)
        return data

    @property
    def manifest(self) -> Manifest:
        """The parsed ``.rsm-manifest``."""
        if self._manifest is None:
            self._manifest = parse_manifest(self._read("rsm-manifest"), self.name("rsm-manifest"))
        return self._manifest

    @property
    def base_offset(self) -> int:
        """The segment's first offset (``startOffset``)."""
        return self.manifest.start_offset

    @property
    def size(self) -> int:
        """The segment's size as the broker had it (``originalFileSize``)."""
        return self.manifest.original_file_size

    def _key_for_data(self) -> bytes:
        if self._data_key is None:
            enc = self.manifest.encryption
            assert enc is not None
            self._data_key = self.keys.unwrap(enc.key_id, enc.wrapped_key, self.name("rsm-manifest"))
        return self._data_key

    def _decrypt(self, data: bytes, where: str, position: int, what: str) -> bytes:
        enc = self.manifest.encryption
        assert enc is not None
        if len(data) < IV_SIZE + TAG_SIZE:
            raise CorruptChunkError(f"{what} is {len(data)} bytes, shorter than an AES-GCM IV and tag", file=where, position=position)
        from Crypto.Cipher import AES

        cipher = AES.new(self._key_for_data(), AES.MODE_GCM, nonce=data[:IV_SIZE], mac_len=TAG_SIZE)
        cipher.update(enc.aad)
        try:
            return cipher.decrypt_and_verify(data[IV_SIZE:-TAG_SIZE], data[-TAG_SIZE:])
        except ValueError:
            raise CorruptChunkError(f"{what} fails its AES-GCM authentication tag (the object was changed or cut)",
                                    file=where, position=position) from None

    def _detransform(self, chunk: Chunk, data: bytes) -> bytes:
        """A chunk's segment bytes from its stored bytes: decrypt, then decompress."""
        where = self.name("log")
        what = f"chunk {chunk.index}"
        if self.manifest.encryption is not None:
            data = self._decrypt(data, where, chunk.transformed_position, what)
        if self.manifest.compression:
            import zstandard

            try:
                d = zstandard.ZstdDecompressor().decompressobj()
                out = d.decompress(data)
                if not d.eof:
                    raise zstandard.ZstdError("the frame is incomplete")
            except zstandard.ZstdError as e:
                raise CorruptChunkError(f"{what} is not a zstd frame: {e}", file=where, position=chunk.transformed_position) from None
            data = out
        if len(data) != chunk.original_size:
            raise CorruptChunkError(f"{what} gives {len(data)} bytes, and the manifest says {chunk.original_size}",
                                    file=where, position=chunk.transformed_position)
        return data

    def fetch_chunks(self, chunks: list[Chunk]) -> list[bytes]:
        """The segment bytes of consecutive ``chunks``, fetched with one ranged read."""
        if not chunks:
            return []
        start = chunks[0].transformed_position
        end = chunks[-1].transformed_position + chunks[-1].transformed_size
        data = self._read("log", start, end)
        out = []
        for c in chunks:
            part = data[c.transformed_position - start : c.transformed_position - start + c.transformed_size]
            if len(part) != c.transformed_size:
                raise TruncatedObjectError(
                    f"chunk {c.index} (bytes {c.transformed_position}-{c.transformed_position + c.transformed_size - 1}) is "
                    f"missing: the object ends at byte {start + len(data)}, and the manifest says {self.manifest.transformed_size}",
                    file=self.name("log"), position=start + len(data))
            out.append(self._detransform(c, part))
        return out

    def open_log(self) -> SegmentFile:
        """The segment's ``.log`` bytes as a seekable binary file (chunks fetched as read)."""
        return SegmentFile(self)

    # ---------------------------------------------------------------------------- indexes
    def _indexes_object(self) -> bytes:
        if self._indexes is None:
            self._indexes = self._read("indexes")
        return self._indexes

    def index_part(self, part: str) -> bytes | None:
        """One part of ``.indexes`` (see :data:`INDEX_PARTS`), decrypted; None when the manifest lists
        no such part (a segment without a transaction index)."""
        if part not in INDEX_PARTS:
            raise ValueError(f"unknown index part {part!r}")
        if part not in self.manifest.indexes:
            return None
        pos, size = self.manifest.indexes[part]
        if size == 0:
            return b""
        data = self._indexes_object()
        where = self.name("indexes")
        if pos + size > len(data):
            raise TruncatedObjectError(f"the {part} index (bytes {pos}-{pos + size - 1}) is missing: the object holds "
                                       f"{len(data)} bytes", file=where, position=len(data))
        raw = data[pos : pos + size]
        return self._decrypt(raw, where, pos, f"the {part} index") if self.manifest.encryption is not None else raw

    def offset_index(self) -> OffsetIndex:
        """The segment's offset index (from ``.indexes``)."""
        return OffsetIndex.read(data=self.index_part("offset") or b"", base_offset=self.base_offset)

    def time_index(self) -> TimeIndex:
        """The segment's time index (from ``.indexes``)."""
        return TimeIndex.read(data=self.index_part("timestamp") or b"", base_offset=self.base_offset)

    def position_of(self, offset: int) -> int:
        """A byte position at or before the batch holding ``offset`` (the offset index's floor entry)."""
        if offset <= self.base_offset:
            return 0
        idx = self.offset_index()
        _, pos = idx.lookup(offset)
        return pos if 0 <= pos < self.size else 0

    def position_for_timestamp(self, timestamp: int) -> int:
        """A byte position at or before the first batch with a timestamp at or after ``timestamp``
        (the time index's floor entry, then the offset index)."""
        tidx = self.time_index()
        _, off = tidx.lookup(timestamp)
        return self.position_of(off)

    def batches(self, start_offset: int | None = None, end_offset: int | None = None) -> Iterator[Any]:
        """The segment's batches, from the one holding ``start_offset`` (all when None) up to the
        last holding an offset below ``end_offset``; only the chunks these batches lie in are fetched."""
        start = 0 if start_offset is None else self.position_of(start_offset)
        with self.open_log() as f:
            if start_offset is not None:
                start = _first_batch_at(f, start, start_offset)
            yield from self._batches_from(f, start, start_offset, end_offset)

    def _batches_from(self, f: SegmentFile, start: int, start_offset: int | None, end_offset: int | None) -> Iterator[Any]:
        from kafkalog.format.records.stream import LogReader

        with LogReader(f, name=self.name("log"), start=start) as reader:
            for b in reader.batches():
                if start_offset is not None and b.last_offset < start_offset:
                    continue
                if end_offset is not None and b.base_offset >= end_offset:
                    break
                yield b
                if end_offset is not None and b.last_offset >= end_offset - 1:
                    break  # the next batch is past the range: its header (and chunk) is not read


_HEAD = struct.Struct(">qi")  # an entry's offset (v2: base offset; v0/v1: last offset) and size
_V2_LAST_DELTA = struct.Struct(">i")  # lastOffsetDelta, at byte 23 of a v2 batch


def _first_batch_at(f: SegmentFile, pos: int, offset: int) -> int:
    """The position of the first batch at or after ``pos`` whose last offset is ``offset`` or more,
    found by reading only batch headers (27 bytes each), so that the chunks of the batches skipped
    are not fetched. Stops, leaving the rest to the batch reader, at anything that is not a whole
    header (a torn or corrupt entry is the reader's to report)."""
    size = f.segment.size
    while pos + 27 <= size:
        f.seek(pos)
        head = f.read(27)
        base, length = _HEAD.unpack_from(head)
        if length < 14 or pos + 12 + length > size:
            break
        last = base + _V2_LAST_DELTA.unpack_from(head, 23)[0] if head[16] == 2 else base
        if last >= offset:
            break
        pos += 12 + length
    return pos


class SegmentFile(RemoteFile):
    """A remote segment's ``.log`` as a read-only seekable file of its original bytes.

    Reads fetch the chunks they touch (consecutive missing chunks in one ranged read); the last
    chunks read are kept, so a reader stepping through batches fetches each chunk once."""

    KEEP = 8

    def __init__(self, segment: RemoteSegment) -> None:
        super().__init__(segment.name("log"))
        self.segment = segment
        self._cache: dict[int, bytes] = {}

    def _length(self) -> int:
        return self.segment.size  # from the manifest, read when first needed

    def readinto(self, buf: Any) -> int:
        m = self.segment.manifest
        n = min(len(buf), max(0, m.original_file_size - self._pos))
        if n == 0:
            return 0
        chunks = m.chunks_for(self._pos, self._pos + n)
        run: list[Chunk] = []
        for c in (c for c in chunks if c.index not in self._cache):
            if run and c.index != run[-1].index + 1:
                self._store(run)
                run = []
            run.append(c)
        self._store(run)
        needed = {c.index for c in chunks}
        for i in sorted(self._cache):
            if len(self._cache) <= max(self.KEEP, len(needed)):
                break
            if i not in needed:
                del self._cache[i]
        view = memoryview(buf)
        done = 0
        for c in chunks:
            data = self._cache[c.index]
            lo = self._pos + done - c.original_position
            take = min(len(data) - lo, n - done)
            view[done : done + take] = data[lo : lo + take]
            done += take
        self._pos += done
        return done

    def _store(self, run: list[Chunk]) -> None:
        if not run:
            return
        for c, data in zip(run, self.segment.fetch_chunks(run), strict=True):
            self._cache[c.index] = data
