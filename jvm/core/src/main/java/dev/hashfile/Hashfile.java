package dev.hashfile;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Hashfile from the JVM: open a store, a dataset or a URL; build one.
 *
 * <pre>{@code
 * Hashfile.build("prices.hf", Map.of("sku-1", 10L, "sku-2", Map.of("cents", 20L)));
 * try (Reader db = Hashfile.open("prices.hf")) {
 *     Object price = db.get("sku-1"); // 10L
 * }
 * }</pre>
 *
 * Options are the ones Ruby and Python take, by the same names
 * ({@code Map.of("verify", true, "max_value_size", 1 << 20)}), judged by
 * the same table: an unknown name, a wrong type or a value out of range is
 * an {@link IllegalArgumentException} with the message Ruby and Python give.
 */
public final class Hashfile {
    private Hashfile() {}

    /** Opens {@code location}: a store's path, a dataset's directory or manifest, or an http(s):// or s3:// URL. */
    public static Reader open(String location) {
        return open(location, Map.of());
    }

    /** {@link #open(String)} of a local path. */
    public static Reader open(java.nio.file.Path path) {
        return open(Objects.requireNonNull(path, "path").toString());
    }

    /** {@link #open(String, Map)} of a local path. */
    public static Reader open(java.nio.file.Path path, Map<String, ?> options) {
        return open(Objects.requireNonNull(path, "path").toString(), options);
    }

    /**
     * Whether {@code location} can be opened with {@code reload}: a local
     * store or dataset, or a remote dataset (the URL of its {@code
     * hashfile-dataset.json}). A remote store cannot: a read that finds it
     * replaced fails with {@link StaleException}.
     */
    public static boolean takesReload(String location) {
        return Native.takesReload(Objects.requireNonNull(location, "location"));
    }

    /** Opens {@code location} with options ({@code verify}, {@code reload}, {@code max_value_size}, the remote ones). */
    public static Reader open(String location, Map<String, ?> options) {
        Objects.requireNonNull(location, "location");
        return new Reader(Native.open(location, Native.pairs(Objects.requireNonNull(options, "options"))));
    }

    /**
     * Builds a store at {@code path} from {@code entries} (String or byte[]
     * keys; values as the {@link Reader} returns them), published whole or
     * not at all; with the option {@code shards}, a dataset in the
     * directory {@code path}. Returns the bytes written.
     */
    public static long build(String path, Map<?, ?> entries) {
        return build(path, entries, Map.of());
    }

    /** {@link #build(String, Map)} at a local path. */
    public static long build(java.nio.file.Path path, Map<?, ?> entries) {
        return build(Objects.requireNonNull(path, "path").toString(), entries, Map.of());
    }

    /** {@link #build(String, Map, Map)} at a local path. */
    public static long build(java.nio.file.Path path, Map<?, ?> entries, Map<String, ?> options) {
        return build(Objects.requireNonNull(path, "path").toString(), entries, options);
    }

    /** {@link #build(String, Map)} with options ({@code on_duplicate}, {@code compression}, {@code shards}, ...). */
    public static long build(String path, Map<?, ?> entries, Map<String, ?> options) {
        Objects.requireNonNull(path, "path");
        return Native.build(path, Native.pairs(Objects.requireNonNull(entries, "entries")),
                Native.pairs(Objects.requireNonNull(options, "options")));
    }

    /**
     * Imports the files {@code inputs} (CSV, TSV, JSON, JSON Lines, YAML,
     * lines; {@code -} is standard input) into a store at {@code output}
     * (with the option {@code shards}, a dataset), with the importer's
     * options ({@code key_column}, {@code records_at}, {@code format},
     * ...), published whole or not at all. Returns {@code entries} and
     * {@code file_bytes}.
     */
    public static Map<String, Long> buildFrom(java.util.List<String> inputs, String output, Map<String, ?> options) {
        Objects.requireNonNull(output, "output");
        long[] summary = Native.buildFrom(inputs.toArray(new String[0]), output,
                Native.pairs(Objects.requireNonNull(options, "options")));
        Map<String, Long> out = new java.util.LinkedHashMap<>();
        out.put("entries", summary[0]);
        out.put("file_bytes", summary[1]);
        return out;
    }

    /** {@link #buildFrom(java.util.List, String, Map)} of one file, without options. */
    public static Map<String, Long> buildFrom(String input, String output) {
        return buildFrom(java.util.List.of(input), output, Map.of());
    }

    /**
     * The publishes the dataset at {@code dataset} keeps, newest (the
     * current one) first: each a map of {@code generation}, {@code
     * published_at} (UTC text), {@code entries}, {@code bytes}, {@code
     * shards}, {@code tool} (what published it), {@code note}, {@code
     * rollback} (whether it made an earlier generation current again),
     * {@code forced} (the gate refusal it overrode, or null), {@code current}, {@code keep}, {@code retain_seconds} and {@code
     * sequence}. {@code dataset} is its directory, its manifest's path or
     * URL, or an {@code s3://} prefix; {@code options} are the remote ones of
     * {@link #open(String, Map)}. A {@link FormatException.Dataset} if there
     * is no dataset there.
     */
    @SuppressWarnings("unchecked")
    public static List<Map<String, Object>> history(String dataset, Map<String, ?> options) {
        return (List<Map<String, Object>>) Native.history(Objects.requireNonNull(dataset, "dataset"),
                Native.pairs(Objects.requireNonNull(options, "options")));
    }

    /** {@link #history(String, Map)} without options. */
    public static List<Map<String, Object>> history(String dataset) {
        return history(dataset, Map.of());
    }

    /**
     * Makes {@code generation} of a dataset (one its history keeps; null:
     * the newest kept one before the current one) current again: publishes
     * its manifest anew, rebuilding nothing, once its shards are checked.
     * Readers opened with {@code reload} move to it at their next check;
     * those opened with {@code generation} stay. The option {@code note} is
     * kept in the history; the others are the remote ones of {@link
     * #open(String, Map)}. Returns a map of {@code generation}, {@code
     * entries}, {@code shards} and {@code sequence}. A {@link
     * FormatException.Dataset} if the generation is not kept, is the current
     * one, or a shard of it is missing or not the one its manifest lists.
     */
    @SuppressWarnings("unchecked")
    public static Map<String, Object> rollback(String dataset, String generation, Map<String, ?> options) {
        return (Map<String, Object>) Native.rollback(Objects.requireNonNull(dataset, "dataset"), generation,
                Native.pairs(Objects.requireNonNull(options, "options")));
    }

    /**
     * Changes a few keys of a local dataset without rebuilding it: publishes
     * a delta generation that reuses every shard file and adds, for each
     * shard the changes touch, a small overlay store read before the shard
     * (a deleted key is a tombstone there). {@code upserts} maps keys
     * (String or byte[]) to the values to put (as {@link #build(String,
     * Map)} takes them); {@code deletes} lists keys to delete. Options:
     * {@code on_duplicate}, {@code on_missing} ("error", or "ignore": a
     * delete of a key the dataset does not hold is dropped), {@code
     * compact_overlays}, {@code compact_fraction}, {@code keep}, {@code
     * retain}, {@code note} and the publish gates. Returns a map of {@code
     * generation}, {@code entries}, {@code shards}, {@code sequence}, {@code
     * added}, {@code changed}, {@code unchanged}, {@code deleted}, {@code ignored}, {@code
     * overlays_written}, {@code shards_compacted}, {@code bytes_written} and
     * {@code published}.
     */
    @SuppressWarnings("unchecked")
    public static Map<String, Object> patch(String dataset, Map<?, ?> upserts, java.util.Collection<?> deletes,
            Map<String, ?> options) {
        return (Map<String, Object>) Native.patch(Objects.requireNonNull(dataset, "dataset"),
                Native.pairs(Objects.requireNonNull(upserts, "upserts")),
                Objects.requireNonNull(deletes, "deletes").toArray(), null,
                Native.pairs(Objects.requireNonNull(options, "options")));
    }

    /**
     * {@link #patch(String, Map, java.util.Collection, Map)} of the changes
     * in a JSON Lines file: lines {@code {"key": K, "value": V}} and {@code
     * {"key": K, "delete": true}}.
     */
    @SuppressWarnings("unchecked")
    public static Map<String, Object> patch(String dataset, String changesFile, Map<String, ?> options) {
        return (Map<String, Object>) Native.patch(Objects.requireNonNull(dataset, "dataset"), null, null,
                Objects.requireNonNull(changesFile, "changesFile"),
                Native.pairs(Objects.requireNonNull(options, "options")));
    }

    /**
     * Folds every overlay of a local dataset into new shard files, one shard
     * at a time, and publishes a generation that reads the same. Options
     * {@code keep}, {@code retain} and {@code note}. Returns what {@link
     * #patch(String, Map, java.util.Collection, Map)} returns.
     */
    @SuppressWarnings("unchecked")
    public static Map<String, Object> compact(String dataset, Map<String, ?> options) {
        return (Map<String, Object>) Native.compact(Objects.requireNonNull(dataset, "dataset"),
                Native.pairs(Objects.requireNonNull(options, "options")));
    }

    /**
     * What changed from {@code a} to {@code b} (two stores, two datasets, or
     * two generations of one: options {@code generation_a}, {@code
     * generation_b}), reading each side in stored order and looking its keys
     * up in the other, in parallel ({@code threads}), in bounded memory.
     * {@code each} (may be null) is given each change as one line of JSON,
     * keys removed or changed in {@code a}'s order, then keys added in
     * {@code b}'s: {@code {"op":"changed","key":"k2","before":"x","after":{"n":2}}}
     * ({@code values} false: the key alone). Returns the summary: {@code
     * entries_a}, {@code entries_b}, {@code added}, {@code removed}, {@code
     * changed}, {@code unchanged}, {@code type_changed}, {@code type_changes}
     * (each {@code from}, {@code to}, {@code keys}), {@code bytes_added},
     * {@code bytes_removed}, {@code changed_bytes_before}, {@code
     * changed_bytes_after} and {@code shards} (the changes per shard of
     * {@code b}). The remote options of {@link #open(String, Map)} reach both.
     * An exception {@code each} throws stops the diff and is thrown.
     */
    @SuppressWarnings("unchecked")
    public static Map<String, Object> diff(String a, String b, Map<String, ?> options,
            java.util.function.Consumer<String> each) {
        return (Map<String, Object>) Native.diff(Objects.requireNonNull(a, "a"), Objects.requireNonNull(b, "b"),
                Native.pairs(Objects.requireNonNull(options, "options")), each);
    }

    /**
     * {@link #diff(String, String, Map, java.util.function.Consumer)} of one
     * dataset: its generation published before the current one against the
     * current one (or before {@code generation_b} against it).
     */
    public static Map<String, Object> diff(String dataset, Map<String, ?> options,
            java.util.function.Consumer<String> each) {
        return diff(dataset, dataset, options, each);
    }

    /** The shard ({@code 0..shards}) of {@code key} in a dataset of {@code shards}, as every language routes it. */
    public static int shardOf(String key, int shards) {
        return Native.route(Native.utf8(key), shards);
    }

    /** {@link #shardOf(String, int)} of a key of bytes. */
    public static int shardOf(byte[] key, int shards) {
        return Native.route(java.util.Objects.requireNonNull(key, "key"), shards);
    }
}
