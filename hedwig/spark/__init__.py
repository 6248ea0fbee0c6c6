"""PySpark data source and the drain job."""
