package dev.hashfile.spark;

import java.io.Serializable;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import dev.hashfile.DatasetTasks;

/**
 * What {@code spark.read().format("hashfile")} was given: the location,
 * the names of the key and value columns, and the options every task opens
 * the dataset with ({@code verify}, {@code max_value_size}, the remote
 * ones), read as their kinds in the runtime's table.
 */
record ReadOptions(String path, String key, String value, HashMap<String, Object> open) implements Serializable {
    private static final long serialVersionUID = 1L;

    private static final Set<String> OWN = Set.of("path", "paths", "key", "value");

    static ReadOptions of(Map<String, String> given) {
        String path = given.get("path");
        if (path == null || path.isEmpty()) {
            throw new IllegalArgumentException("the hashfile data source reads one dataset or store: load(path)");
        }
        Map<String, String> open = new HashMap<>();
        given.forEach((name, text) -> {
            if (!OWN.contains(name)) {
                open.put(name, text);
            }
        });
        return new ReadOptions(path, given.getOrDefault("key", "key"), given.get("value"),
                new HashMap<>(DatasetTasks.fromText(open)));
    }

    /** Without a schema given: the key, and the value as JSON text. */
    StructType defaultSchema() {
        return new StructType()
                .add(key, DataTypes.StringType, false)
                .add(value == null ? "value" : value, DataTypes.StringType, true);
    }
}
