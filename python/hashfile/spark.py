"""Writing hashfile datasets from Apache Spark: ``write_dataset(df, path,
key=...)`` builds a dataset (docs/FORMAT.md, "Datasets") where the data
is, one task per shard, and publishes its manifest from the driver once
every shard is checked. Read it from Python (``hashfile.open``), Ruby
(``Hashfile.open``) or the CLI like any dataset.

How a job runs (docs/PYTHON.md, "Spark"):

1. Each row becomes one JSON Lines record, ``{"k": key, "v": value}``,
   made by Spark's ``to_json`` in the JVM (no Python object per column).
2. Each key's shard is computed in Rust over Arrow batches (``mapInArrow``;
   ``shard_of`` is XXH3, which no Spark expression computes), and the rows
   are repartitioned so that partition ``i`` holds shard ``i`` exactly,
   then sorted by key within each partition (Spark's sort, spilling to
   disk as it needs).
3. Each task hands its sorted records, an Arrow batch at a time, to the
   core's shard writer, which checks every key's shard and order and
   publishes the shard under its final name (rename, or one S3 PUT).
   Sorted input makes every attempt of a task write the same bytes, so a
   retried or speculative attempt is harmless.
4. The driver checks each shard file against what its task reported
   (entry count, length, header checksum) and only then writes the
   manifest. A failed job removes its shards; the dataset's readers see
   the old generation throughout.
"""

from __future__ import annotations

import math
import os
import pickle
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from . import _native
from .errors import DatasetError, DuplicateKeyError, LimitError, ParseError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark import TaskContext
    from pyspark.sql import Column, DataFrame

__all__ = ["write_dataset", "patch_dataset"]

# The fields of the JSON Lines record each row becomes.
_KEY_FIELD = "k"
_VALUE_FIELD = "v"

# Test-only fault injection (python/tests/test_spark.py), "SHARD:ROWS:MARKER":
# on its first attempt only, the task of SHARD publishes its first ROWS rows
# as the whole shard under the final name, writes MARKER, and its Python
# worker exits.
_FAIL_FIRST_ATTEMPT_ENV = "HASHFILE_SPARK_TEST_FAIL_FIRST_ATTEMPT"

# What a task reports instead of raising: the data is wrong, and a retry
# would fail the same way. Anything else (I/O, a remote store) raises, and
# Spark retries the task.
_DATA_ERRORS = (DuplicateKeyError, ParseError, DatasetError, LimitError, ValueError, TypeError)


def write_dataset(
    df: DataFrame,
    path: str | os.PathLike[str],
    key: str,
    value: str | Sequence[str] | None = None,
    *,
    shards: int | None = None,
    target_shard_bytes: int | None = None,
    remote: dict[str, Any] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Writes ``df`` as a hashfile dataset at ``path``: a directory every
    executor and the driver see (local mode, NFS), or an ``s3://bucket/prefix``.

    ``key`` is a string or integer column (an integer is keyed by its
    digits); a null key fails the job. ``value`` is a column name, a list
    of them (stored as a dict), or None for the whole row as a dict. Give
    ``shards`` (1 to 1,048,576), or ``target_shard_bytes`` to size shards by the
    rows' JSON length (one more pass over ``df``: cache it first if it is
    costly to compute). ``remote``: options for S3 (``s3_endpoint``,
    ``s3_region``, ...; credentials come from the standard AWS environment
    variables). Build options (``keys_per_bucket``, ``load_factor``, ...)
    apply to every shard; ``on_duplicate`` must be ``"error"``. Publish
    options (``keep``, ``retain``, ``note``, and the gates
    ``max_entry_change``, ``max_type_change``, ``refuse_empty``, ``force``)
    apply to the dataset's publish, as for ``hashfile.build``.

    Returns the manifest written, as a dict. Raises ``DuplicateKeyError``
    naming a key that occurs twice, and the other ``hashfile.errors`` as a
    local build does; nothing is published then.
    """
    from pyspark.sql import functions as F

    location = os.fspath(path)
    # Checked here, before any task starts, as every task will check them.
    _native.check_build_options(options or None)
    if (shards is None) == (target_shard_bytes is None):
        raise ValueError("give shards or target_shard_bytes, not both and not neither")
    if target_shard_bytes is not None and (not isinstance(target_shard_bytes, int) or target_shard_bytes < 1):
        raise ValueError(f"target_shard_bytes must be a positive int, not {target_shard_bytes!r}")

    key_column = _key_column(df, key)
    record = F.to_json(
        F.struct(key_column.alias(_KEY_FIELD), _value_column(df, value).alias(_VALUE_FIELD)),
        {"ignoreNullFields": "false"},
    )
    rows = df.select(key_column.cast("string").alias("_key"), record.alias("_record"))

    if shards is None:
        assert target_shard_bytes is not None
        # An aggregate without grouping: always one row.
        summed = rows.select(F.sum(F.octet_length("_record"))).first()
        assert summed is not None
        total = summed[0] or 0
        shards = min(_native.MAX_SHARDS, max(1, math.ceil(total / target_shard_bytes)))
    generation = _native.new_generation()
    _check_options(location, generation, shards, options, remote)

    # Partition i holds shard i: the column Spark hashes is, for shard i,
    # a number Spark's own hash sends to partition i. Keys are routed in
    # Rust over Arrow batches (no Python object a row), and a row's shard
    # is then its partition's index (each task's writer checks every key's
    # shard again).
    partition_of = _partition_keys(df.sparkSession, shards)
    routed = (
        rows.mapInArrow(_Router(partition_of), "_key string, _record string, _partition long")
        .repartition(shards, "_partition")
        .sortWithinPartitions("_key")
        .select((F.col("_partition") == -1).alias("_null_key"), "_record")
    )

    task = _ShardTask(key, location, generation, shards, options, remote)
    try:
        results = [pickle.loads(row[0]) for row in routed.mapInArrow(task, "result binary").collect()]
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise errors[0]
        written = dict(r for r in results if isinstance(r, tuple))
        # Shards no row went to are written here, empty.
        for shard in range(shards):
            if shard not in written:
                writer = _native.ShardWriter(location, generation, shard, shards, _KEY_FIELD, _VALUE_FIELD, options or None, remote)
                written[shard] = writer.finish()
        return _native.publish_shards(location, generation, shards, list(written.values()), remote, options or None)
    except BaseException:
        _native.discard_generation(location, generation, remote)
        raise


def patch_dataset(
    df: DataFrame,
    path: str | os.PathLike[str],
    key: str,
    value: str | Sequence[str] | None = None,
    *,
    delete: str | None = None,
    max_changes: int = 1_000_000,
    **options: Any,
) -> dict[str, Any]:
    """Publishes the rows of ``df`` as a patch of the local dataset at
    ``path`` (``hashfile.patch``): a delta generation that reuses every
    shard file and adds an overlay to each shard the rows touch. Each row
    puts ``value`` (a column, a list of them, or None for the row's other
    columns) under ``key`` as ``write_dataset`` stores it; with ``delete``
    (a boolean column), a row where it is true deletes its key instead.

    A patch is a few keys of a large table: the rows are read on the driver
    (Spark's ``to_json`` makes each a line of a changes file there), and
    more than ``max_changes`` of them is a ``ValueError`` (rebuild with
    ``write_dataset``). A null key is a ``ValueError``. Options are
    ``hashfile.patch``'s (``on_duplicate``, ``on_missing``,
    ``compact_overlays``, ``keep``, ``note``, the gates, ...). Returns what
    ``hashfile.patch`` returns."""
    from pyspark.sql import functions as F

    key_column = _key_column(df, key)
    text_key = key_column.cast("string")
    deleting = F.lit(False)
    if delete is not None:
        field = _field(df, delete, "delete")
        if field.dataType.simpleString() != "boolean":
            raise TypeError(f"delete column {delete!r} is {field.dataType.simpleString()}; it is a boolean column (true deletes the row's key)")
        deleting = F.coalesce(F.col(delete), F.lit(False))
        if value is None:
            value = [c for c in df.columns if c != delete]
    put = F.to_json(
        F.struct(text_key.alias("key"), _value_column(df, value).alias("value")),
        {"ignoreNullFields": "false"},
    )
    gone = F.to_json(F.struct(text_key.alias("key"), F.lit(True).alias("delete")))
    lines = df.select(text_key.isNull().alias("_null_key"), F.when(deleting, gone).otherwise(put).alias("_line"))
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", encoding="utf-8") as changes:
        count = 0
        for row in lines.limit(max_changes + 1).toLocalIterator():
            count += 1
            if count > max_changes:
                raise ValueError(
                    f"more than max_changes ({max_changes}) rows: a patch changes a few keys of a dataset; rebuild it with write_dataset"
                )
            if row["_null_key"]:
                raise ValueError(f"a row's key column {key!r} is null")
            changes.write(row["_line"])
            changes.write("\n")
        changes.flush()
        return _native.patch(os.fspath(path), None, None, changes.name, options or None)


def _key_column(df: DataFrame, key: str) -> Column:
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegralType, StringType

    if not isinstance(key, str):
        raise TypeError(f"key is a column name, not {type(key).__name__}")
    field = _field(df, key, "key")
    if not isinstance(field.dataType, (StringType, IntegralType)):
        raise TypeError(
            f"key column {key!r} is {field.dataType.simpleString()}; a key is a string or an integer column (cast it, or format it with a Spark expression)"
        )
    return F.col(key)


def _value_column(df: DataFrame, value: str | Sequence[str] | None) -> Column:
    """The value as a column whose JSON decodes as the documented types: a
    decimal becomes its exact digits as a string (the format has no
    decimal type, and a float would round it)."""
    from pyspark.sql import functions as F

    if value is None:
        names = df.columns
    elif isinstance(value, str):
        return _exact(F.col(value), _field(df, value, "value").dataType)
    else:
        names = list(value)
        for name in names:
            _field(df, name, "value")
    return F.struct(*[_exact(F.col(n), _field(df, n, "value").dataType).alias(n) for n in names])


def _field(df: DataFrame, name: str, role: str) -> Any:
    for field in df.schema.fields:
        if field.name == name:
            return field
    raise ValueError(f"{role} column {name!r} is not in the DataFrame; its columns are {', '.join(df.columns)}")


def _exact(column: Column, data_type: Any) -> Column:
    exact = _without_decimals(data_type)
    return column if exact == data_type else column.cast(exact)


def _without_decimals(data_type: Any) -> Any:
    """``data_type`` with every decimal, however deep, a string."""
    from pyspark.sql.types import ArrayType, DecimalType, MapType, StringType, StructField, StructType

    if isinstance(data_type, DecimalType):
        return StringType()
    if isinstance(data_type, ArrayType):
        return ArrayType(_without_decimals(data_type.elementType), data_type.containsNull)
    if isinstance(data_type, MapType):
        return MapType(_without_decimals(data_type.keyType), _without_decimals(data_type.valueType), data_type.valueContainsNull)
    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, _without_decimals(f.dataType), f.nullable) for f in data_type.fields])
    return data_type


def _partition_keys(spark: Any, shards: int) -> list[int]:
    """For each shard, a number whose Spark hash partitioning (``pmod(hash(n),
    shards)``, Murmur3 with Spark's seed) is that shard's index: found by
    Spark itself, so this never depends on how Spark hashes."""
    from pyspark.sql import functions as F

    candidates = 16 * shards
    while True:
        found = (
            spark.range(candidates)
            .select(F.col("id"), F.expr(f"pmod(hash(id), {shards})").alias("p"))
            .groupBy("p")
            .agg(F.min("id").alias("id"))
            .collect()
        )
        keys = {row["p"]: row["id"] for row in found}
        if len(keys) == shards:
            return [keys[i] for i in range(shards)]
        candidates *= 4


def _check_options(location: str, generation: str, shards: int, options: dict[str, Any], remote: dict[str, Any] | None) -> None:
    """Refuses on the driver, before any task runs, what every task would
    refuse: the options and the shard count, checked by the core's shard
    writer (made in a temporary directory and dropped unwritten)."""
    with tempfile.TemporaryDirectory(prefix="hashfile-check-") as scratch:
        _native.ShardWriter(scratch, generation, 0, shards, _KEY_FIELD, _VALUE_FIELD, options or None, None)
    if remote is not None and not location.startswith("s3://"):
        raise ValueError("remote options are for an s3:// location")


def _string_buffers(array: Any) -> tuple[bytes, bytes, int, int, bool]:
    """An Arrow string array as the native calls take it: its offsets and
    data buffers, its first row and row count, and whether its offsets are
    64-bit (``large_string``)."""
    import pyarrow as pa

    _, offsets, data = array.buffers()
    return (
        offsets.to_pybytes() if offsets is not None else b"",
        data.to_pybytes() if data is not None else b"",
        array.offset,
        len(array),
        pa.types.is_large_string(array.type),
    )


class _Router:
    """Spark's ``mapInArrow`` over (key, record) batches: adds each row's
    partition, computed in Rust from the Arrow buffers (-1 for a null key)."""

    def __init__(self, partition_of: list[int]) -> None:
        self.partition_of = partition_of

    def __call__(self, batches: Iterable[Any]) -> Iterator[Any]:
        import pyarrow as pa

        for batch in batches:
            keys = batch.column(0)
            offsets, data, first, count, wide = _string_buffers(keys)
            validity = keys.buffers()[0]
            nulls = validity.to_pybytes() if validity is not None and keys.null_count else None
            partitions = _native.route_arrow_keys(offsets, data, nulls, first, count, wide, self.partition_of)
            column = pa.Array.from_buffers(pa.int64(), count, [None, pa.py_buffer(partitions)])
            yield pa.RecordBatch.from_arrays([keys, batch.column(1), column], names=["_key", "_record", "_partition"])


def _task_context() -> TaskContext:
    """The running task's context (a ``mapInArrow`` function runs in a task:
    there is one)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    assert context is not None
    return context


class _ShardTask:
    """Spark's ``mapInArrow`` over a partition's (null key?, record)
    batches, sorted by key: partition ``i`` is shard ``i``. Yields one row,
    the pickled list of what it wrote (``(shard, report)``) or the data
    error that stopped it."""

    def __init__(self, key: str, location: str, generation: str, shards: int, options: dict[str, Any], remote: dict[str, Any] | None) -> None:
        self.key = key
        self.location = location
        self.generation = generation
        self.shards = shards
        self.options = options or None
        self.remote = remote

    def __call__(self, batches: Iterable[Any]) -> Iterator[Any]:
        import pyarrow as pa

        shard = _task_context().partitionId()
        try:
            results: list[Any] = self._write(shard, batches)
        except _DATA_ERRORS as error:
            results = [error]
        yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(r) for r in results], pa.binary())], names=["result"])

    def _write(self, shard: int, batches: Iterable[Any]) -> list[tuple[int, dict[str, Any]]]:
        import pyarrow.compute as pc

        writer = None
        written = 0
        fail_at = self._failure_injected(shard)
        for batch in batches:
            if pc.any(batch.column(0)).as_py():
                raise ValueError(f"key column {self.key!r} is null in a row; every row needs a key (filter them out, or fill them with a Spark expression)")
            records = batch.column(1)
            if writer is None:
                writer = _native.ShardWriter(self.location, self.generation, shard, self.shards, _KEY_FIELD, _VALUE_FIELD, self.options, self.remote)
            if fail_at is not None and written + len(records) >= fail_at[0]:
                self._die_mid_write(writer, records.slice(0, fail_at[0] - written), shard, written, fail_at[1])
            written = self._add(writer, records, shard, written)
        return [(shard, writer.finish())] if writer is not None else []

    @staticmethod
    def _add(writer: Any, records: Any, shard: int, written: int) -> int:
        if len(records):
            writer.add_arrow_records(*_string_buffers(records), f"Spark rows of shard {shard} from row {written + 1}")
        return written + len(records)

    def _failure_injected(self, shard: int) -> tuple[int, str] | None:
        spec = os.environ.get(_FAIL_FIRST_ATTEMPT_ENV)
        if not spec:
            return None
        target, rows, marker = spec.split(":", 2)
        if int(target) != shard or _task_context().attemptNumber() != 0:
            return None
        return int(rows), marker

    def _die_mid_write(self, writer: Any, records: Any, shard: int, written: int, marker: str) -> None:
        written = self._add(writer, records, shard, written)
        writer.finish()
        with open(marker, "w") as f:
            f.write(f"shard {shard} attempt 0 wrote {written} rows and died")
        os._exit(17)
