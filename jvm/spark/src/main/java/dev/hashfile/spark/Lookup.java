package dev.hashfile.spark;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.spark.sql.api.java.UDF2;

import dev.hashfile.Reader;

/**
 * {@code hashfile_lookup(dataset, key)}: the value of {@code key} (a string,
 * an integer, keyed by its digits as the data source writes it, or binary)
 * in the dataset (or store, or URL) {@code dataset}, as JSON text; SQL
 * NULL if absent (a stored null is the text {@code null}). Each executor
 * JVM opens a dataset once, at its first lookup, and shares it across its
 * tasks and threads (a {@link Reader} is safe to share): one map of the
 * files, in the page cache once, however many tasks read it. A local store
 * or dataset, and a remote dataset, are checked for a newer generation at
 * most every second ({@code reload}), so a republished dataset is answered
 * from within a second; a remote store that is replaced fails the lookup
 * with {@code StaleException}. Parse the text with {@code from_json} or
 * {@code get_json_object} for typed columns.
 *
 * <p>Register it for SQL with {@link HashfileFunctions#register}, or from
 * PySpark with {@code spark.udf.registerJavaFunction("hashfile_lookup",
 * "dev.hashfile.spark.Lookup", "string")}.
 */
public final class Lookup implements UDF2<String, Object, String> {
    private static final long serialVersionUID = 1L;

    /** How often an open dataset looks for a newer generation, in seconds. */
    static final double RELOAD_SECONDS = 1.0;

    /** The datasets open in this JVM, by location: opened once, kept for the JVM's life. */
    private static final ConcurrentHashMap<String, Reader> OPEN = new ConcurrentHashMap<>();

    @Override
    public String call(String dataset, Object key) {
        if (dataset == null) {
            throw new IllegalArgumentException("hashfile_lookup's first argument is a dataset's location, not null");
        }
        if (key == null) {
            return null;
        }
        Object asked = key(key);
        Reader reader = reader(dataset);
        return asked instanceof String s ? reader.getJson(s) : reader.getJson((byte[]) asked);
    }

    /** The dataset at {@code dataset}, opened once in this JVM. */
    static Reader reader(String dataset) {
        return OPEN.computeIfAbsent(dataset, Lookup::open);
    }

    /** A key as a lookup takes it: a String (an integer's digits, as the writer keys integers) or byte[]. */
    static Object key(Object key) {
        if (key instanceof String || key instanceof byte[]) {
            return key;
        }
        if (key instanceof Long || key instanceof Integer || key instanceof Short || key instanceof Byte) {
            return key.toString();
        }
        throw new IllegalArgumentException("hashfile_lookup's key is a string, an integer or binary, not "
                + key.getClass().getName() + " (cast it: CAST(k AS STRING))");
    }

    private static Reader open(String dataset) {
        // A remote store (not a dataset) takes no reload: it fails with
        // StaleException when replaced, never answering from the old one.
        return Locations.open(Locations.of(dataset, false), Map.of(), RELOAD_SECONDS);
    }
}
