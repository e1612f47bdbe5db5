package dev.hashfile.spark;

import java.net.URI;
import java.nio.file.Path;

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
}
