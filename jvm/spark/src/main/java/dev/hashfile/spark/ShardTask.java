package dev.hashfile.spark;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;

import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Row;

import dev.hashfile.DuplicateKeyException;
import dev.hashfile.FormatException;
import dev.hashfile.LimitException;
import dev.hashfile.ParseException;
import dev.hashfile.ShardReport;
import dev.hashfile.ShardWriter;

/**
 * One task of a {@link WriteJob}: partition {@code i}'s rows ({@code _key},
 * {@code _record}), sorted by key, written as shard {@code i}. Returns one
 * serialized object: what it wrote ({@link Written}), nothing if no row
 * came, or the data error that stopped it (a duplicate key, a record that
 * does not parse), which a retry would meet again. Any other error (I/O, a
 * remote store) is thrown, and Spark retries the task.
 */
final class ShardTask implements MapPartitionsFunction<Row, byte[]> {
    private static final long serialVersionUID = 1L;

    /** Records handed to the native writer at a time, about this many bytes. */
    private static final int BATCH_BYTES = 4 << 20;

    /**
     * Test-only fault injection (ShardWriteTest), {@code SHARD:ROWS:MARKER}:
     * on its first attempt only, the task of SHARD publishes its first ROWS
     * rows as the whole shard under the final name, writes MARKER, and
     * fails.
     */
    static final String FAIL_FIRST_ATTEMPT = "hashfile.spark.test.failFirstAttempt";

    /** What one task wrote. */
    record Written(int shard, ShardReport report) implements Serializable {
        private static final long serialVersionUID = 1L;
    }

    private final String key;
    private final String location;
    private final String generation;
    private final int shards;
    private final HashMap<String, Object> options;
    private final HashMap<String, Object> remote;

    ShardTask(String key, String location, String generation, int shards, HashMap<String, Object> options,
            HashMap<String, Object> remote) {
        this.key = key;
        this.location = location;
        this.generation = generation;
        this.shards = shards;
        this.options = options;
        this.remote = remote;
    }

    @Override
    public Iterator<byte[]> call(Iterator<Row> rows) {
        if (!rows.hasNext()) {
            return List.<byte[]>of().iterator();
        }
        int shard = TaskContext.getPartitionId();
        Object outcome;
        try {
            outcome = write(shard, rows);
        } catch (DuplicateKeyException | ParseException | FormatException.Dataset | LimitException
                | IllegalArgumentException e) {
            outcome = e;
        }
        return List.of(serialize(outcome)).iterator();
    }

    private Written write(int shard, Iterator<Row> rows) {
        long[] failAt = failureInjected(shard);
        try (ShardWriter writer = new ShardWriter(location, generation, shard, shards, options, remote)) {
            ByteArrayOutputStream batch = new ByteArrayOutputStream(BATCH_BYTES + (1 << 16));
            long written = 0;
            long batchFirst = 1;
            while (rows.hasNext()) {
                Row row = rows.next();
                if (row.isNullAt(0)) {
                    throw new IllegalArgumentException("key column \"" + key + "\" is null in a row; every row needs a key "
                            + "(filter them out, or fill them with a Spark expression)");
                }
                batch.writeBytes((byte[]) row.get(1));
                batch.write('\n');
                written++;
                if (failAt != null && written == failAt[0]) {
                    die(writer, batch, shard, batchFirst, written);
                }
                if (batch.size() >= BATCH_BYTES) {
                    add(writer, batch, shard, batchFirst);
                    batchFirst = written + 1;
                }
            }
            add(writer, batch, shard, batchFirst);
            return new Written(shard, writer.finish());
        }
    }

    private static void add(ShardWriter writer, ByteArrayOutputStream batch, int shard, long first) {
        if (batch.size() > 0) {
            writer.add(batch.toByteArray(), "Spark rows of shard " + shard + " from row " + first);
            batch.reset();
        }
    }

    private long[] failureInjected(int shard) {
        String spec = System.getProperty(FAIL_FIRST_ATTEMPT);
        if (spec == null || spec.isEmpty()) {
            return null;
        }
        String[] parts = spec.split(":", 3);
        if (Integer.parseInt(parts[0]) != shard || TaskContext.get().attemptNumber() != 0) {
            return null;
        }
        return new long[] {Long.parseLong(parts[1])};
    }

    private void die(ShardWriter writer, ByteArrayOutputStream batch, int shard, long first, long written) {
        add(writer, batch, shard, first);
        writer.finish();
        String marker = System.getProperty(FAIL_FIRST_ATTEMPT).split(":", 3)[2];
        try {
            Files.writeString(Path.of(marker), "shard " + shard + " attempt 0 wrote " + written + " rows and died");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        throw new IllegalStateException("injected failure: shard " + shard + " attempt 0 after " + written + " rows");
    }

    private static byte[] serialize(Object outcome) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(outcome);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }
}
