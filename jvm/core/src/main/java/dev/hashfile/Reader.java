package dev.hashfile;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;

/**
 * An open store, dataset or URL: lookups by key, in one hash, one slot,
 * one record. Safe to share between threads. Values come back as
 * {@code String}, {@code byte[]}, {@code Long} or {@code BigInteger},
 * {@code Double}, {@code Boolean}, {@code null}, {@code List} and
 * {@code Map} in stored order (docs/JVM.md has the table).
 *
 * <p>{@link #close()} closes at once for every later call ({@link
 * ClosedException}); the native memory goes when the reader is no longer
 * reachable.
 */
public final class Reader implements AutoCloseable, Iterable<Map.Entry<Object, Object>> {
    private static final Cleaner CLEANER = Cleaner.create();
    /** Stands for "absent" in calls that return a value or a default. */
    private static final Object MISSING = new Object();
    /** Entries per native call while iterating. */
    private static final int CHUNK = 1024;

    private final long handle;
    /** The values of recent lookups, if opened with {@code memo}. */
    private final Memo memo;

    Reader(long handle) {
        this.handle = handle;
        CLEANER.register(this, () -> Native.free(handle));
        int limit = Native.memoLimit(handle);
        this.memo = limit > 0 ? new Memo(handle, limit) : null;
    }

    private static byte[] bytes(String key) {
        return Native.utf8(key);
    }

    /** The value of {@code key}, or null if absent (a stored null is null too: see {@link #containsKey}). */
    public Object get(String key) {
        return getOrDefault(key, null);
    }

    /** The value of a key of bytes, or null. */
    public Object get(byte[] key) {
        return getOrDefault(key, null);
    }

    /**
     * The value of {@code key} as JSON text (what the command line's {@code
     * get --json} prints), or null if absent. A value JSON cannot hold (a
     * binary string that is not UTF-8, a float that is not finite) is a
     * {@link HashfileException} naming the key, as in Ruby and Python.
     */
    public String getJson(String key) {
        return getJson(bytes(key));
    }

    /** {@link #getJson(String)} of a key of bytes. */
    public String getJson(byte[] key) {
        java.util.Objects.requireNonNull(key, "key");
        try {
            return Native.getJson(handle, key);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * The values of {@code keys} (String or byte[]) as JSON text, in order,
     * null where absent: {@link #getJson(String)} in one batch per store
     * (for a remote store, its requests together).
     */
    public String[] getManyJson(List<?> keys) {
        byte[][] asked = new byte[keys.size()][];
        for (int i = 0; i < asked.length; i++) {
            Object key = keys.get(i);
            if (key instanceof String s) {
                asked[i] = bytes(s);
            } else if (key instanceof byte[] b) {
                asked[i] = b;
            } else {
                throw new IllegalArgumentException("a key is a String or a byte[], not "
                        + (key == null ? "null" : key.getClass().getName()));
            }
        }
        try {
            Object[] values = Native.getManyJson(handle, asked);
            return java.util.Arrays.copyOf(values, values.length, String[].class);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** The value of {@code key} if it is a String, null if absent; a value of another type is a {@link ClassCastException} naming it. */
    public String getString(String key) {
        return typed(key, String.class, "a String");
    }

    /** The value of {@code key} if it is an integer that fits a long, null if absent (else {@link ClassCastException}). */
    public Long getLong(String key) {
        return typed(key, Long.class, "a Long (an integer past 64 bits is a BigInteger: get it with get)");
    }

    /** The value of {@code key} if it is a float, null if absent (else {@link ClassCastException}). */
    public Double getDouble(String key) {
        return typed(key, Double.class, "a Double");
    }

    /** The value of {@code key} if it is true or false, null if absent (else {@link ClassCastException}). */
    public Boolean getBoolean(String key) {
        return typed(key, Boolean.class, "a Boolean");
    }

    /** The value of {@code key} if it is a binary string, null if absent (else {@link ClassCastException}). */
    public byte[] getBytes(String key) {
        return typed(key, byte[].class, "a byte[] (a binary string)");
    }

    /** The value of {@code key} if it is a list, null if absent (else {@link ClassCastException}). */
    @SuppressWarnings("unchecked")
    public List<Object> getList(String key) {
        return typed(key, List.class, "a List");
    }

    /** The value of {@code key} if it is a map, in stored order, null if absent (else {@link ClassCastException}). */
    @SuppressWarnings("unchecked")
    public Map<Object, Object> getMap(String key) {
        return typed(key, Map.class, "a Map");
    }

    /** The value of {@code key} as {@code type}; a stored null and an absent key are both null. */
    @SuppressWarnings("unchecked")
    private <T> T typed(String key, Class<?> type, String wanted) {
        Object value = get(key);
        if (value == null || type.isInstance(value)) {
            return (T) value;
        }
        String kind = value instanceof byte[] ? "a byte[]" : "a " + value.getClass().getSimpleName();
        throw new ClassCastException("the value of key \"" + key + "\" in " + location() + " is " + kind
                + ", not " + wanted);
    }

    /** The value of {@code key}, or {@code fallback} if absent. */
    public Object getOrDefault(String key, Object fallback) {
        if (memo == null) {
            return getOrDefault(bytes(key), fallback);
        }
        // The generation before the store: a value read from a newer store
        // than its generation says is dropped by the next lookup, never the
        // reverse. A hit needs no key bytes.
        try {
            long generation = memo.generation();
            Object found = memo.find(key, generation, MISSING);
            if (found != MISSING) {
                return found;
            }
            Object value = Native.get(handle, bytes(key), MISSING);
            return value == MISSING ? fallback : memo.keep(key, generation, value);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** The value of a key of bytes, or {@code fallback} if absent. */
    public Object getOrDefault(byte[] key, Object fallback) {
        java.util.Objects.requireNonNull(key, "key");
        try {
            Object value = Native.get(handle, key, MISSING);
            return value == MISSING ? fallback : value;
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * The value at {@code path} inside the value of {@code key} (map keys
     * and list indexes, negative from the end), or null if a step finds
     * nothing. Keys compare as Ruby's {@code Hash#dig} and Python's
     * {@code dig} compare them: a {@code Long} or {@code Integer} finds an
     * Integer key (not a Float or true), a {@code Double} a Float key, a
     * {@code Boolean} true or false, a {@code String} a String or Symbol
     * key. Only the part the path ends on is decoded.
     */
    public Object dig(String key, Object... path) {
        return dig(bytes(key), path);
    }

    /** {@link #dig(String, Object...)} of a key of bytes. */
    public Object dig(byte[] key, Object... path) {
        java.util.Objects.requireNonNull(key, "key");
        Object[] found;
        try {
            found = Native.dig(handle, key, path);
        } finally {
            Reference.reachabilityFence(this);
        }
        if (found == null) {
            return null;
        }
        Object value = found[1];
        for (int i = (int) (long) (Long) found[0]; i < path.length; i++) {
            Object step = path[i] instanceof Integer ? (Object) (long) (Integer) path[i] : path[i];
            if (value instanceof Map) {
                value = ((Map<?, ?>) value).get(step);
            } else if (value instanceof List && step instanceof Long) {
                List<?> list = (List<?>) value;
                long at = (Long) step < 0 ? list.size() + (Long) step : (Long) step;
                value = at >= 0 && at < list.size() ? list.get((int) at) : null;
            } else {
                return null;
            }
        }
        return value;
    }

    /** Whether {@code key} is stored. */
    public boolean containsKey(String key) {
        return containsKey(bytes(key));
    }

    /** Whether a key of bytes is stored. */
    public boolean containsKey(byte[] key) {
        java.util.Objects.requireNonNull(key, "key");
        try {
            return Native.containsKey(handle, key);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** The number of entries. */
    public long size() {
        try {
            return Native.size(handle);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * The values of {@code keys} (String or byte[]), in order, null where
     * absent: one batch per store (for a remote store, its requests
     * together).
     */
    public List<Object> getMany(List<?> keys) {
        return getMany(keys, null);
    }

    /** {@link #getMany(List)} with {@code ifMissing} where a key is absent (a stored null stays null). */
    public List<Object> getMany(List<?> keys, Object ifMissing) {
        byte[][] asked = new byte[keys.size()][];
        for (int i = 0; i < asked.length; i++) {
            Object key = keys.get(i);
            if (key instanceof String) {
                asked[i] = bytes((String) key);
            } else if (key instanceof byte[]) {
                asked[i] = (byte[]) key;
            } else {
                throw new IllegalArgumentException("a key is a String or a byte[], not "
                        + (key == null ? "null" : key.getClass().getName()));
            }
        }
        try {
            if (memo != null) {
                return getManyMemoized(keys, asked, ifMissing);
            }
            Object[] values = Native.getMany(handle, asked, ifMissing);
            List<Object> out = new ArrayList<>(values.length);
            for (Object v : values) {
                out.add(v);
            }
            return out;
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** {@link #getMany(List, Object)} through the memo: its values for the String keys it holds, one batch for the rest. */
    private List<Object> getManyMemoized(List<?> keys, byte[][] asked, Object ifMissing) {
        long generation = memo.generation();
        List<Object> out = new ArrayList<>(asked.length);
        List<Integer> missed = new ArrayList<>();
        for (int i = 0; i < asked.length; i++) {
            Object found = keys.get(i) instanceof String s ? memo.find(s, generation, MISSING) : MISSING;
            out.add(found);
            if (found == MISSING) {
                missed.add(i);
            }
        }
        if (missed.isEmpty()) {
            return out;
        }
        byte[][] rest = new byte[missed.size()][];
        for (int j = 0; j < rest.length; j++) {
            rest[j] = asked[missed.get(j)];
        }
        Object[] values = Native.getMany(handle, rest, MISSING);
        if (memo.generation() != generation) {
            // A newer store came between the memo's hits and the batch: the
            // whole batch again from one store, as without a memo.
            Object[] all = Native.getMany(handle, asked, ifMissing);
            return new ArrayList<>(java.util.Arrays.asList(all));
        }
        // A key asked twice gets the one object the memo keeps.
        Map<String, Object> kept = new java.util.HashMap<>();
        for (int j = 0; j < values.length; j++) {
            int i = missed.get(j);
            Object value = values[j];
            if (value == MISSING) {
                out.set(i, ifMissing);
            } else if (keys.get(i) instanceof String s) {
                out.set(i, kept.containsKey(s) ? kept.get(s) : memo.keep(s, generation, value));
                kept.putIfAbsent(s, out.get(i));
            } else {
                out.set(i, value);
            }
        }
        return out;
    }

    /** Every entry in stored order: key (String, or byte[] for a key stored as bytes) and value. */
    @Override
    public Iterator<Map.Entry<Object, Object>> iterator() {
        return pinned().chunks(this, -1, false);
    }

    /**
     * The entries of one shard of a dataset ({@code 0} of a store) in
     * stored order, as {@link #iterator()} gives them: what one task of a
     * distributed job reads.
     */
    public Iterator<Map.Entry<Object, Object>> shardEntries(int shard) {
        return pinned().checkedShard(shard).chunks(this, shard, false);
    }

    /**
     * The entries of one shard with each key a {@code String} and each value
     * its JSON text (what the command line's {@code dump} prints; a key that
     * is not UTF-8, a binary value or a float that JSON cannot hold is a
     * {@link HashfileException}, naming the key): what Spark reads.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    public Iterator<Map.Entry<String, String>> shardJson(int shard) {
        return (Iterator) pinned().checkedShard(shard).chunks(this, shard, true);
    }

    /** This (pinned) reader, if its table has {@code shard}: the same generation the entries will come from. */
    private Reader checkedShard(int shard) {
        int count;
        try {
            count = Native.shardCount(handle);
        } finally {
            Reference.reachabilityFence(this);
        }
        if (shard < 0 || shard >= count) {
            String message = "shard " + shard + " of " + location() + ", which has shards 0 to " + (count - 1);
            close();
            throw new IllegalArgumentException(message);
        }
        return this;
    }

    /**
     * A reader of this one's current table alone, which no reload
     * replaces: one store (one dataset generation) from an iteration's
     * start to its end, freed with the iterator.
     */
    private Reader pinned() {
        try {
            return new Reader(Native.pin(handle));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * This (pinned) reader's entries in stored order, of every shard (-1) or
     * of one, decoded or as JSON; {@code owner}'s close ends them.
     */
    private Iterator<Map.Entry<Object, Object>> chunks(Reader owner, int shard, boolean json) {
        return new Iterator<>() {
            private long[] cursor = {Math.max(shard, 0), 0, 0};
            private Object[] chunk = new Object[0];
            private int at = 1;

            @Override
            public boolean hasNext() {
                while (at >= chunk.length && cursor != null) {
                    if (owner.isClosed()) {
                        owner.size(); // the runtime's ClosedException, naming the store
                    }
                    try {
                        chunk = json ? Native.jsonChunk(handle, cursor, CHUNK, shard >= 0)
                                : Native.chunk(handle, cursor, CHUNK, shard >= 0);
                    } finally {
                        Reference.reachabilityFence(Reader.this);
                    }
                    cursor = (long[]) chunk[0];
                    at = 1;
                }
                return at < chunk.length;
            }

            @Override
            public Map.Entry<Object, Object> next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                Map.Entry<Object, Object> entry = new java.util.AbstractMap.SimpleImmutableEntry<>(chunk[at], chunk[at + 1]);
                at += 2;
                return entry;
            }
        };
    }

    /** Checks every checksum (and, for a dataset, every shard against its manifest and every key against its shard). */
    public void verify() {
        try {
            Native.verify(handle);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Sizes, layout, compression and, for a dataset, its generation and shards: the keys Ruby's and Python's {@code info} have. */
    @SuppressWarnings("unchecked")
    public Map<String, Object> info() {
        try {
            Map<String, Object> info = (Map<String, Object>) Native.info(handle);
            if (memo != null) {
                // The memo's Java side, as Ruby's and Python's info show theirs.
                Map<String, Object> shown = new java.util.LinkedHashMap<>();
                shown.put("entries", (long) memo.size());
                shown.put("limit", (long) Native.memoLimit(handle));
                info.put("memo", shown);
            }
            return info;
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** What the reader was opened on: a path, a dataset, a URL. */
    public String location() {
        try {
            return Native.location(handle);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * How many times a newer store replaced the one read (a {@code reload}
     * check, a {@link #reopen()}): Ruby's and Python's {@code generation}.
     */
    public long generation() {
        try {
            return Native.generation(handle);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Why the last newer store a reload found could not be opened, or null. */
    public String reloadError() {
        try {
            return Native.reloadError(handle);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Opens the store the location names now, read from the next call on; keeps the old one if that fails. */
    public void reopen() {
        try {
            Native.reopen(handle);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Whether the location names another store than the one read (a newer one was published there), or none. */
    public boolean isStale() {
        try {
            return Native.isStale(handle);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public String toString() {
        return "Reader(" + location() + (isClosed() ? ", closed)" : ", " + size() + " entries)");
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        try {
            return Native.isClosed(handle);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Closes for every later call. */
    @Override
    public void close() {
        try {
            Native.close(handle);
            if (memo != null) {
                memo.clear(); // nothing of the store stays reachable
            }
        } finally {
            Reference.reachabilityFence(this);
        }
    }
}
