"""Whole data dirs, topics and partitions as Arrow: :func:`scan` plans the reads of many
partitions from their indexes (the log layer) and decodes them with the columnar decoder (the
fast layer). ``kafkalog.scan`` is :func:`kafkalog.dataset.scan.scan`."""
