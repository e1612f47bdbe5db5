package dev.hashfile;

import java.util.Map;
import java.util.Objects;

/**
 * One shard of a dataset, written by one task of a distributed job (the
 * Spark data source's, or a framework of your own): records in, sorted by
 * key, as JSON Lines of {@code {"k": key, "v": value}}; {@link #finish()}
 * builds the shard, publishes it under its final name (a rename, or one S3
 * PUT) and returns the report the driver checks. Every attempt of a task
 * given the same sorted records writes the same bytes, so a retried or
 * speculative attempt is harmless. The protocol is the runtime's, the one
 * Python's {@code hashfile.spark} uses (docs/FORMAT.md, "Datasets").
 *
 * <p>One task's: not for sharing between threads.
 */
public final class ShardWriter implements AutoCloseable {
    private long writer;

    /**
     * A writer of shard {@code shard} of {@code shardCount} of generation
     * {@code generation} ({@link DatasetTasks#newGeneration()}, the same in
     * every task) at {@code location} (a directory every task sees, or an
     * {@code s3://bucket/prefix}); build options as {@link Hashfile#build}
     * takes them (not {@code shards}), remote options for S3.
     */
    public ShardWriter(String location, String generation, int shard, int shardCount,
            Map<String, ?> options, Map<String, ?> remote) {
        writer = Native.shardWriterCreate(Objects.requireNonNull(location, "location"),
                Objects.requireNonNull(generation, "generation"), shard, shardCount,
                Native.pairs(Objects.requireNonNull(options, "options")),
                Native.pairs(Objects.requireNonNull(remote, "remote")));
    }

    /**
     * Adds the records of {@code lines}: JSON Lines, one {@code {"k": key,
     * "v": value}} a line, keys ascending in byte order and routed to this
     * shard ({@link Hashfile#shardOf}). {@code source} names them in errors.
     * Returns how many were added.
     */
    public synchronized long add(byte[] lines, String source) {
        return Native.shardWriterAdd(open(), Objects.requireNonNull(lines, "lines"),
                Objects.requireNonNull(source, "source"));
    }

    /** Builds and publishes the shard; what it wrote. */
    public synchronized ShardReport finish() {
        String[] f = Native.shardWriterFinish(open());
        return new ShardReport(f[0], Long.parseLong(f[1]), Long.parseLong(f[2]), f[3]);
    }

    private long open() {
        if (writer == 0) {
            throw new IllegalStateException("this shard writer is closed");
        }
        return writer;
    }

    /** Frees the writer, and its temporary file if it never finished. */
    @Override
    public synchronized void close() {
        if (writer != 0) {
            Native.shardWriterFree(writer);
            writer = 0;
        }
    }
}
