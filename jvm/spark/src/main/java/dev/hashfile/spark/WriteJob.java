package dev.hashfile.spark;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.min;
import static org.apache.spark.sql.functions.octet_length;
import static org.apache.spark.sql.functions.struct;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.to_json;
import static org.apache.spark.sql.functions.udf;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.IntegralType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import dev.hashfile.DatasetTasks;
import dev.hashfile.Hashfile;
import dev.hashfile.ShardReport;
import dev.hashfile.ShardWriter;

/**
 * A DataFrame written as a dataset, the way Python's {@code
 * hashfile.spark.write_dataset} writes one (the same layout; either reads
 * the other's):
 *
 * <ol>
 * <li>Each row becomes one JSON Lines record, {@code {"k": key, "v":
 * value}}, made by Spark's {@code to_json}.
 * <li>Each key's shard is computed ({@link Hashfile#shardOf}, XXH3, which no
 * Spark expression computes) and the rows are repartitioned so that
 * partition {@code i} holds shard {@code i} exactly, then sorted by key
 * within each partition (Spark's sort, spilling to disk as it needs).
 * <li>Each task hands its sorted records to a {@link ShardWriter}, which
 * checks every key's shard and order and publishes the shard under its
 * final name. Sorted input makes every attempt write the same bytes, so a
 * retried or speculative attempt is harmless.
 * <li>The driver checks each shard file against what its task reported
 * and only then writes the manifest ({@link DatasetTasks#publish}). A
 * failed job removes its shards; readers see the old generation
 * throughout.
 * </ol>
 */
final class WriteJob {
    private WriteJob() {}

    static void run(Dataset<Row> df, SaveMode mode, Map<String, String> given) {
        WriteOptions options = WriteOptions.of(given);
        if (mode == SaveMode.Append) {
            throw new IllegalArgumentException("a hashfile dataset is immutable: it cannot be appended to; write it whole "
                    + "with mode(\"overwrite\"), which publishes a new generation (readers move to it on their next reload)");
        }
        String existing = existing(options.path(), options.remote());
        if (existing != null && mode != SaveMode.Overwrite) {
            if (mode == SaveMode.Ignore) {
                return;
            }
            throw new IllegalArgumentException(options.path() + " " + existing
                    + "; write with mode(\"overwrite\") to publish a new generation there (files other than a "
                    + "dataset's are left as they are)");
        }
        boolean made = !options.path().contains("://") && !Files.exists(Path.of(options.path()));

        Column key = keyColumn(df, options.key());
        Column record = to_json(struct(key.as("k"), valueColumn(df, options.value()).as("v")),
                Map.of("ignoreNullFields", "false"));
        // Binary, not string: a row's key and record reach the routing and
        // the task as the bytes they are, not decoded to UTF-16 and back.
        Dataset<Row> rows = df.select(key.cast("string").cast("binary").as("_key"), record.cast("binary").as("_record"));
        int shards = options.shards() != null ? options.shards() : shardsFor(rows, options.targetShardBytes());

        String generation = DatasetTasks.newGeneration();
        long[] partitionOf = partitionKeys(df.sparkSession(), shards);
        UDF1<byte[], Long> route = k -> k == null ? -1L : partitionOf[Hashfile.shardOf(k, shards)];
        Dataset<Row> routed = rows.withColumn("_partition", udf(route, DataTypes.LongType).apply(col("_key")))
                .repartition(shards, col("_partition"))
                .sortWithinPartitions("_key")
                .select("_key", "_record");

        ShardTask task = new ShardTask(options.key(), options.path(), generation, shards,
                new HashMap<>(options.build()), new HashMap<>(options.remote()));
        // The job's tasks in a group of their own, so a failure can cancel
        // them and wait for them to end; the caller's group is put back.
        var context = df.sparkSession().sparkContext();
        String[] groupProperties = {"spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel"};
        String[] callers = new String[groupProperties.length];
        for (int i = 0; i < callers.length; i++) {
            callers[i] = context.getLocalProperty(groupProperties[i]);
        }
        context.setJobGroup(generation, "hashfile write of " + options.path(), true);
        try {
            Map<Integer, ShardReport> written = new HashMap<>();
            for (byte[] result : routed.mapPartitions(task, Encoders.BINARY()).collectAsList()) {
                Object outcome = deserialize(result);
                if (outcome instanceof RuntimeException error) {
                    throw error;
                }
                ShardTask.Written w = (ShardTask.Written) outcome;
                written.put(w.shard(), w.report());
            }
            // Shards no row went to are written here, empty.
            for (int shard = 0; shard < shards; shard++) {
                if (!written.containsKey(shard)) {
                    try (ShardWriter writer = new ShardWriter(options.path(), generation, shard, shards,
                            options.build(), options.remote())) {
                        written.put(shard, writer.finish());
                    }
                }
            }
            DatasetTasks.publish(options.path(), generation, shards, new ArrayList<>(written.values()), options.build(),
                    options.remote());
        } catch (Throwable e) {
            // A task Spark is still cancelling could publish its shard after
            // the discard: the job's tasks end first.
            awaitEnd(df.sparkSession(), generation);
            try {
                DatasetTasks.discard(options.path(), generation, options.remote());
                if (made) {
                    // The directory this job made, left empty: gone too.
                    Files.deleteIfExists(Path.of(options.path()));
                }
            } catch (RuntimeException | IOException cleanup) {
                e.addSuppressed(cleanup);
            }
            throw e;
        } finally {
            for (int i = 0; i < callers.length; i++) {
                context.setLocalProperty(groupProperties[i], callers[i]);
            }
        }
    }

    /**
     * Cancels the job group's tasks and waits (a minute at most) until none
     * runs: a task that outlived its job could otherwise publish a shard
     * after the failed generation was discarded.
     */
    private static void awaitEnd(SparkSession spark, String group) {
        var context = spark.sparkContext();
        context.cancelJobGroup(group);
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (System.nanoTime() < deadline) {
            boolean running = false;
            for (int job : context.statusTracker().getJobIdsForGroup(group)) {
                var info = context.statusTracker().getJobInfo(job);
                if (info.isEmpty()) {
                    continue;
                }
                for (int stage : info.get().stageIds()) {
                    var stageInfo = context.statusTracker().getStageInfo(stage);
                    running |= stageInfo.isDefined() && stageInfo.get().numActiveTasks() > 0;
                }
            }
            if (!running) {
                return;
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /**
     * What is at {@code path} already, in words, or null if nothing: as
     * Spark's own file sources, the default mode refuses a path that holds
     * anything, not only a dataset (an s3:// one: whether a dataset opens
     * there). A path that is a file is refused in every mode.
     */
    private static String existing(String path, Map<String, ?> remote) {
        if (path.contains("://")) {
            try (var reader = Locations.open(path, remote, null)) {
                return reader.info().containsKey("shards") ? "holds a published dataset" : "holds a store";
            } catch (dev.hashfile.RemoteException.NotFound e) {
                return null;
            } catch (dev.hashfile.FormatException e) {
                // A dataset that cannot be read (damaged, or of a newer
                // release) is there all the same: overwrite replaces it.
                return "holds a dataset that cannot be read (" + e.getMessage() + ")";
            }
        }
        Path at = Path.of(path);
        if (Files.exists(at) && !Files.isDirectory(at)) {
            throw new IllegalArgumentException(path + " is a file; a dataset is written to a directory");
        }
        if (Files.exists(at.resolve("hashfile-dataset.json"))) {
            return "holds a published dataset";
        }
        try (var files = Files.list(at)) {
            return files.findAny().isPresent() ? "is a directory that is not empty" : null;
        } catch (java.nio.file.NoSuchFileException e) {
            return null;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Column keyColumn(Dataset<Row> df, String name) {
        StructField field = field(df, name, "key");
        if (!(field.dataType() instanceof StringType || field.dataType() instanceof IntegralType)) {
            throw new IllegalArgumentException("key column \"" + name + "\" is " + field.dataType().simpleString()
                    + "; a key is a string or an integer column (cast it, or format it with a Spark expression)");
        }
        return column(name);
    }

    /** A column by its name as the DataFrame has it, dots and all (col("a.b") is a nested field). */
    private static Column column(String name) {
        return col("`" + name.replace("`", "``") + "`");
    }

    /**
     * The value as a column whose JSON decodes as the documented types: a
     * decimal becomes its exact digits as a string (the format has no
     * decimal type, and a float would round it).
     */
    private static Column valueColumn(Dataset<Row> df, List<String> value) {
        List<String> names = value == null ? List.of(df.columns()) : value;
        if (value != null && value.size() == 1) {
            return exact(df, names.get(0));
        }
        return struct(names.stream().map(n -> exact(df, n).as(n)).toArray(Column[]::new));
    }

    private static Column exact(Dataset<Row> df, String name) {
        DataType type = field(df, name, "value").dataType();
        DataType exact = withoutDecimals(type);
        return exact.equals(type) ? column(name) : column(name).cast(exact);
    }

    private static DataType withoutDecimals(DataType type) {
        if (type instanceof DecimalType) {
            return DataTypes.StringType;
        }
        if (type instanceof ArrayType a) {
            return DataTypes.createArrayType(withoutDecimals(a.elementType()), a.containsNull());
        }
        if (type instanceof MapType m) {
            return DataTypes.createMapType(withoutDecimals(m.keyType()), withoutDecimals(m.valueType()),
                    m.valueContainsNull());
        }
        if (type instanceof StructType s) {
            StructField[] fields = s.fields().clone();
            for (int i = 0; i < fields.length; i++) {
                fields[i] = new StructField(fields[i].name(), withoutDecimals(fields[i].dataType()),
                        fields[i].nullable(), fields[i].metadata());
            }
            return new StructType(fields);
        }
        return type;
    }

    private static StructField field(Dataset<Row> df, String name, String role) {
        for (StructField f : df.schema().fields()) {
            if (f.name().equals(name)) {
                return f;
            }
        }
        throw new IllegalArgumentException(role + " column \"" + name + "\" is not in the DataFrame; its columns are "
                + String.join(", ", df.columns()));
    }

    /** Shards for a target size: the rows' JSON length over it (one more pass over the rows). */
    private static int shardsFor(Dataset<Row> rows, long target) {
        Row summed = rows.select(sum(octet_length(col("_record")))).first();
        long total = summed.isNullAt(0) ? 0 : summed.getLong(0);
        return (int) Math.min(DatasetTasks.MAX_SHARDS, Math.max(1, (total + target - 1) / target));
    }

    /**
     * For each shard, a number whose Spark hash partitioning ({@code
     * pmod(hash(n), shards)}, Murmur3 with Spark's seed) is that shard's
     * index: found by Spark itself, so this never depends on how Spark
     * hashes.
     */
    private static long[] partitionKeys(SparkSession spark, int shards) {
        long candidates = 16L * shards;
        while (true) {
            List<Row> found = spark.range(candidates)
                    .select(col("id"), expr("pmod(hash(id), " + shards + ")").as("p"))
                    .groupBy("p").agg(min("id").as("id"))
                    .collectAsList();
            if (found.size() == shards) {
                long[] keys = new long[shards];
                for (Row row : found) {
                    keys[row.getInt(0)] = row.getLong(1);
                }
                return keys;
            }
            candidates *= 4;
        }
    }

    private static Object deserialize(byte[] bytes) {
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes))) {
            return in.readObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException(e);
        }
    }
}
