package dev.hashfile;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertNotSame;

import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The Java API over a store built from Java: values, lookups, iteration, errors, threads. */
class ReaderTest {
    @TempDir
    Path dir;

    private String build(Map<?, ?> entries) {
        String path = dir.resolve("s.hf").toString();
        Hashfile.build(path, entries);
        return path;
    }

    @Test
    void everyTypeReadsBackAsJavaHoldsIt() {
        Map<String, Object> nested = new LinkedHashMap<>();
        nested.put("b", 1L);
        nested.put("a", List.of(2.5, "x"));
        Map<String, Object> entries = new LinkedHashMap<>();
        entries.put("text", "héllo");
        entries.put("int", -42);
        entries.put("big", new BigInteger("123456789012345678901234567890"));
        entries.put("negbig", new BigInteger("-123456789012345678901234567890"));
        entries.put("float", 2.5);
        entries.put("bool", true);
        entries.put("nil", null);
        entries.put("bytes", new byte[] {0, (byte) 0xff});
        entries.put("map", nested);
        try (Reader db = Hashfile.open(build(entries))) {
            assertEquals("héllo", db.get("text"));
            assertEquals(-42L, db.get("int"));
            assertEquals(new BigInteger("123456789012345678901234567890"), db.get("big"));
            assertEquals(new BigInteger("-123456789012345678901234567890"), db.get("negbig"));
            assertEquals(2.5, db.get("float"));
            assertEquals(Boolean.TRUE, db.get("bool"));
            assertNull(db.get("nil"));
            assertTrue(db.containsKey("nil"));
            assertArrayEquals(new byte[] {0, (byte) 0xff}, (byte[]) db.get("bytes"));
            assertEquals(nested, db.get("map"));
            assertEquals(List.of("b", "a"), new ArrayList<>(((Map<?, ?>) db.get("map")).keySet()), "stored order");
            assertNull(db.get("nope"));
            assertEquals("fallback", db.getOrDefault("nope", "fallback"));
            assertFalse(db.containsKey("nope"));
            assertEquals(9, db.size());
            assertEquals(java.util.Arrays.asList(-42L, null, true), db.getMany(List.of("int", "nope", "bool")));
            assertEquals(java.util.Arrays.asList(null, "absent"), db.getMany(List.of("nil", "nope"), "absent"));
            db.verify();
            assertTrue(db.info().containsKey("entries"));
        }
    }

    @Test
    void iterationIsInStoredOrder() {
        Map<String, Object> entries = new LinkedHashMap<>();
        for (int i = 0; i < 3000; i++) {
            entries.put("k" + i, (long) i);
        }
        try (Reader db = Hashfile.open(build(entries))) {
            List<Object> keys = new ArrayList<>();
            long sum = 0;
            for (Map.Entry<Object, Object> e : db) {
                keys.add(e.getKey());
                sum += (Long) e.getValue();
            }
            assertEquals(new ArrayList<>(entries.keySet()), keys);
            assertEquals(2999L * 3000 / 2, sum);
        }
    }

    @Test
    void errorsAreTheRuntimesInJavasClasses() throws Exception {
        Path missing = dir.resolve("missing.hf");
        java.io.UncheckedIOException e = assertThrows(java.io.UncheckedIOException.class, () -> Hashfile.open(missing.toString()));
        assertTrue(e.getCause() instanceof java.nio.file.NoSuchFileException, e.toString());
        Path text = dir.resolve("t.txt");
        Files.writeString(text, "not a store at all, just some text long enough to have a header's length");
        assertThrows(FormatException.class, () -> Hashfile.open(text.toString()));
        IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
                () -> Hashfile.open(build(Map.of("a", 1L)), Map.of("verfiy", true)));
        assertTrue(unknown.getMessage().startsWith("unknown option verfiy for open (did you mean verify?)"), unknown.getMessage());
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                () -> Hashfile.build(dir.resolve("o.hf").toString(), Map.of("k", Map.of("when", new java.util.Date(0)))));
        assertEquals("value for key \"k\" at [\"when\"] is a java.util.Date; Hashfile stores null, Boolean, Long, Integer, Short, Byte, BigInteger, Double, Float, String, byte[], List and Map (convert other objects to these first)",
                refused.getMessage());
        assertFalse(Files.exists(dir.resolve("o.hf")), "nothing published");
        IllegalArgumentException memo = assertThrows(IllegalArgumentException.class,
                () -> Hashfile.open(build(Map.of("a", 1L)), Map.of("memo", -1)));
        assertTrue(memo.getMessage().startsWith("invalid option memo"), memo.getMessage());
        Reader db = Hashfile.open(build(Map.of("a", 1L)));
        db.close();
        assertTrue(db.isClosed());
        assertThrows(ClosedException.class, () -> db.get("a"));
    }

    @Test
    void keysThatAreOneKeyAsStoredAreRefused() {
        Map<Object, Object> inner = new LinkedHashMap<>();
        inner.put(1, "int");
        inner.put(1L, "long");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Hashfile.build(dir.resolve("k.hf").toString(), Map.of("k", inner)));
        assertEquals("value for key \"k\" has the map key 1 twice (two keys that are one key as stored, which keeps one)", e.getMessage());
        Map<Object, Object> text = new LinkedHashMap<>();
        text.put("a", 1L);
        text.put("a".getBytes(java.nio.charset.StandardCharsets.UTF_8), 2L);
        assertThrows(IllegalArgumentException.class, () -> Hashfile.build(dir.resolve("t.hf").toString(), Map.of("k", text)));
        assertFalse(Files.exists(dir.resolve("k.hf")));
        assertThrows(NullPointerException.class, () -> Hashfile.open((String) null));
        IllegalArgumentException progress = assertThrows(IllegalArgumentException.class,
                () -> Hashfile.buildFrom(List.of("x.csv"), dir.resolve("p.hf").toString(), Map.of("progress", true)));
        assertEquals("invalid option progress: is not in the JVM binding yet (docs/JVM.md)", progress.getMessage());
    }

    @Test
    void iterationReadsOneStoreAcrossAReload() throws Exception {
        Map<String, Object> old = new LinkedHashMap<>();
        for (int i = 0; i < 5000; i++) {
            old.put("old" + i, (long) i);
        }
        String path = build(old);
        try (Reader db = Hashfile.open(path, Map.of("reload", 0.01))) {
            int seen = 0;
            for (Map.Entry<Object, Object> e : db) {
                assertTrue(((String) e.getKey()).startsWith("old"), "entry " + seen + " is " + e.getKey());
                if (++seen == 1500) {
                    Map<String, Object> newer = new LinkedHashMap<>();
                    for (int i = 0; i < 3000; i++) {
                        newer.put("new" + i, (long) i);
                    }
                    Hashfile.build(path, newer); // published by rename over the old
                    Thread.sleep(50);
                    db.get("new0"); // a lookup takes the reload
                }
            }
            assertEquals(5000, seen, "the whole of the store it began on");
            assertEquals(0L, db.get("new0"), "lookups moved on");
            assertEquals(1, db.generation(), "one newer store");
            assertNull(db.reloadError());
            assertFalse(db.isStale());
            assertEquals(path, db.location());
            assertEquals("Reader(" + path + ", 3000 entries)", db.toString());
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void theMemoReturnsOneObjectOfOneGenerationWithinItsLimit() throws Exception {
        String path = build(Map.of("a", Map.of("n", List.of(1L, 2L)), "b", "x", "none", java.util.Collections.emptyMap()));
        try (Reader db = Hashfile.open(path, Map.of("memo", 2, "reload", 0.01))) {
            Object a = db.get("a");
            assertSame(a, db.get("a"), "a hit is the object the first lookup made");
            assertSame(a, db.getMany(List.of("a", "b")).get(0), "getMany takes the memo's too");
            assertThrows(UnsupportedOperationException.class, () -> ((Map<String, Object>) a).put("n", 0L),
                    "a shared value cannot be changed under another caller");
            assertThrows(UnsupportedOperationException.class,
                    () -> ((List<Object>) ((Map<?, ?>) a).get("n")).add(3L));
            assertEquals(Map.of("n", List.of(1L, 2L)), a);
            db.get("b");
            db.get("none"); // past the limit of 2: the memo empties and fills again
            assertTrue((Long) ((Map<?, ?>) db.info().get("memo")).get("entries") <= 2L);
            assertEquals(2L, ((Map<?, ?>) db.info().get("memo")).get("limit"));
            assertNull(db.get("absent"));
            Object before = db.get("b");
            Hashfile.build(path, Map.of("a", "newer", "b", "y"));
            Thread.sleep(50);
            assertEquals("newer", db.get("a"), "a reload empties the memo first");
            assertEquals("y", db.get("b"));
            assertNotSame(before, db.get("b"));
        }
        String bytes = dir.resolve("bytes.hf").toString();
        Hashfile.build(bytes, Map.of("raw", new byte[] {1, 2, 3}, "m", Map.of("x", 1L)));
        try (Reader db = Hashfile.open(bytes, Map.of("memo", 10))) {
            List<Object> twice = db.getMany(List.of("m", "m"));
            assertSame(twice.get(0), twice.get(1), "a key asked twice in one batch is one object");
            assertSame(twice.get(0), db.get("m"));
            ((byte[]) db.get("raw"))[0] = 42; // the caller's own copy
            assertArrayEquals(new byte[] {1, 2, 3}, (byte[]) db.get("raw"));
        }
        try (Reader db = Hashfile.open(path)) {
            assertNotSame(db.get("a"), db.get("a"), "without a memo each lookup decodes anew");
            assertFalse(db.info().containsKey("memo"));
        }
    }

    @Test
    void aMemoSharedByThreadsGivesEachTheValueOfItsKey() throws Exception {
        Map<String, Object> entries = new LinkedHashMap<>();
        for (int i = 0; i < 2000; i++) {
            entries.put("k" + i, List.of((long) i));
        }
        try (Reader db = Hashfile.open(build(entries), Map.of("memo", 100))) {
            var pool = java.util.concurrent.Executors.newFixedThreadPool(4);
            List<java.util.concurrent.Future<Integer>> done = new java.util.ArrayList<>();
            for (int t = 0; t < 4; t++) {
                int seed = t;
                done.add(pool.submit(() -> {
                    java.util.Random random = new java.util.Random(seed);
                    int wrong = 0;
                    for (int n = 0; n < 20000; n++) {
                        int i = random.nextInt(2000);
                        wrong += db.get("k" + i).equals(List.of((long) i)) ? 0 : 1;
                    }
                    return wrong;
                }));
            }
            for (var f : done) {
                assertEquals(0, f.get());
            }
            pool.shutdown();
        }
    }

    @Test
    void typedGettersAndPaths() {
        Path path = dir.resolve("typed.hf");
        Map<String, Object> entries = new LinkedHashMap<>();
        entries.put("s", "text");
        entries.put("n", 7L);
        entries.put("f", 2.5);
        entries.put("t", true);
        entries.put("b", new byte[] {1});
        entries.put("l", List.of(1L));
        entries.put("m", Map.of("k", "v"));
        entries.put("null", null);
        Hashfile.build(path, entries);
        try (Reader db = Hashfile.open(path)) {
            assertEquals("text", db.getString("s"));
            assertEquals(7L, db.getLong("n"));
            assertEquals(2.5, db.getDouble("f"));
            assertEquals(true, db.getBoolean("t"));
            assertArrayEquals(new byte[] {1}, db.getBytes("b"));
            assertEquals(List.of(1L), db.getList("l"));
            assertEquals(Map.of("k", "v"), db.getMap("m"));
            assertNull(db.getString("null"));
            assertNull(db.getLong("absent"));
            ClassCastException e = assertThrows(ClassCastException.class, () -> db.getLong("s"));
            assertEquals("the value of key \"s\" in " + path + " is a String, not a Long (an integer past 64 bits is a "
                    + "BigInteger: get it with get)", e.getMessage());
            assertThrows(ClassCastException.class, () -> db.getString("b"));
        }
    }

    @Test
    void reopenReadsWhatThePathNamesNow() throws Exception {
        String path = build(Map.of("a", 1L));
        try (Reader db = Hashfile.open(path)) {
            Hashfile.build(dir.resolve("next.hf").toString(), Map.of("b", 2L));
            java.nio.file.Files.move(dir.resolve("next.hf"), dir.resolve("s.hf"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            assertTrue(db.isStale(), "a newer file is there");
            assertEquals(1L, db.get("a"), "still the store it opened");
            db.reopen();
            assertEquals(2L, db.get("b"));
            assertNull(db.get("a"));
            assertEquals(1, db.generation());
            assertFalse(db.isStale());
        }
    }

    @Test
    void aStoreTruncatedUnderItsMapIsStaleNotACrash() throws Exception {
        Map<String, Object> entries = new LinkedHashMap<>();
        for (int i = 0; i < 20000; i++) {
            entries.put("k" + i, "value " + i);
        }
        String path = build(entries);
        try (Reader db = Hashfile.open(path)) {
            List<String> keys = new ArrayList<>(entries.keySet());
            assertEquals(20000, db.getMany(keys).size()); // a batch maps the store
            try (java.io.RandomAccessFile file = new java.io.RandomAccessFile(path, "rw")) {
                file.setLength(100);
            }
            assertThrows(StaleException.class, () -> db.getMany(keys));
            assertThrows(StaleException.class, () -> db.get("k19999"));
        }
    }

    @Test
    void aLoneSurrogateHasNoUtf8AndIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Hashfile.build(dir.resolve("u.hf").toString(), Map.of("\uD800x", 1L)));
        assertTrue(e.getMessage().startsWith("a string with a lone surrogate"), e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> Hashfile.build(dir.resolve("u.hf").toString(), Map.of("k", List.of("a\uD800b"))));
        try (Reader db = Hashfile.open(build(Map.of("a", 1L)))) {
            assertThrows(IllegalArgumentException.class, () -> db.get("\uD800"));
            assertEquals(1L, db.get("a"));
            // A pair is one character, and fine.
            assertNull(db.get("\uD83D\uDE00"));
        }
    }

    @Test
    void aDuplicateKeyNamesIt() {
        Map<Object, Object> entries = new LinkedHashMap<>();
        entries.put("a", 1L);
        entries.put("a".getBytes(java.nio.charset.StandardCharsets.UTF_8), 2L);
        DuplicateKeyException e = assertThrows(DuplicateKeyException.class,
                () -> Hashfile.build(dir.resolve("d.hf").toString(), entries));
        assertTrue(e.getMessage().contains("duplicate key \"a\""), e.getMessage());
    }

    @Test
    void oneReaderServesManyThreads() throws Exception {
        Map<String, Object> entries = new LinkedHashMap<>();
        for (int i = 0; i < 1000; i++) {
            entries.put("k" + i, Map.of("n", (long) i));
        }
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try (Reader db = Hashfile.open(build(entries))) {
            List<Future<Long>> sums = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                sums.add(pool.submit(() -> {
                    long sum = 0;
                    for (int i = 0; i < 1000; i++) {
                        sum += (Long) ((Map<?, ?>) db.get("k" + i)).get("n");
                    }
                    return sum;
                }));
            }
            for (Future<Long> sum : sums) {
                assertEquals(999L * 1000 / 2, sum.get());
            }
        } finally {
            pool.shutdown();
        }
    }

    @Test
    void eachShardOfADatasetIsReadAlone() {
        Map<String, Object> entries = new LinkedHashMap<>();
        for (int i = 0; i < 500; i++) {
            entries.put("k" + i, (long) i);
        }
        String dataset = dir.resolve("ds").toString();
        Hashfile.build(dataset, entries, Map.of("shards", 4));
        try (Reader db = Hashfile.open(dataset)) {
            Map<Object, Object> seen = new LinkedHashMap<>();
            for (int shard = 0; shard < 4; shard++) {
                var it = db.shardEntries(shard);
                while (it.hasNext()) {
                    Map.Entry<Object, Object> e = it.next();
                    assertEquals(shard, Hashfile.shardOf((String) e.getKey(), 4), "key " + e.getKey() + " read from its shard");
                    assertNull(seen.put(e.getKey(), e.getValue()), "read once");
                }
            }
            assertEquals(entries, seen);
            var json = db.shardJson(2).next();
            assertEquals(entries.get(json.getKey()).toString(), json.getValue());
            for (int past : new int[] {4, -1}) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> db.shardEntries(past));
                assertTrue(e.getMessage().contains("shard " + past + " of") && e.getMessage().contains("shards 0 to 3"), e.getMessage());
            }
        }
        try (Reader store = Hashfile.open(build(Map.of("a", 1L)))) {
            assertEquals("a", store.shardEntries(0).next().getKey());
            assertThrows(IllegalArgumentException.class, () -> store.shardEntries(1));
        }
    }

    @Test
    void reloadIsForLocalLocationsAndRemoteDatasets() {
        assertTrue(Hashfile.takesReload(dir.resolve("s.hf").toString()));
        assertTrue(Hashfile.takesReload("http://127.0.0.1:9/ds/hashfile-dataset.json"));
        assertFalse(Hashfile.takesReload("http://127.0.0.1:9/s.hf"));
        assertFalse(Hashfile.takesReload("s3://bucket/s.hf"));
        // What takesReload says is what open does.
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Hashfile.open("http://127.0.0.1:9/s.hf", Map.of("reload", 1.0)));
        assertTrue(e.getMessage().startsWith("invalid option reload"), e.getMessage());
    }
}
