package dev.hashfile.spark;

import java.util.concurrent.ConcurrentHashMap;

import org.apache.spark.sql.api.java.UDF2;

import dev.hashfile.Hashfile;
import dev.hashfile.Reader;

/**
 * {@code hashfile_lookup(dataset, key)}: the value of {@code key} in the
 * dataset (or store, or URL) {@code dataset}, as JSON text, or null if
 * absent. Each executor JVM opens a dataset once, at its first lookup, and
 * shares it across its tasks and threads (a {@link Reader} is safe to
 * share): one map of the files, in the page cache once, however many tasks
 * read it. Parse the text with {@code from_json} for typed columns.
 *
 * <p>Register it for SQL with {@link HashfileFunctions#register}, or from
 * PySpark with {@code spark.udf.registerJavaFunction("hashfile_lookup",
 * "dev.hashfile.spark.Lookup", "string")}.
 */
public final class Lookup implements UDF2<String, String, String> {
    private static final long serialVersionUID = 1L;

    /** The datasets open in this JVM, by location: opened once, kept for the JVM's life. */
    private static final ConcurrentHashMap<String, Reader> OPEN = new ConcurrentHashMap<>();

    @Override
    public String call(String dataset, String key) {
        if (dataset == null) {
            throw new IllegalArgumentException("hashfile_lookup's first argument is a dataset's location, not null");
        }
        if (key == null) {
            return null;
        }
        return OPEN.computeIfAbsent(dataset, Hashfile::open).getJson(key);
    }
}
