package dev.hashfile;

import java.util.Map;

/** A store or dataset replaced under a reader that cannot follow it (Ruby's and Python's StaleError). */
public class StaleException extends HashfileException {
    private static final long serialVersionUID = 1L;

    StaleException(String message, Map<String, Object> attributes) {
        super(message, attributes);
    }
}
