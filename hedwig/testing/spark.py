"""A local[2] Spark session as the Spark tests and bench/spark_bench.py use it: two
cores (all the machine has), no UI, no progress bars, two shuffle partitions, errors
only in the log. Spark is imported when a session is asked for, not before."""

import os
import sys

BASE_CONFIG = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
}


def local_session(app_name: str, **config):
    """getOrCreate a local[2] session named `app_name`, BASE_CONFIG and then `config`
    applied; its Python workers run this interpreter."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName(app_name)
    for key, value in {**BASE_CONFIG, **config}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
