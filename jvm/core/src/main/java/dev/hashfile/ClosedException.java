package dev.hashfile;

import java.util.Map;

/** A call on a closed reader (ClosedError). */
public class ClosedException extends HashfileException {
    private static final long serialVersionUID = 1L;

    ClosedException(String message, Map<String, Object> attributes) {
        super(message, attributes);
    }
}
