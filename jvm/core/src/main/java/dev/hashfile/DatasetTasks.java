package dev.hashfile;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The driver's half of a dataset written by many tasks ({@link
 * ShardWriter}): a generation id for the job, the options checked before
 * any task starts, the manifest published once every shard is checked, and
 * a failed job's shards removed. The runtime's protocol, as Python's
 * {@code hashfile.spark} uses it.
 */
public final class DatasetTasks {
    /** The most shards a dataset has. */
    public static final int MAX_SHARDS = Native.maxShards();

    /** The options that say how to reach a remote store (S3's endpoint, region, timeouts): a task's, apart from its build options. */
    public static final java.util.Set<String> REMOTE_OPTIONS = java.util.Set.of(Native.remoteOptionNames());

    private DatasetTasks() {}

    /** A new generation id, for every task of one job to write under. */
    public static String newGeneration() {
        return Native.newGeneration();
    }

    /**
     * Options given as text (Spark's {@code .option("load_factor", "0.9")})
     * as the objects they stand for, by each option's kind in the runtime's
     * table: {@code "0.9"} a {@code Double}, {@code "8"} a {@code Long},
     * {@code "true"} a {@code Boolean}. Text that does not read as its kind
     * stays text, for the table to refuse with its message.
     */
    public static Map<String, Object> fromText(Map<String, String> options) {
        Map<String, Object> out = new java.util.LinkedHashMap<>();
        options.forEach((name, text) -> out.put(name, Native.optionFromText(
                Objects.requireNonNull(name, "option name"), Objects.requireNonNull(text, name))));
        return out;
    }

    /**
     * The name of {@code known} closest to {@code name}, if one is close
     * enough to be what was meant (the runtime's "did you mean", the guess
     * every binding's unknown-option message makes), else null.
     */
    public static String closest(String name, java.util.Collection<String> known) {
        return Native.closest(Objects.requireNonNull(name, "name"), known.toArray(new String[0]));
    }

    /** Throws what every task would for these options, before a job starts them. */
    public static void checkOptions(Map<String, ?> options, Map<String, ?> remote) {
        Native.checkBuildOptions(Native.pairs(Objects.requireNonNull(options, "options")),
                Native.pairs(Objects.requireNonNull(remote, "remote")));
    }

    /**
     * Checks that every shard of {@code 0..shardCount} was reported once
     * and that each file holds what its report says (entries, length,
     * header checksum), then publishes the manifest (a rename, or one PUT);
     * returns the manifest's JSON. {@code options} are the job's build
     * options: their publish ones ({@code keep}, {@code retain}, {@code
     * note}, and the gates {@code max_entry_change}, {@code
     * max_type_change}, {@code refuse_empty}, {@code force}) apply here; a
     * gate that refuses throws {@link PublishRefusedException} and removes
     * the job's shards. The generation it replaces is retired as any build
     * retires it.
     */
    public static String publish(String location, String generation, int shardCount, List<ShardReport> reports,
            Map<String, ?> options, Map<String, ?> remote) {
        String[] fields = new String[4 * reports.size()];
        for (int i = 0; i < reports.size(); i++) {
            System.arraycopy(reports.get(i).fields(), 0, fields, 4 * i, 4);
        }
        return Native.publishShards(Objects.requireNonNull(location, "location"),
                Objects.requireNonNull(generation, "generation"), shardCount, fields,
                Native.pairs(Objects.requireNonNull(options, "options")),
                Native.pairs(Objects.requireNonNull(remote, "remote")));
    }

    /** {@link #publish(String, String, int, List, Map, Map)} with no publish options. */
    public static String publish(String location, String generation, int shardCount, List<ShardReport> reports,
            Map<String, ?> remote) {
        return publish(location, generation, shardCount, reports, Map.of(), remote);
    }

    /** Removes what a failed job wrote of {@code generation}; what readers read is not touched. */
    public static void discard(String location, String generation, Map<String, ?> remote) {
        Native.discardGeneration(Objects.requireNonNull(location, "location"),
                Objects.requireNonNull(generation, "generation"),
                Native.pairs(Objects.requireNonNull(remote, "remote")));
    }
}
