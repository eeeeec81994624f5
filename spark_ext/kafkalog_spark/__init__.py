"""PySpark data source for Kafka log files (see the Spark issue)."""
