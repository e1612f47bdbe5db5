package dev.hashfile;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.NoSuchFileException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The one factory of the exceptions the native side throws: the class the
 * runtime decided for an error (the names Ruby and Python raise, with
 * {@code Exception} for {@code Error}), its message, and its attributes.
 */
final class Errors {
    private Errors() {}

    private static final int ENOENT = 2;
    private static final int EACCES = 13;

    static RuntimeException make(String kind, String message, int errno, Object[] pairs) {
        Map<String, Object> attributes = new LinkedHashMap<>();
        for (int i = 0; i + 1 < pairs.length; i += 2) {
            if (pairs[i + 1] != null) {
                attributes.put((String) pairs[i], pairs[i + 1]);
            }
        }
        switch (kind) {
            case "Argument":
            case "Type":
            case "UnknownOption":
                return new IllegalArgumentException(message);
            case "NoMemory":
                return new HashfileException.OutOfMemory(message);
            case "Os": {
                String path = (String) attributes.get("path");
                IOException cause = errno == ENOENT ? new NoSuchFileException(path, null, message)
                        : errno == EACCES ? new AccessDeniedException(path, null, message)
                        : new IOException(message);
                return new UncheckedIOException(message, cause);
            }
            case "StaleError": return new StaleException(message, attributes);
            case "RemoteError": return new RemoteException(message, attributes);
            case "RemoteNotFoundError": return new RemoteException.NotFound(message, attributes);
            case "RemoteAccessError": return new RemoteException.Access(message, attributes);
            case "RemoteTimeoutError": return new RemoteException.Timeout(message, attributes);
            case "RemoteConnectionError": return new RemoteException.Connection(message, attributes);
            case "RemoteServerError": return new RemoteException.Server(message, attributes);
            case "RemoteProtocolError": return new RemoteException.Protocol(message, attributes);
            case "FormatError": return new FormatException(message, attributes);
            case "UnsupportedError": return new FormatException.Unsupported(message, attributes);
            case "DatasetError": return new FormatException.Dataset(message, attributes);
            case "ChecksumError": return new FormatException.Checksum(message, attributes);
            case "DuplicateKeyError": return new DuplicateKeyException(message, attributes);
            case "PublishRefusedError": return new PublishRefusedException(message, attributes);
            case "ParseError": return new ParseException(message, attributes);
            case "LimitError": return new LimitException(message, attributes);
            case "ClosedError": return new ClosedException(message, attributes);
            case "UnsafeLinkError": return new UnsafeLinkException(message, attributes);
            default: return new HashfileException(message, attributes);
        }
    }
}
