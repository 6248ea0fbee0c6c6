"""PySpark data source and the drain job.

    import hedwig.spark
    hedwig.spark.register(spark)
    spark.read.format("hedwig").option("hub", "127.0.0.1:4080").option("topics", "a,b").load()

Needs the `spark` extra (pyspark, pyarrow); workers must run an interpreter that has
them (PYSPARK_PYTHON). The names below load on first use, so that the parts that do
not need Spark (the drain's command line, options, offsets) import without it.
"""

__all__ = ["SCHEMA", "SOURCE_NAME", "HedwigDataSource", "register"]


def __getattr__(name):
    if name in __all__:
        from hedwig.spark import schema, source

        return getattr(schema if name == "SCHEMA" else source, name)
    raise AttributeError(f"module 'hedwig.spark' has no attribute {name!r}")
