package dev.hashfile;

import java.util.Map;

/** A file that is not a store, or a damaged one (FormatError); its kinds nested. */
public class FormatException extends HashfileException {
    private static final long serialVersionUID = 1L;

    FormatException(String message, Map<String, Object> attributes) {
        super(message, attributes);
    }

    /** A well-formed store holding what Java cannot return faithfully, or a feature this release does not read. */
    public static final class Unsupported extends FormatException {
        private static final long serialVersionUID = 1L;

        Unsupported(String message, Map<String, Object> attributes) {
            super(message, attributes);
        }
    }

    /** A dataset whose manifest and shards disagree. */
    public static final class Dataset extends FormatException {
        private static final long serialVersionUID = 1L;

        Dataset(String message, Map<String, Object> attributes) {
            super(message, attributes);
        }
    }

    /** A checksum that does not match ({@code verify}). */
    public static final class Checksum extends FormatException {
        private static final long serialVersionUID = 1L;

        Checksum(String message, Map<String, Object> attributes) {
            super(message, attributes);
        }
    }
}
