package dev.hashfile.spark;

import java.net.URI;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import dev.hashfile.Hashfile;
import dev.hashfile.Reader;
import dev.hashfile.RemoteException;

/**
 * A location as Spark users write it, as the runtime takes it: a local
 * path ({@code file:} URIs, which Spark users often have, made plain
 * paths), {@code s3://}, and for reads {@code http(s)://}. Any other
 * scheme ({@code hdfs://}, {@code gs://}) is refused by name: the runtime
 * reads none of them, and a path that merely looked local would name a
 * directory that is not there.
 */
final class Locations {
    private Locations() {}

    static String of(String location, boolean forWriting) {
        if (location.startsWith("file:")) {
            try {
                return Path.of(URI.create(location)).toString();
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("\"" + location + "\" is not a file: URI of a local path ("
                        + e.getMessage() + ")", e);
            }
        }
        int scheme = location.indexOf("://");
        if (scheme > 0) {
            String name = location.substring(0, scheme);
            boolean known = name.equals("s3") || (!forWriting && (name.equals("http") || name.equals("https")));
            if (!known) {
                throw new IllegalArgumentException("hashfile " + (forWriting ? "writes" : "reads") + " local paths"
                        + (forWriting ? " and s3:// locations" : ", http(s):// and s3:// locations") + ", not "
                        + name + "://: " + location);
            }
        }
        return location;
    }

    /** The name of a dataset's manifest, which a remote dataset is opened by. */
    static final String MANIFEST = "hashfile-dataset.json";

    /**
     * Opens what {@code save(location)} wrote, for reading: a local path as
     * it is (a directory opens as a dataset); a remote location as the
     * dataset under that prefix if its manifest is there, else as a store
     * (an {@code .hf} at that URL). {@code reloadSeconds}, if not null, is
     * given where a reload applies: a dataset, or a local store.
     */
    static Reader open(String location, Map<String, ?> options, Double reloadSeconds) {
        if (!location.contains("://") || location.endsWith("/" + MANIFEST) || names(location)) {
            return openAsIs(location, options, reloadSeconds);
        }
        String manifest = location.replaceAll("/+$", "") + "/" + MANIFEST;
        RemoteException probe;
        try {
            return Hashfile.open(manifest, withReload(options, reloadSeconds));
        } catch (RemoteException.NotFound | RemoteException.Access | RemoteException.Protocol e) {
            // No dataset under the prefix: the URL of a store, or nothing.
            // (S3 answers 403 for a key that is not there to a caller that
            // may not list the bucket; a web server may answer a path it
            // does not have with a redirect or a page.)
            probe = e;
        }
        try {
            return openAsIs(location, options, reloadSeconds);
        } catch (RemoteException e) {
            e.addSuppressed(probe);
            throw e;
        }
    }

    /**
     * Whether an http(s) URL names one object by its query or fragment (a
     * presigned URL): no prefix to look under. An s3:// key may hold
     * {@code ?} and {@code #}.
     */
    private static boolean names(String location) {
        return (location.startsWith("http://") || location.startsWith("https://"))
                && (location.contains("?") || location.contains("#"));
    }

    private static Reader openAsIs(String location, Map<String, ?> options, Double reloadSeconds) {
        return Hashfile.takesReload(location)
                ? Hashfile.open(location, withReload(options, reloadSeconds))
                : Hashfile.open(location, options);
    }

    private static Map<String, ?> withReload(Map<String, ?> options, Double reloadSeconds) {
        if (reloadSeconds == null) {
            return options;
        }
        Map<String, Object> out = new HashMap<>(options);
        out.put("reload", reloadSeconds);
        return out;
    }
}
