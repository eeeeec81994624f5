"""The compiled fast path (numba, optional): columnar decoding of record batches, records made by compiled
code, the codecs' C decompressors, Arrow output and the producer's partitioner hash.

Each piece has a plain path in :mod:`kafkalog.format` it is tested against; this layer imports only from there.
"""
