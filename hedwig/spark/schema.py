"""The rows a hedwig topic reads as, in Spark's words and in Arrow's.

Spark checks every Arrow batch a Python data source yields against the Arrow form of
the declared schema, field by field and with nullability, so both forms are written
out here once and the batch builder produces exactly `ARROW_SCHEMA`.
"""

import pyarrow as pa
from pyspark.sql.types import (
    BinaryType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

SCHEMA = StructType(
    [
        StructField("topic", StringType(), nullable=False),
        StructField("seq", LongType(), nullable=False),
        StructField("publish_time", TimestampType(), nullable=False),
        StructField("origin_region", StringType(), nullable=False),
        StructField("origin_seq", LongType(), nullable=False),
        StructField("key", BinaryType(), nullable=True),
        StructField("properties", MapType(StringType(), BinaryType(), False), nullable=False),
        StructField("payload", BinaryType(), nullable=False),
    ]
)

PUBLISH_TIME_TYPE = pa.timestamp("us", tz="UTC")
PROPERTIES_TYPE = pa.map_(pa.string(), pa.field("value", pa.binary(), nullable=False))

ARROW_SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string(), nullable=False),
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("publish_time", PUBLISH_TIME_TYPE, nullable=False),
        pa.field("origin_region", pa.string(), nullable=False),
        pa.field("origin_seq", pa.int64(), nullable=False),
        pa.field("key", pa.binary(), nullable=True),  # null: the message has no key
        pa.field("properties", PROPERTIES_TYPE, nullable=False),
        pa.field("payload", pa.binary(), nullable=False),
    ]
)

COLUMNS = tuple(ARROW_SCHEMA.names)
