package dev.hashfile;

import java.util.Map;

/** A key given twice to a build that keeps one (DuplicateKeyError); {@code attributes()} names the key. */
public class DuplicateKeyException extends HashfileException {
    private static final long serialVersionUID = 1L;

    DuplicateKeyException(String message, Map<String, Object> attributes) {
        super(message, attributes);
    }
}
