package dev.hashfile;

import java.util.Map;

/** An input file that does not parse (ParseError), naming the input, line and column. */
public class ParseException extends HashfileException {
    private static final long serialVersionUID = 1L;

    ParseException(String message, Map<String, Object> attributes) {
        super(message, attributes);
    }
}
