package dev.hashfile.spark;

import java.util.List;
import java.util.Map;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructType;

import dev.hashfile.Reader;

/**
 * A read of a dataset: one partition per shard, planned on the driver from
 * the manifest it opens, each read in a task by {@link ShardReader}. Every
 * task checks that it reads the generation planned: a dataset republished
 * while the job runs fails it, rather than mixing two generations.
 */
final class ShardScan implements Scan, Batch {
    private final StructType schema;
    private final ReadOptions options;

    ShardScan(StructType schema, ReadOptions options) {
        this.schema = schema;
        this.options = options;
        RowMaker.check(schema, options);
    }

    @Override
    public StructType readSchema() {
        return schema;
    }

    @Override
    public String description() {
        return "hashfile " + options.path();
    }

    @Override
    public Batch toBatch() {
        return this;
    }

    /** One shard a task reads, of the generation the driver planned (null for a store). */
    record Shard(ReadOptions options, StructType schema, int shard, String generation) implements InputPartition {
        private static final long serialVersionUID = 1L;
    }

    @Override
    public InputPartition[] planInputPartitions() {
        try (Reader reader = Locations.open(options.path(), options.open(), null)) {
            Map<String, Object> info = reader.info();
            int shards = info.get("shards") instanceof List<?> list ? list.size() : 1;
            String generation = (String) info.get("generation");
            // Every task opens what the driver did (a remote dataset by its manifest's URL).
            ReadOptions opened = options.at(reader.location());
            InputPartition[] out = new InputPartition[shards];
            for (int i = 0; i < shards; i++) {
                out[i] = new Shard(opened, schema, i, generation);
            }
            return out;
        }
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new Readers();
    }

    /** Makes each task's reader: sent to the executors, so it holds nothing. */
    private static final class Readers implements PartitionReaderFactory {
        private static final long serialVersionUID = 1L;

        @Override
        public PartitionReader<InternalRow> createReader(InputPartition partition) {
            return new ShardReader((Shard) partition);
        }
    }
}
