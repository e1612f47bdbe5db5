"""hashfile.spark.write_dataset on a real Spark (PySpark from PyPI, in
local mode on Debian's OpenJDK), started here: what it writes reads the same
from Python, Ruby and the CLI as a single-machine build of the same rows,
a task that dies mid-write is retried without harm, bad rows fail the job
with the error a local build gives, and s3:// goes to MinIO."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

from conftest import skip_or_fail

try:
    import pyspark  # noqa: F401
except ImportError:
    skip_or_fail("HASHFILE_REQUIRE_SPARK", "PySpark is not installed (rake python_build installs it)")

from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

import hashfile  # noqa: E402
import hashfile.errors  # noqa: E402
from conftest import ruby  # noqa: E402
from hashfile.spark import patch_dataset, write_dataset  # noqa: E402

# Rows in the big test: CI's size; bench/spark_build.py runs 10M and more.
ROWS = int(os.environ.get("HASHFILE_SPARK_ROWS", "1000000"))


@pytest.fixture(scope="module")
def spark():
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        skip_or_fail("HASHFILE_REQUIRE_SPARK", "no Java for Spark (bin/setup --all installs openjdk-17-jre-headless)")
    # Executors run this Python, which has the package.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2,2]")  # 2 cores; a task may fail once
        .appName("hashfile-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.execution.pythonUDF.arrow.enabled", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def typed_rows(spark, n):
    """Rows of every column kind the mapping covers."""
    return spark.range(n).select(
        F.concat(F.lit("key-"), F.col("id").cast("string")).alias("key"),
        F.col("id"),
        (F.col("id") * 2.5).alias("score"),
        (F.col("id").cast("decimal(20,2)") / 100).cast("decimal(20,4)").alias("price"),
        (F.col("id") % 2 == 0).alias("even"),
        F.when(F.col("id") % 3 == 0, F.lit(None)).otherwise(F.lit("x")).cast("string").alias("maybe"),
        F.array(F.col("id"), F.col("id") + 1).alias("pair"),
        F.struct(F.col("id").cast("string").alias("digits"), F.lit(True).alias("ok")).alias("nested"),
        F.create_map(F.lit("k"), F.col("id")).alias("map"),
    )


def test_a_dataset_from_spark_reads_as_a_single_machine_build_of_the_same_rows(spark, tmp_path):
    df = typed_rows(spark, ROWS).cache()
    out = tmp_path / "spark"
    manifest = write_dataset(df, out, key="key", shards=8)
    assert manifest["entries"] == ROWS and len(manifest["shards"]) == 8

    # The same rows as JSON Lines, the way the docs map them (a decimal is
    # its digits as a string), sorted by key, built on one machine.
    value = F.struct(*[F.col(c).cast("string").alias(c) if c == "price" else F.col(c) for c in df.columns])
    records = df.orderBy("key").select(F.to_json(F.struct(F.col("key").alias("k"), value.alias("v")), {"ignoreNullFields": "false"}))
    jsonl = tmp_path / "rows.jsonl"
    with open(jsonl, "w") as f:
        for row in records.toLocalIterator():
            f.write(row[0] + "\n")
    single = tmp_path / "single"
    hashfile.build_from(jsonl, single, shards=8, key_field="k", value_field="v")

    # Every shard is byte for byte what the single build wrote: the same
    # routing, the same options, the same order (sorted by key).
    single_manifest = json.loads((single / "hashfile-dataset.json").read_text())
    for ours, theirs in zip(manifest["shards"], single_manifest["shards"], strict=True):
        assert (out / ours["file"]).read_bytes() == (single / theirs["file"]).read_bytes(), ours["file"]

    # Every key reads the same value in Python as the single build gives.
    with hashfile.open(out) as db, hashfile.open(single) as expected:
        assert len(db) == ROWS
        assert db == expected
        one = db["key-12"]
        assert one == {
            "key": "key-12", "id": 12, "score": 30.0, "price": "0.1200", "even": True, "maybe": None,
            "pair": [12, 13], "nested": {"digits": "12", "ok": True}, "map": {"k": 12},
        }
        assert db["key-13"]["maybe"] == "x" and db["key-13"]["even"] is False

    # Ruby reads every entry the same, and verifies the dataset.
    same = ruby(
        "a = Hashfile.open(ARGV[0]); b = Hashfile.open(ARGV[1]); a.verify\n"
        "bad = a.count { |k, v| b[k] != v }\n"
        "puts JSON.generate([a.size, bad, a['key-12']])",
        str(out), str(single),
    )
    size, bad, entry = json.loads(same)
    assert (size, bad) == (ROWS, 0)
    assert entry["price"] == "0.1200" and entry["pair"] == [12, 13] and entry["map"] == {"k": 12}


def test_the_documented_mapping_of_the_other_spark_types(spark, tmp_path):
    import datetime

    rows = spark.createDataFrame(
        [("a", float("nan"), float("inf"), datetime.date(2026, 11, 24), datetime.datetime(2026, 11, 24, 12, 30, 5), bytearray(b"hi"), 2**62, None)],
        "k string, nan double, inf double, day date, at timestamp, raw binary, big long, nothing string",
    )
    write_dataset(rows, tmp_path / "ds", key="k", shards=1)
    with hashfile.open(tmp_path / "ds") as db:
        row = db["a"]
    assert row["nan"] == "NaN" and row["inf"] == "Infinity"
    assert row["day"] == "2026-11-24" and row["at"].startswith("2026-11-24T12:30:05")
    assert row["raw"] == "aGk=" and row["big"] == 2**62 and row["nothing"] is None


def test_keys_are_routed_from_arrow_buffers_as_shard_of_routes_them():
    import pyarrow as pa

    from hashfile.spark import _string_buffers

    keys = [f"key-{i}" for i in range(1000)] + ["", "ключ", None]
    partitions = [100 + i for i in range(7)]
    for array in (pa.array(keys, pa.string()), pa.array(keys, pa.large_string()), pa.array(keys, pa.string()).slice(5, 990)):
        offsets, data, first, count, wide = _string_buffers(array)
        validity = array.buffers()[0].to_pybytes() if array.null_count else None
        routed = hashfile._native.route_arrow_keys(offsets, data, validity, first, count, wide, partitions)
        got = pa.Array.from_buffers(pa.int64(), count, [None, pa.py_buffer(routed)]).to_pylist()
        expected = [-1 if k is None else partitions[hashfile.shard_of(k, 7)] for k in array.to_pylist()]
        assert got == expected
    # Buffers that do not hold the rows are an error, never a read past them.
    offsets, data, first, count, wide = _string_buffers(pa.array(keys[:10]))
    with pytest.raises(ValueError, match="not an Arrow string array"):
        hashfile._native.route_arrow_keys(offsets, data[:5], None, first, count, wide, partitions)
    with pytest.raises(ValueError, match="not an Arrow string array"):
        hashfile._native.route_arrow_keys(offsets[:8], data, None, first, count, wide, partitions)


def test_a_task_that_dies_mid_write_is_retried_and_the_manifest_is_right(spark, tmp_path):
    rows = spark.range(20_000).select(F.format_string("k%06d", "id").alias("k"), F.col("id").alias("v"))
    out = tmp_path / "ds"
    marker = tmp_path / "died"
    # Shard 2's first attempt writes its first 1,000 rows as the whole shard
    # under the final name, then its Python worker exits.
    spark.sparkContext.environment["HASHFILE_SPARK_TEST_FAIL_FIRST_ATTEMPT"] = f"2:1000:{marker}"
    try:
        manifest = write_dataset(rows, out, key="k", value="v", shards=4)
    finally:
        del spark.sparkContext.environment["HASHFILE_SPARK_TEST_FAIL_FIRST_ATTEMPT"]
    assert marker.read_text() == "shard 2 attempt 0 wrote 1000 rows and died"
    expected = {f"k{i:06d}": i for i in range(20_000)}
    with hashfile.open(out) as db:
        db.verify()
        assert manifest["shards"][2]["entries"] > 1000
        assert dict(db.items()) == expected
    # No temporary file of an attempt is left.
    # The manifest, the generation's record and the history: no file a failed attempt left.
    assert sorted(p.name for p in out.iterdir() if not p.name.endswith(".hf")) == sorted(
        ["hashfile-dataset.json", f"hashfile-dataset.{manifest['generation']}.json", "hashfile-dataset.history.json"]
    )


def test_bad_rows_fail_the_job_with_a_local_builds_error_and_publish_nothing(spark, tmp_path):
    out = tmp_path / "ds"
    good = spark.createDataFrame([("a", 1), ("b", 2), ("c", 3)], "k string, v long")
    first = write_dataset(good, out, key="k", value="v", shards=2)

    duplicated = good.union(spark.createDataFrame([("b", 9)], "k string, v long"))
    with pytest.raises(hashfile.errors.DuplicateKeyError) as error:
        write_dataset(duplicated, out, key="k", value="v", shards=2)
    assert error.value.key == b"b" and 'duplicate key "b"' in str(error.value)

    nulls = good.union(spark.createDataFrame([(None, 4)], "k string, v long"))
    with pytest.raises(ValueError, match="key column 'k' is null in a row"):
        write_dataset(nulls, out, key="k", value="v", shards=2)

    # The dataset is the first one, and nothing of the failed jobs is left.
    with hashfile.open(out) as db:
        assert dict(db.items()) == {"a": 1, "b": 2, "c": 3}
    assert json.loads((out / "hashfile-dataset.json").read_text())["generation"] == first["generation"]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["hashfile-dataset.json", f"hashfile-dataset.{first['generation']}.json", "hashfile-dataset.history.json"]
        + [s["file"] for s in first["shards"]]
    )

    # Options a job would ignore or cannot honour fail before any task runs.
    with pytest.raises(ValueError, match="on_duplicate"):
        write_dataset(good, out, key="k", shards=2, on_duplicate="last")
    with pytest.raises(TypeError, match="unknown option codec for build"):
        write_dataset(good, out, key="k", shards=2, codec="zstd")
    with pytest.raises(ValueError, match="is not a compression"):
        write_dataset(good, out, key="k", shards=2, compression="lz4")
    with pytest.raises(ValueError, match="give shards or target_shard_bytes"):
        write_dataset(good, out, key="k")
    with pytest.raises(ValueError, match="shards"):
        write_dataset(good, out, key="k", shards=hashfile._native.MAX_SHARDS + 1)
    with pytest.raises(ValueError, match="key column 'x' is not in the DataFrame"):
        write_dataset(good, out, key="x", shards=2)
    with pytest.raises(TypeError, match="key column 'v' is double"):
        write_dataset(good.withColumn("v", F.col("v").cast("double")), out, key="v", shards=2)


def test_shards_sized_by_bytes_and_integer_keys(spark, tmp_path):
    rows = spark.range(5000).select(F.col("id"), F.repeat(F.lit("x"), 100).alias("pad"))
    manifest = write_dataset(rows, tmp_path / "ds", key="id", target_shard_bytes=100_000)
    # As many shards as the rows' JSON records need at 100 kB each.
    record = F.to_json(F.struct(F.col("id").alias("k"), F.struct("id", "pad").alias("v")))
    total = rows.select(F.sum(F.octet_length(record))).first()[0]
    assert total > 600_000
    assert len(manifest["shards"]) == -(-total // 100_000)
    with hashfile.open(tmp_path / "ds") as db:
        # An integer key is keyed by its digits.
        assert db["4999"] == {"id": 4999, "pad": "x" * 100}
        assert len(db) == 5000


def test_a_dataset_with_compressed_values(spark, tmp_path):
    """compression="zstd" reaches every task's shard writer: each shard is
    compressed in place, and every value reads back."""
    text = F.concat(F.lit("a steel kettle for every kitchen, item "), F.col("id").cast("string"))
    rows = spark.range(3000).select(F.col("id"), text.alias("text"))
    manifest = write_dataset(rows, tmp_path / "ds", key="id", value="text", shards=2, compression="zstd")
    with hashfile.open(tmp_path / "ds") as db:
        assert len(db) == 3000
        assert all(db[str(i)] == f"a steel kettle for every kitchen, item {i}" for i in range(0, 3000, 7))
    for shard in manifest["shards"]:
        with hashfile.open(tmp_path / "ds" / shard["file"]) as db:
            assert db.info()["compression"]["values"] == shard["entries"]


def test_a_dataset_written_to_s3_reads_from_python_and_ruby(spark, tmp_path, minio, monkeypatch):
    for name, value in minio.client_env.items():
        monkeypatch.setenv(name, value)
        spark.sparkContext.environment[name] = value
    minio.make_bucket("spark")
    rows = spark.range(3000).select(F.format_string("k%d", "id").alias("k"), (F.col("id") * 10).alias("v"))
    location = "s3://spark/datasets/tens"
    remote = {"s3_endpoint": minio.endpoint}
    first = write_dataset(rows, location, key="k", value="v", shards=3, remote=remote)
    second = write_dataset(rows, location, key="k", value="v", shards=3, remote=remote)
    assert first["generation"] != second["generation"]
    url = f"{location}/hashfile-dataset.json"
    with hashfile.open(url, **remote) as db:
        assert len(db) == 3000 and db["k7"] == 70
        assert db.get_many(["k1", "k2999", "nope"]) == [10, 29990, None]
    out = ruby(
        "db = Hashfile.open(ARGV[0], s3_endpoint: ARGV[1]); puts JSON.generate([db.size, db['k7']])",
        url, minio.endpoint,
    )
    assert json.loads(out) == [3000, 70]
    # A bucket that is not there fails the job, naming it.
    with pytest.raises(Exception, match="no-such-bucket"):
        write_dataset(rows, "s3://no-such-bucket/x", key="k", value="v", shards=1, remote=remote)


def test_a_patch_from_spark_puts_and_deletes_over_the_dataset(spark, tmp_path):
    path = tmp_path / "prices"
    rows = [(f"sku-{i}", i, f"item {i}") for i in range(2000)]
    write_dataset(spark.createDataFrame(rows, "sku string, cents long, name string"), path, key="sku", shards=4)
    changes = spark.createDataFrame(
        [("sku-1", 5, "cheaper", False), ("sku-2", 0, "", True), ("sku-new", 7, None, False)],
        "sku string, cents long, name string, gone boolean",
    )
    done = patch_dataset(changes, path, key="sku", delete="gone", note="from spark")
    assert (done["added"], done["changed"], done["deleted"], done["published"]) == (1, 1, 1, True)
    with hashfile.open(path) as db:
        # The whole row, as write_dataset stores it, but the delete column.
        assert db["sku-1"] == {"sku": "sku-1", "cents": 5, "name": "cheaper"}
        assert db["sku-new"] == {"sku": "sku-new", "cents": 7, "name": None}
        assert db["sku-3"] == {"sku": "sku-3", "cents": 3, "name": "item 3"}
        assert "sku-2" not in db
        assert len(db) == 2000
    assert hashfile.history(path)[0]["note"] == "from spark"
    by_id = spark.createDataFrame([(3, "x")], "id long, v string")
    with pytest.raises(ValueError, match="more than max_changes"):
        patch_dataset(spark.createDataFrame([("a", 1), ("b", 2)], "k string, v long"), path, key="k", value="v", max_changes=1)
    with pytest.raises(TypeError, match="is a boolean column"):
        patch_dataset(by_id, path, key="id", delete="v")

