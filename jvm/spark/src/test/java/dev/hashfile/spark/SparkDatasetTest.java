package dev.hashfile.spark;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.concat;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.struct;
import static org.apache.spark.sql.functions.to_json;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.hashfile.DuplicateKeyException;
import dev.hashfile.Hashfile;
import dev.hashfile.PublishRefusedException;
import dev.hashfile.Reader;

/**
 * The data source and the lookup function in Spark local[2] (two task
 * threads; a task may run twice), checked against what a single machine
 * builds and what Spark computes itself.
 */
class SparkDatasetTest {
    private static SparkSession spark;

    @TempDir
    Path dir;

    @BeforeAll
    static void start() {
        spark = SparkSession.builder()
                .master("local[2,2]")
                .appName("hashfile-spark-test")
                .config("spark.ui.enabled", "false")
                .config("spark.sql.shuffle.partitions", "4")
                .getOrCreate();
        spark.sparkContext().setLogLevel("ERROR");
    }

    @AfterAll
    static void stop() {
        spark.stop();
    }

    /** Rows of every kind a column holds: ids, text, decimals, lists, maps, nulls. */
    private static Dataset<Row> products(int n) {
        return spark.range(n).select(
                col("id"),
                concat(lit("product "), col("id").cast("string")).as("name"),
                col("id").multiply(lit(1.25)).cast("decimal(12,2)").as("price"),
                org.apache.spark.sql.functions.expr("array(cast(id % 3 as string), 'x')").as("tags"),
                org.apache.spark.sql.functions.expr("if(id % 5 = 0, null, id % 7)").as("stock"),
                org.apache.spark.sql.functions.expr("map('w', id % 11)").as("dims"));
    }

    /** The single-machine build of the same records: the JSON Lines file Spark's to_json makes, built by buildFrom. */
    private Path singleMachine(Dataset<Row> df, String key, int shards) throws IOException {
        List<String> lines = df.select(to_json(struct(col(key).as("k"),
                struct(java.util.Arrays.stream(df.columns()).map(c -> col(c).cast(
                        c.equals("price") ? "string" : df.schema().apply(c).dataType().sql()).as(c)).toArray(
                                org.apache.spark.sql.Column[]::new)).as("v")),
                Map.of("ignoreNullFields", "false"))).as(org.apache.spark.sql.Encoders.STRING()).collectAsList();
        Path input = dir.resolve("records.jsonl");
        Files.write(input, lines);
        Path out = dir.resolve("single");
        Hashfile.buildFrom(List.of(input.toString()), out.toString(),
                Map.of("format", "jsonl", "key_field", "k", "value_field", "v", "shards", shards));
        return out;
    }

    private static Map<Object, Object> entries(String location) {
        Map<Object, Object> out = new HashMap<>();
        try (Reader reader = Hashfile.open(location, Map.of("verify", true))) {
            for (Map.Entry<Object, Object> e : reader) {
                assertNull(out.put(e.getKey(), e.getValue()), "a key twice: " + e.getKey());
            }
        }
        return out;
    }

    @Test
    void aWriteHoldsWhatASingleMachineBuildsOfTheSameRows() throws IOException {
        Dataset<Row> df = products(5000);
        String path = dir.resolve("products").toString();
        df.write().format("hashfile").option("key", "id").option("shards", "4").save(path);

        Map<Object, Object> written = entries(path);
        assertEquals(5000, written.size());
        sameEntries(entries(singleMachine(df, "id", 4).toString()), written);
        try (Reader reader = Hashfile.open(path)) {
            @SuppressWarnings("unchecked")
            Map<String, Object> product = (Map<String, Object>) reader.get("42");
            assertEquals("product 42", product.get("name"));
            assertEquals("52.50", product.get("price")); // a decimal's exact digits
            assertEquals(List.of("0", "x"), product.get("tags"));
            assertEquals(0L, product.get("stock"));
            assertTrue(product.containsKey("stock"));
            assertNull(((Map<?, ?>) reader.get("40")).get("stock"));
            assertEquals(4, ((List<?>) reader.info().get("shards")).size());
        }
    }

    @Test
    void aReadGivesEveryEntryOnePartitionPerShard() {
        String path = dir.resolve("products").toString();
        Dataset<Row> df = products(3000);
        df.write().format("hashfile").option("key", "id").option("value", "name").option("shards", "3").save(path);

        Dataset<Row> read = spark.read().format("hashfile").load(path);
        assertEquals(new org.apache.spark.sql.types.StructType().add("key", "string", false).add("value", "string", true),
                read.schema());
        assertEquals(3, read.rdd().getNumPartitions());
        List<Row> rows = read.collectAsList();
        assertEquals(3000, rows.size());
        try (Reader reader = Hashfile.open(path)) {
            for (Row row : rows) {
                assertEquals(reader.getJson(row.getString(0)), row.getString(1));
                assertEquals("\"product " + row.getString(0) + "\"", row.getString(1));
            }
        }
    }

    @Test
    void aDeclaredSchemaReadsTheRowsBack() {
        String path = dir.resolve("products").toString();
        Dataset<Row> df = products(2000);
        df.write().format("hashfile").option("key", "id").option("shards", "2").save(path);

        Dataset<Row> read = spark.read().format("hashfile")
                .schema("id BIGINT, name STRING, price DECIMAL(12,2), tags ARRAY<STRING>, stock BIGINT, dims MAP<STRING, BIGINT>")
                .option("key", "id").load(path);
        Dataset<Row> original = df.selectExpr("id", "name", "price", "tags", "stock", "dims");
        assertEquals(2000, read.count());
        // Maps do not compare in Spark's set operations: compared as JSON.
        assertEquals(0, read.selectExpr("id", "name", "price", "tags", "stock", "to_json(dims) AS dims")
                .except(original.selectExpr("id", "name", "price", "tags", "stock", "to_json(dims) AS dims")).count());
    }

    @Test
    void aValueOfAnotherTypeThanItsFieldFailsNamingTheKey() {
        String path = dir.resolve("products").toString();
        products(50).write().format("hashfile").option("key", "id").option("shards", "1").save(path);
        Exception e = assertThrows(Exception.class, () -> spark.read().format("hashfile")
                .schema("id BIGINT, name BIGINT").option("key", "id").load(path).collectAsList());
        assertTrue(rootMessage(e).contains(": name is a string, which does not read as bigint"), rootMessage(e));
    }

    @Test
    void aDuplicateKeyFailsTheJobNamingItAndPublishesNothing() {
        String path = dir.resolve("dup").toString();
        Dataset<Row> df = products(1000).union(products(1000).where("id = 777"));
        DuplicateKeyException e = assertThrows(DuplicateKeyException.class,
                () -> df.write().format("hashfile").option("key", "id").option("shards", "4").save(path));
        assertTrue(e.getMessage().contains("777"), e.getMessage());
        assertFalse(Files.exists(Path.of(path)), "the directory the job made is gone with its shards");
    }

    @Test
    void aPublishGateRefusesAJobAndTheDatasetStaysWithItsNote() {
        String path = dir.resolve("gated").toString();
        products(1000).write().format("hashfile").option("key", "id").option("shards", "2")
                .option("note", "first load").save(path);
        PublishRefusedException e = assertThrows(PublishRefusedException.class,
                () -> products(100).write().format("hashfile").mode("overwrite").option("key", "id")
                        .option("shards", "2").option("max_entry_change", "0.5").save(path));
        assertEquals("max_entry_change", e.gate());
        assertTrue(e.getMessage().contains("100 entries against 1000 now (-90.0%), more than 50.0%"), e.getMessage());
        List<Map<String, Object>> history = Hashfile.history(path);
        assertEquals(1, history.size(), "nothing published");
        assertEquals("first load", history.get(0).get("note"));
        assertTrue(((String) history.get(0).get("tool")).contains("a distributed job"), history.toString());
        assertEquals(1000, entries(path).size());
    }

    @Test
    void aTaskThatFailsOnItsFirstAttemptIsRetriedAndTheDatasetIsWhole() {
        String path = dir.resolve("retried").toString();
        Path marker = dir.resolve("died");
        System.setProperty(ShardTask.FAIL_FIRST_ATTEMPT, "1:100:" + marker);
        try {
            products(4000).write().format("hashfile").option("key", "id").option("shards", "2").save(path);
        } finally {
            System.clearProperty(ShardTask.FAIL_FIRST_ATTEMPT);
        }
        assertTrue(Files.exists(marker), "the first attempt of shard 1 ran and died");
        Map<Object, Object> written = entries(path);
        assertEquals(4000, written.size());
    }

    @Test
    void aTargetShardSizeChoosesTheCount() {
        String path = dir.resolve("sized").toString();
        products(2000).write().format("hashfile").option("key", "id").option("target_shard_bytes", "40000").save(path);
        try (Reader reader = Hashfile.open(path)) {
            int shards = ((List<?>) reader.info().get("shards")).size();
            assertTrue(shards > 1 && shards < 20, "shards: " + shards);
            assertEquals(2000, reader.size());
        }
    }

    @Test
    void saveModesAndOptionsAreJudgedBeforeAnyTaskRuns() {
        String path = dir.resolve("modes").toString();
        Dataset<Row> df = products(100);
        df.write().format("hashfile").option("key", "id").option("shards", "2").save(path);
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> df.write().format("hashfile").option("key", "id").option("shards", "2").save(path))
                .getMessage().contains("holds a published dataset"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> df.write().format("hashfile")
                .mode(SaveMode.Append).option("key", "id").option("shards", "2").save(path))
                .getMessage().contains("cannot be appended to"));
        df.write().format("hashfile").mode(SaveMode.Ignore).option("key", "id").option("shards", "2").save(path);
        products(10).write().format("hashfile").mode(SaveMode.Overwrite).option("key", "id").option("shards", "2")
                .save(path);
        try (Reader reader = Hashfile.open(path)) {
            assertEquals(10, reader.size());
        }
        assertTrue(assertThrows(IllegalArgumentException.class, () -> df.write().format("hashfile")
                .option("shards", "2").save(dir.resolve("x").toString())).getMessage().contains("needs key"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> df.write().format("hashfile")
                .option("key", "nope").option("shards", "2").save(dir.resolve("x").toString()))
                .getMessage().contains("key column \"nope\" is not in the DataFrame"));
        String message = assertThrows(IllegalArgumentException.class, () -> df.write().format("hashfile")
                .option("key", "id").option("shards", "2").option("load_factor", "high")
                .save(dir.resolve("x").toString())).getMessage();
        assertTrue(message.contains("load_factor"), message);
        message = assertThrows(IllegalArgumentException.class, () -> df.write().format("hashfile")
                .option("key", "id").option("shards", "2").option("load_factr", "0.9")
                .save(dir.resolve("x").toString())).getMessage();
        assertTrue(message.contains("did you mean load_factor"), message);
    }

    @Test
    void theLookupFunctionAnswersAsASparkJoinDoes() {
        String path = dir.resolve("names").toString();
        products(3000).write().format("hashfile").option("key", "id").option("value", "name").option("shards", "4")
                .save(path);
        HashfileFunctions.register(spark);
        Dataset<Row> orders = spark.range(5000).selectExpr("id AS order", "cast(id * 7 % 3500 AS string) AS item");
        orders.createOrReplaceTempView("orders");
        Dataset<Row> looked = spark.sql("SELECT order, item, hashfile_lookup('" + path + "', item) AS name FROM orders");
        // The names hold nothing JSON escapes: each one's JSON text is it in quotes.
        Dataset<Row> joined = orders.join(products(3000).selectExpr("cast(id AS string) AS item",
                "concat('\"', name, '\"') AS name"),
                scala.jdk.javaapi.CollectionConverters.asScala(List.of("item")).toSeq(), "left")
                .select("order", "item", "name");
        assertEquals(5000, looked.count());
        assertEquals(0, looked.except(joined).count());
        assertEquals(0, joined.except(looked).count());
        assertTrue(looked.where("name IS NULL").count() > 0, "items past 2999 are absent");
        List<Row> viaColumn = orders.withColumn("json", HashfileFunctions.lookup(path, col("item")))
                .where("order = 1").collectAsList();
        assertEquals("\"product 7\"", viaColumn.get(0).getString(2));
        // In batches: the same answers, row by row.
        Dataset<Row> batched = HashfileFunctions.lookup(orders, path, "item", "name");
        assertEquals(5000, batched.count());
        assertEquals(0, batched.except(looked).count());
        assertEquals(0, looked.except(batched).count());
    }

    @Test
    void theLookupAnswersFromARepublishedDatasetWithinASecondAndTakesIntegerKeys() throws InterruptedException {
        String path = dir.resolve("republished").toString();
        spark.range(100).selectExpr("id", "'first' AS v").write().format("hashfile").option("key", "id")
                .option("value", "v").option("shards", "2").save(path);
        HashfileFunctions.register(spark);
        String ask = "SELECT hashfile_lookup('" + path + "', id) FROM range(5, 6)"; // a bigint key: its digits
        assertEquals("\"first\"", spark.sql(ask).first().getString(0));
        spark.range(100).selectExpr("id", "'second' AS v").write().format("hashfile").mode(SaveMode.Overwrite)
                .option("key", "id").option("value", "v").option("shards", "2").save(path);
        Thread.sleep((long) (Lookup.RELOAD_SECONDS * 1000) + 200);
        assertEquals("\"second\"", spark.sql(ask).first().getString(0));
        String message = rootMessage(assertThrows(Exception.class,
                () -> spark.sql("SELECT hashfile_lookup('" + path + "', 1.5)").collectAsList()));
        assertTrue(message.contains("a string, an integer or binary, not java.math.BigDecimal"), message);
    }

    @Test
    void whatASparkColumnIsStoredAsReadsBackOrIsRefusedNeverAnotherValue() {
        String path = dir.resolve("kinds").toString();
        spark.range(3).selectExpr("id", "cast(concat('b', id) AS binary) AS bytes",
                "if(id = 0, double('NaN'), if(id = 1, double('-Infinity'), 2.5)) AS x")
                .write().format("hashfile").option("key", "id").option("shards", "1").save(path);
        List<Row> rows = spark.read().format("hashfile").schema("id BIGINT, x DOUBLE").option("key", "id").load(path)
                .orderBy("id").collectAsList();
        assertTrue(Double.isNaN(rows.get(0).getDouble(1)));
        assertEquals(Double.NEGATIVE_INFINITY, rows.get(1).getDouble(1));
        assertEquals(2.5, rows.get(2).getDouble(1));
        String message = rootMessage(assertThrows(Exception.class, () -> spark.read().format("hashfile")
                .schema("id BIGINT, bytes BINARY").option("key", "id").load(path).collectAsList()));
        assertTrue(message.contains("stored as its base64 text"), message);
        message = rootMessage(assertThrows(Exception.class,
                () -> spark.read().format("hashfile").option("value", "x").load(path).collectAsList()));
        assertTrue(message.contains("name fields of a declared schema"), message);
    }

    @Test
    void locationsAndOptionsThatDoNotApplyAreRefused() throws IOException {
        Dataset<Row> df = products(10);
        String message = assertThrows(IllegalArgumentException.class, () -> df.write().format("hashfile")
                .option("key", "id").option("shard", "2").save(dir.resolve("a").toString())).getMessage();
        assertTrue(message.contains("did you mean shards?"), message);
        message = assertThrows(IllegalArgumentException.class, () -> df.write().format("hashfile")
                .option("key", "id").option("shards", "2").partitionBy("name").save(dir.resolve("a").toString()))
                .getMessage();
        assertTrue(message.contains("partitionBy does not apply"), message);
        message = assertThrows(IllegalArgumentException.class, () -> df.write().format("hashfile")
                .option("key", "id").option("shards", "2").save("hdfs://namenode/data")).getMessage();
        assertTrue(message.contains("not hdfs://"), message);
        Path other = Files.createDirectories(dir.resolve("other"));
        Files.writeString(other.resolve("keep.txt"), "mine");
        message = assertThrows(IllegalArgumentException.class, () -> df.write().format("hashfile")
                .option("key", "id").option("shards", "2").save(other.toString())).getMessage();
        assertTrue(message.contains("is a directory that is not empty"), message);
        Path file = Files.writeString(dir.resolve("a-file"), "x");
        message = assertThrows(IllegalArgumentException.class, () -> df.write().format("hashfile")
                .mode(SaveMode.Overwrite).option("key", "id").option("shards", "2").save(file.toString())).getMessage();
        assertTrue(message.contains("is a file"), message);
        // A file: URI is a local path.
        df.write().format("hashfile").option("key", "id").option("shards", "2").save(dir.resolve("uri").toUri().toString());
        assertEquals(10, spark.read().format("hashfile").load(dir.resolve("uri").toUri().toString()).count());
    }

    @Test
    void aJobWhoseTasksFailLeavesNothingBehind() {
        String path = dir.resolve("failing").toString();
        // Every attempt of some task fails while its rows are computed.
        Dataset<Row> df = spark.range(2000).selectExpr("id", "assert_true(id < 1500) AS ok");
        assertThrows(Exception.class,
                () -> df.write().format("hashfile").option("key", "id").option("shards", "4").save(path));
        assertFalse(Files.exists(Path.of(path)), "shards of the failed job: " + list(Path.of(path)));
    }

    @Test
    void typedReadsTakeOnlyWhatIsExactlyOfTheirType() throws IOException {
        String path = dir.resolve("exact").toString();
        Files.createDirectories(Path.of(path));
        Path lines = dir.resolve("exact.jsonl");
        Files.writeString(lines, String.join("\n",
                "{\"k\": \"007\", \"v\": {\"big\": 9007199254740993, \"f\": 0.1, \"d\": \"1e30000000\"}}",
                "{\"k\": \"7\", \"v\": {\"big\": 3, \"f\": 0.1, \"d\": \"12.50\"}}") + "\n");
        Hashfile.buildFrom(List.of(lines.toString()), path + "/exact.hf",
                Map.of("format", "jsonl", "key_field", "k", "value_field", "v"));
        String store = path + "/exact.hf";
        Path goodLine = dir.resolve("good.jsonl");
        Files.writeString(goodLine, Files.readAllLines(lines).get(1) + "\n");
        Hashfile.buildFrom(List.of(goodLine.toString()), path + "/good.hf",
                Map.of("format", "jsonl", "key_field", "k", "value_field", "v"));
        List<Row> good = spark.read().format("hashfile").schema("k STRING, big DOUBLE, f FLOAT, d DECIMAL(6,2)")
                .option("key", "k").load(path + "/good.hf").collectAsList();
        assertEquals(3.0, good.get(0).getDouble(1));
        assertEquals(0.1f, good.get(0).getFloat(2));
        assertEquals(new java.math.BigDecimal("12.50"), good.get(0).getDecimal(3));
        for (String schema : List.of("k BIGINT", "k STRING, big DOUBLE", "k STRING, d DECIMAL(6,2)")) {
            long started = System.nanoTime();
            String message = rootMessage(assertThrows(Exception.class, () -> spark.read().format("hashfile")
                    .schema(schema).option("key", "k").load(store).collectAsList()));
            assertTrue(message.contains("007"), schema + ": " + message);
            assertTrue(System.nanoTime() - started < 20_000_000_000L, schema + " took long to refuse");
        }
        // The default layout with the key read as binary: the value is still its JSON.
        Row row = spark.read().format("hashfile").schema("key BINARY, value STRING").load(path + "/good.hf").first();
        assertEquals("{\"big\":3,\"f\":0.1,\"d\":\"12.50\"}", row.getString(1));
    }

    @Test
    void aKeyColumnWithADotInItsName() {
        String path = dir.resolve("dotted").toString();
        spark.range(5).selectExpr("id AS `a.b`", "id * 2 AS v").write().format("hashfile").option("key", "a.b")
                .option("value", "v").option("shards", "1").save(path);
        try (Reader reader = Hashfile.open(path)) {
            assertEquals(8L, reader.get("4"));
        }
    }

    /** Equal maps, or the first key that differs (not both maps whole). */
    private static void sameEntries(Map<Object, Object> expected, Map<Object, Object> actual) {
        assertEquals(expected.size(), actual.size());
        for (Map.Entry<Object, Object> e : expected.entrySet()) {
            assertEquals(e.getValue(), actual.get(e.getKey()), "key " + e.getKey());
        }
    }

    private static String rootMessage(Throwable e) {
        Throwable t = e;
        StringBuilder all = new StringBuilder();
        while (t != null) {
            all.append(t.getMessage()).append('\n');
            t = t.getCause();
        }
        return all.toString();
    }

    private static List<String> list(Path dir) {
        List<String> names = new ArrayList<>();
        if (Files.isDirectory(dir)) {
            try (var files = Files.list(dir)) {
                files.forEach(f -> names.add(f.getFileName().toString()));
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
        return names;
    }
}
