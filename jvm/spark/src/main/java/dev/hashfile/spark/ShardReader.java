package dev.hashfile.spark;

import java.util.Iterator;
import java.util.Map;
import java.util.Objects;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.PartitionReader;

import dev.hashfile.Hashfile;
import dev.hashfile.Reader;

/** One task's read of one shard: its entries in stored order, as rows of the scan's schema. */
final class ShardReader implements PartitionReader<InternalRow> {
    private final Reader reader;
    private final Iterator<? extends Map.Entry<?, ?>> entries;
    private final RowMaker rows;
    private InternalRow current;

    ShardReader(ShardScan.Shard shard) {
        reader = Hashfile.open(shard.options().path(), shard.options().open());
        try {
            Object generation = reader.info().get("generation");
            if (!Objects.equals(generation, shard.generation())) {
                throw new IllegalStateException("the dataset at " + shard.options().path() + " was republished while "
                        + "this job read it (generation " + shard.generation() + " planned, " + generation
                        + " found); run the job again");
            }
            rows = new RowMaker(shard.schema(), shard.options());
            entries = rows.json() ? reader.shardJson(shard.shard()) : reader.shardEntries(shard.shard());
        } catch (RuntimeException e) {
            reader.close();
            throw e;
        }
    }

    @Override
    public boolean next() {
        if (!entries.hasNext()) {
            return false;
        }
        Map.Entry<?, ?> entry = entries.next();
        current = rows.row(entry.getKey(), entry.getValue());
        return true;
    }

    @Override
    public InternalRow get() {
        return current;
    }

    @Override
    public void close() {
        reader.close();
    }
}
