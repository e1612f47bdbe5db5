package dev.hashfile;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A reader's memo ({@code Hashfile.open(..., Map.of("memo", N))}): the
 * values of recent lookups by String key, decoded once and returned again
 * as the same objects, as Ruby's and Python's memos do. The rules are the
 * runtime's ({@code hashfile_runtime::memo::MemoRules}, beside the handle):
 * at most {@code limit} values (full, it empties and fills again), all of
 * one generation of the store (a reload or reopen empties it first, and a
 * value read from an older store is never kept).
 *
 * <p>Safe to share between threads without a lock: each entry carries the
 * generation it was read at, and a hit takes only an entry of the
 * generation the handle has now, so no thread is ever given a value of a
 * store another thread has already moved past. A memoized list or map is
 * unmodifiable (every caller shares it); a {@code byte[]} value is copied
 * for each caller, but one inside a list or map is not, and must not be
 * changed.
 */
final class Memo {
    /** Stands for a stored null, which the map cannot hold. */
    private static final Object NULL = new Object();

    private record Entry(long generation, Object value) {}

    private final long handle;
    private final int limit;
    private final ConcurrentHashMap<String, Entry> values = new ConcurrentHashMap<>();

    Memo(long handle, int limit) {
        this.handle = handle;
        this.limit = limit;
    }

    /** The handle's generation now, the map emptied first if it holds another's. */
    long generation() {
        long answer = Native.memoGeneration(handle);
        if ((answer & 1) != 0) {
            values.clear();
        }
        return answer >>> 1;
    }

    /** The value memoized for {@code key} at {@code generation}, {@code absent} if none. */
    Object find(String key, long generation, Object absent) {
        Entry entry = values.get(key);
        if (entry == null || entry.generation != generation) {
            return absent;
        }
        // An array cannot be made unmodifiable: each caller gets its own copy.
        return entry.value == NULL ? null : entry.value instanceof byte[] b ? b.clone() : entry.value;
    }

    /** {@code value} read at {@code generation}, as it is kept and returned: unmodifiable if a container. */
    Object keep(String key, long generation, Object value) {
        Object kept = unmodifiable(value);
        switch (Native.memoAdmit(handle, generation, values.size())) {
            case 0:
                return kept;
            case 2:
                values.clear();
                break;
            default:
                break;
        }
        values.put(key, new Entry(generation, kept == null ? NULL : kept));
        // A swap meanwhile, a close racing this lookup (nothing of a closed
        // store stays reachable), or threads that each found room for one
        // more: what the map holds goes.
        if (Native.memoMovedOn(handle, generation) || Native.isClosed(handle) || values.size() > limit) {
            values.clear();
        }
        return kept instanceof byte[] b ? b.clone() : kept;
    }

    int size() {
        return values.size();
    }

    void clear() {
        values.clear();
    }

    private static Object unmodifiable(Object value) {
        if (value instanceof List<?> list) {
            List<Object> items = new ArrayList<>(list.size());
            for (Object item : list) {
                items.add(unmodifiable(item));
            }
            return Collections.unmodifiableList(items);
        }
        if (value instanceof Map<?, ?> map) {
            Map<Object, Object> entries = new LinkedHashMap<>();
            map.forEach((k, v) -> entries.put(k, unmodifiable(v)));
            return Collections.unmodifiableMap(entries);
        }
        return value;
    }
}
