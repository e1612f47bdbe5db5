package dev.hashfile.spark;

import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A dataset (or one store) as Spark reads it: batch reads only. Writes go
 * through {@link HashfileSource#createRelation}, which Spark falls back to
 * for a table that does not declare {@code BATCH_WRITE}.
 */
final class HashfileTable implements SupportsRead {
    private final StructType schema;
    private final Map<String, String> properties;

    HashfileTable(StructType schema, Map<String, String> properties) {
        this.schema = schema;
        this.properties = properties;
    }

    @Override
    public String name() {
        return "hashfile:" + properties.getOrDefault("path", "");
    }

    @Override
    public Column[] columns() {
        return java.util.Arrays.stream(schema.fields())
                .map(f -> Column.create(f.name(), f.dataType(), f.nullable()))
                .toArray(Column[]::new);
    }

    @Override
    public Set<TableCapability> capabilities() {
        return Set.of(TableCapability.BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        ReadOptions read = ReadOptions.of(options);
        return () -> new ShardScan(schema, read);
    }
}
