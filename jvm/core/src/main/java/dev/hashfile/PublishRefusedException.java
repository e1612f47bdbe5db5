package dev.hashfile;

import java.util.Map;

/**
 * A publish gate ({@code max_entry_change}, {@code max_type_change}, {@code
 * refuse_empty}) refused a dataset's new generation (PublishRefusedError):
 * {@link #gate()} names it, the message has the numbers. The current
 * generation stays, and nothing of the new one is left; {@code force}
 * publishes it anyway.
 */
public class PublishRefusedException extends HashfileException {
    private static final long serialVersionUID = 1L;

    PublishRefusedException(String message, Map<String, Object> attributes) {
        super(message, attributes);
    }

    /** The gate that refused: "max_entry_change", "max_type_change" or "refuse_empty". */
    public String gate() {
        return (String) attributes().get("gate");
    }
}
