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

    /** Open options about following newer generations, which a scan of one generation never does. */
    private static final Set<String> NOT_FOR_A_SCAN = Set.of("reload", "on_change", "memo");

    static ReadOptions of(Map<String, String> given) {
        String path = given.get("path");
        if (path == null || path.isEmpty()) {
            throw new IllegalArgumentException("the hashfile data source reads one dataset or store: load(path)");
        }
        Map<String, String> open = new HashMap<>();
        given.forEach((name, text) -> {
            if (!OWN.contains(name)) {
                String guess = DatasetTasks.closest(name, OWN);
                if (guess != null && !guess.equals("paths")) {
                    throw new IllegalArgumentException("unknown option " + name + " for reading a hashfile dataset "
                            + "(did you mean " + guess + "?); it takes key and value (with a schema), and open "
                            + "options by their names");
                }
                if (NOT_FOR_A_SCAN.contains(name)) {
                    throw new IllegalArgumentException(name + " does not apply to a Spark read: a job reads the one "
                            + "generation its driver planned, and fails if it is replaced meanwhile");
                }
                open.put(name, text);
            }
        });
        return new ReadOptions(Locations.of(path, false), given.getOrDefault("key", "key"), given.get("value"),
                new HashMap<>(DatasetTasks.fromText(open)));
    }

    /** These options reading {@code location} instead. */
    ReadOptions at(String location) {
        return new ReadOptions(location, key, value, open);
    }

    /**
     * Without a schema given: the key, and the value as JSON text. The
     * options key and value name fields of a declared schema; without one
     * they would only rename the two columns (a user who wrote with
     * {@code value} expects a read with it to pick that entry): refused.
     */
    StructType defaultSchema() {
        if (!key.equals("key") || value != null) {
            throw new IllegalArgumentException("the options key and value name fields of a declared schema "
                    + "(.schema(\"sku STRING, price DOUBLE\")); without one, a read gives the columns key and value, "
                    + "the value as JSON text (get_json_object or from_json take entries out of it)");
        }
        return new StructType()
                .add("key", DataTypes.StringType, false)
                .add("value", DataTypes.StringType, true);
    }
}
