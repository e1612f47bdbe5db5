package dev.hashfile;

import java.util.Map;

/** A remote store or dataset that could not be read (RemoteError); its kinds nested. */
public class RemoteException extends HashfileException {
    private static final long serialVersionUID = 1L;

    RemoteException(String message, Map<String, Object> attributes) {
        super(message, attributes);
    }

    /** The server has no such object (404). */
    public static final class NotFound extends RemoteException {
        private static final long serialVersionUID = 1L;

        NotFound(String message, Map<String, Object> attributes) {
            super(message, attributes);
        }
    }

    /** Refused: credentials or permissions (401, 403). */
    public static final class Access extends RemoteException {
        private static final long serialVersionUID = 1L;

        Access(String message, Map<String, Object> attributes) {
            super(message, attributes);
        }
    }

    /** No answer in time. */
    public static final class Timeout extends RemoteException {
        private static final long serialVersionUID = 1L;

        Timeout(String message, Map<String, Object> attributes) {
            super(message, attributes);
        }
    }

    /** No connection. */
    public static final class Connection extends RemoteException {
        private static final long serialVersionUID = 1L;

        Connection(String message, Map<String, Object> attributes) {
            super(message, attributes);
        }
    }

    /** The server failed (5xx). */
    public static final class Server extends RemoteException {
        private static final long serialVersionUID = 1L;

        Server(String message, Map<String, Object> attributes) {
            super(message, attributes);
        }
    }

    /** An answer that breaks HTTP's or S3's rules. */
    public static final class Protocol extends RemoteException {
        private static final long serialVersionUID = 1L;

        Protocol(String message, Map<String, Object> attributes) {
            super(message, attributes);
        }
    }
}
