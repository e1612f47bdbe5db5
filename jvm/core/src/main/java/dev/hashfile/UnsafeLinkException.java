package dev.hashfile;

import java.util.Map;

/** An output path through a symbolic link another user owns (UnsafeLinkError). */
public class UnsafeLinkException extends HashfileException {
    private static final long serialVersionUID = 1L;

    UnsafeLinkException(String message, Map<String, Object> attributes) {
        super(message, attributes);
    }
}
