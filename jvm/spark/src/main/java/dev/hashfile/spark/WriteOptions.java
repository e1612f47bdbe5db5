package dev.hashfile.spark;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import dev.hashfile.DatasetTasks;

/**
 * What {@code df.write().format("hashfile")} was given: where, the key and
 * value columns, the shard count or a target shard size, and the build and
 * remote options every task takes (each option's text read as its kind in
 * the runtime's table, which judges it: {@link DatasetTasks#fromText}).
 */
record WriteOptions(String path, String key, List<String> value, Integer shards, Long targetShardBytes,
        Map<String, Object> build, Map<String, Object> remote) {

    /** The options this source reads itself; every other one is a build or remote option. */
    private static final Set<String> OWN = Set.of("path", "key", "value", "shards", "target_shard_bytes");
    private static final List<String> OWN_SHOWN = List.of("key", "value", "shards", "target_shard_bytes");

    static WriteOptions of(Map<String, String> given) {
        if (given.containsKey("__partition_columns")) {
            throw new IllegalArgumentException("partitionBy does not apply to a hashfile dataset: its rows are "
                    + "partitioned into shards by their keys' hash (the option shards)");
        }
        for (String name : given.keySet()) {
            String guess = OWN.contains(name) || DatasetTasks.REMOTE_OPTIONS.contains(name) ? null
                    : DatasetTasks.closest(name, OWN);
            if (guess != null) {
                throw new IllegalArgumentException("unknown option " + name + " for the hashfile data source (did you "
                        + "mean " + guess + "?); it takes " + String.join(", ", OWN_SHOWN)
                        + ", and build and remote options by their names");
            }
        }
        String path = Locations.of(required(given, "path", "save(path)"), true);
        String key = required(given, "key", ".option(\"key\", column)");
        String value = given.get("value");
        List<String> values = value == null ? null : List.of(value.split(",", -1)).stream().map(String::trim).toList();
        if (values != null && values.stream().anyMatch(String::isEmpty)) {
            throw new IllegalArgumentException("value is a column name or a list of them separated by commas, not \"" + value + "\"");
        }
        Integer shards = given.containsKey("shards") ? positive(given, "shards", DatasetTasks.MAX_SHARDS).intValue() : null;
        Long target = given.containsKey("target_shard_bytes") ? positive(given, "target_shard_bytes", Long.MAX_VALUE) : null;
        if ((shards == null) == (target == null)) {
            throw new IllegalArgumentException("give the option shards or target_shard_bytes, not both and not neither");
        }
        Map<String, String> build = new LinkedHashMap<>();
        Map<String, String> remote = new LinkedHashMap<>();
        given.forEach((name, text) -> {
            if (!OWN.contains(name)) {
                (DatasetTasks.REMOTE_OPTIONS.contains(name) ? remote : build).put(name, text);
            }
        });
        WriteOptions options = new WriteOptions(path, key, values, shards, target, DatasetTasks.fromText(build),
                DatasetTasks.fromText(remote));
        // Refused here, before any task starts, as every task would refuse them.
        DatasetTasks.checkOptions(options.build, options.remote);
        if (!remote.isEmpty() && !path.startsWith("s3://")) {
            throw new IllegalArgumentException("the remote options (" + String.join(", ", remote.keySet())
                    + ") are for an s3:// location, not " + path);
        }
        return options;
    }

    private static String required(Map<String, String> given, String name, String how) {
        String value = given.get(name);
        if (value == null || value.isEmpty()) {
            throw new IllegalArgumentException("the hashfile data source needs " + name + ": " + how);
        }
        return value;
    }

    private static Long positive(Map<String, String> given, String name, long max) {
        String text = given.get(name);
        try {
            long n = Long.parseLong(text.trim());
            if (n >= 1 && n <= max) {
                return n;
            }
        } catch (NumberFormatException e) {
            // Said below.
        }
        throw new IllegalArgumentException(name + " must be a whole number from 1 to " + max + ", not \"" + text + "\"");
    }
}
