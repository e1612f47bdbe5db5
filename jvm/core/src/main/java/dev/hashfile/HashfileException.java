package dev.hashfile;

import java.util.Map;

/**
 * The base of every error Hashfile raises itself: Ruby's
 * {@code Hashfile::Error}, Python's {@code hashfile.Error}, with the same
 * messages. Bad arguments are {@link IllegalArgumentException}s and
 * operating system errors {@link java.io.UncheckedIOException}s, as a Java
 * library's are.
 */
public class HashfileException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final transient Map<String, Object> attributes;

    HashfileException(String message, Map<String, Object> attributes) {
        super(message);
        this.attributes = Map.copyOf(attributes);
    }

    HashfileException(String message) {
        this(message, Map.of());
    }

    /** What the error names, by the names Ruby and Python use ({@code path}, {@code key}, {@code line}, ...). */
    public Map<String, Object> attributes() {
        return attributes;
    }

    /** An allocation the native side could not make (a value too large for memory). */
    public static final class OutOfMemory extends HashfileException {
        private static final long serialVersionUID = 1L;

        OutOfMemory(String message) {
            super(message);
        }
    }
}
