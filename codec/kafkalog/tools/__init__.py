"""The ``kafkalog`` command and what its subcommands do: dump and the canonical JSON, build, explain, verify,
groups, retention, recover, compact, conformance and the Kaitai Struct generator.
"""
