"""The JVM's Spark data source and lookup function, reached from PySpark
through ``spark.jars`` (PySpark's own Spark, in local mode, in a process of
its own: jars are taken when a JVM starts): a dataset written by
``df.write.format("hashfile")`` holds, value for value, what
``hashfile.spark.write_dataset`` writes of the same rows, and reads the same
from Python, Ruby and ``spark.read.format("hashfile")``; ``hashfile_lookup``
registered with ``registerJavaFunction`` answers as a join does."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, ruby, skip_or_fail

try:
    import pyspark  # noqa: F401
except ImportError:
    skip_or_fail("HASHFILE_REQUIRE_SPARK", "PySpark is not installed (rake python_build installs it)")

import hashfile  # noqa: E402

JARS = [ROOT / "jvm/spark/target/hashfile-spark-0.1.0.jar"]  # the core inside it

SCRIPT = r"""
import json, sys
from pyspark.sql import SparkSession, functions as F
from hashfile.spark import write_dataset

jars, out = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
from test_spark import typed_rows  # the rows test_spark.py writes, every column kind
spark = (SparkSession.builder.master("local[2]").config("spark.jars", jars)
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
df = typed_rows(spark, 20000).cache()
df.write.format("hashfile").option("key", "key").option("shards", 4).save(out + "/jvm")
write_dataset(df, out + "/python", key="key", shards=4)

read = spark.read.format("hashfile").load(out + "/jvm")
rows = {r["key"]: r["value"] for r in read.collect()}

spark.udf.registerJavaFunction("hashfile_lookup", "dev.hashfile.spark.Lookup", "string")
orders = spark.range(30000).select((F.col("id") * 7 % 25000).alias("n")).select(
    F.concat(F.lit("key-"), F.col("n").cast("string")).alias("item"))
looked = orders.selectExpr("item", "hashfile_lookup('%s', item) AS found" % (out + "/jvm"))
joined = orders.join(df.select(F.col("key").alias("item"), F.col("score")), "item", "left")
mismatched = (looked.select("item", F.get_json_object("found", "$.score").cast("double").alias("score"))
              .exceptAll(joined.select("item", "score")).count())
absent = looked.where("found IS NULL").count()
print(json.dumps({"read": len(rows), "sample": rows["key-42"], "mismatched": mismatched, "absent": absent}))
spark.stop()
"""


def _causes(stderr: str) -> str:
    """A failed Spark script's exceptions and their causes, without the
    hundreds of stack frames between them."""
    lines = [line for line in stderr.splitlines() if line.strip() and not line.lstrip().startswith("at ")]
    return "\n".join(lines[-60:])


def test_spark_jars_write_read_and_lookup_as_python_and_ruby_do(tmp_path):
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        skip_or_fail("HASHFILE_REQUIRE_SPARK", "no Java for Spark (bin/setup --all installs openjdk-17-jdk-headless)")
    if not all(jar.exists() for jar in JARS):
        skip_or_fail("HASHFILE_REQUIRE_SPARK", "the JVM binding's jars are not built (rake jvm_package)")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, ",".join(str(j) for j in JARS), str(tmp_path), str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, _causes(done.stderr)
    result = json.loads(done.stdout.strip().splitlines()[-1])

    jvm = hashfile.open(str(tmp_path / "jvm"), verify=True)
    python = hashfile.open(str(tmp_path / "python"), verify=True)
    assert len(jvm) == len(python) == 20000
    for key, value in python.items():
        assert jvm[key] == value, key
    assert jvm["key-42"]["price"] == "0.4200"  # a decimal's exact digits, as write_dataset stores it
    assert result["read"] == 20000
    assert json.loads(result["sample"]) == jvm["key-42"]
    assert result["mismatched"] == 0
    assert result["absent"] == 30000 - sum(1 for i in range(30000) if i * 7 % 25000 < 20000)

    # Ruby reads the JVM's dataset as Python does.
    same = ruby(
        "db = Hashfile.open(ARGV[0]); puts JSON.generate(%w[key-0 key-42 key-19999].map { |k| db[k] })",
        str(tmp_path / "jvm"),
    )
    assert json.loads(same) == [python["key-0"], python["key-42"], python["key-19999"]]


S3_SCRIPT = r"""
import json, sys
from pyspark.sql import SparkSession, functions as F

jars, endpoint, location = sys.argv[1], sys.argv[2], sys.argv[3]
spark = (SparkSession.builder.master("local[2]").config("spark.jars", jars)
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
rows = spark.range(3000).select(F.format_string("k%d", "id").alias("k"), (F.col("id") * 10).alias("v"))
rows.write.format("hashfile").option("key", "k").option("value", "v").option("shards", 3).option("s3_endpoint", endpoint).save(location)
# A second write replaces the first (overwrite, the mode a nightly job uses).
(rows.select("k", (F.col("v") + 1).alias("v")).write.format("hashfile").mode("overwrite")
     .option("key", "k").option("value", "v").option("shards", 3).option("s3_endpoint", endpoint).save(location))
read = spark.read.format("hashfile").option("s3_endpoint", endpoint).load(location)
result = {"read": read.count(), "k7": read.where("key = 'k7'").first()["value"]}
# The lookup function takes no options: the endpoint comes from AWS_ENDPOINT_URL.
spark.udf.registerJavaFunction("hashfile_lookup", "dev.hashfile.spark.Lookup", "string")
result["looked"] = [r["found"] for r in spark.createDataFrame([("k7",), ("nope",)], "k STRING")
                    .selectExpr("hashfile_lookup('%s', k) AS found" % location).collect()]
# An s3:// key may hold "#" and "?": still a prefix with a dataset under it.
odd = location + "-odd#?x"
rows.write.format("hashfile").option("key", "k").option("value", "v").option("shards", 2).option("s3_endpoint", endpoint).save(odd)
rows.limit(5).write.format("hashfile").mode("ignore").option("key", "k").option("shards", 1).option("s3_endpoint", endpoint).save(odd)
result["odd"] = spark.read.format("hashfile").option("s3_endpoint", endpoint).load(odd).count()
try:  # the default mode refuses a prefix that holds a dataset, as Spark's file sources do
    rows.write.format("hashfile").option("key", "k").option("shards", 3).option("s3_endpoint", endpoint).save(location)
    result["again"] = "written"
except Exception as e:
    result["again"] = str(e)
try:
    rows.write.format("hashfile").option("key", "k").option("shards", 1).option("s3_endpoint", endpoint).save("s3://no-such-bucket/x")
    result["missing_bucket"] = "written"
except Exception as e:
    result["missing_bucket"] = str(e)
print(json.dumps(result))
spark.stop()
"""


def test_the_jvm_writes_a_dataset_to_s3_that_python_and_ruby_read(tmp_path, minio, monkeypatch):
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        skip_or_fail("HASHFILE_REQUIRE_SPARK", "no Java for Spark (bin/setup --all installs openjdk-17-jdk-headless)")
    if not all(jar.exists() for jar in JARS):
        skip_or_fail("HASHFILE_REQUIRE_SPARK", "the JVM binding's jars are not built (rake jvm_package)")
    minio.make_bucket("jvm")
    location = "s3://jvm/datasets/tens"
    done = subprocess.run(
        [sys.executable, "-c", S3_SCRIPT, ",".join(str(j) for j in JARS), minio.endpoint, location],
        capture_output=True,
        text=True,
        env={**os.environ, **minio.client_env, "AWS_ENDPOINT_URL": minio.endpoint, "PYSPARK_PYTHON": sys.executable},
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, _causes(done.stderr)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["read"] == 3000
    assert json.loads(result["k7"]) == 71
    assert result["looked"] == ["71", None]
    assert result["odd"] == 3000, "mode ignore left the dataset under an odd prefix as it was"
    assert "holds a published dataset" in result["again"], result["again"]
    assert "no-such-bucket" in result["missing_bucket"], result["missing_bucket"]

    url = f"{location}/hashfile-dataset.json"
    for name, value in minio.client_env.items():
        monkeypatch.setenv(name, value)
    with hashfile.open(url, s3_endpoint=minio.endpoint, verify=True) as db:
        assert len(db) == 3000 and db["k7"] == 71
        assert db.get_many(["k1", "k2999", "nope"]) == [11, 29991, None]
        assert len(db.info()["shards"]) == 3
    out = ruby(
        "db = Hashfile.open(ARGV[0], s3_endpoint: ARGV[1]); puts JSON.generate([db.size, db['k7']])",
        url, minio.endpoint,
    )
    assert json.loads(out) == [3000, 71]
