"""PySpark data source and the drain job.

    import hedwig.spark
    hedwig.spark.register(spark)
    spark.read.format("hedwig").option("hub", "127.0.0.1:4080").option("topics", "a,b").load()

Needs the `spark` extra (pyspark, pyarrow); workers must run an interpreter that has
them (PYSPARK_PYTHON).
"""

from hedwig.spark.schema import SCHEMA
from hedwig.spark.source import SOURCE_NAME, HedwigDataSource, register

__all__ = ["SCHEMA", "SOURCE_NAME", "HedwigDataSource", "register"]
