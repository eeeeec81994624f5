"""What one file's bytes mean (SPEC.md §1-§5): primitives, the construct schemas, record batches of every
magic and codec, indexes, the transaction index, producer snapshots, checkpoints and file names.

Nothing here knows a partition directory or a broker exists; nothing here imports from the layers above.
"""
