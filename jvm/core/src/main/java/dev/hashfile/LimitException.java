package dev.hashfile;

import java.util.Map;

/** A value or build past a limit (LimitError): max_value_size, the format's counts. */
public class LimitException extends HashfileException {
    private static final long serialVersionUID = 1L;

    LimitException(String message, Map<String, Object> attributes) {
        super(message, attributes);
    }
}
