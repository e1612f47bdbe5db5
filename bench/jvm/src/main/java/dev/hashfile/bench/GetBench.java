package dev.hashfile.bench;

import java.io.File;
import java.io.IOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.linkedin.paldb.api.PalDB;
import com.linkedin.paldb.api.StoreReader;
import com.spotify.sparkey.Sparkey;
import com.spotify.sparkey.SparkeyReader;

import dev.hashfile.Hashfile;
import dev.hashfile.Reader;

/**
 * A warm {@code get} of a random key, returning the value as a String, side
 * by side: hashfile (one Reader shared by every thread), a HashMap parsed
 * from the same entries' JSON by Jackson, sparkey-java (a reader per
 * thread) and PalDB (a reader per thread: its readers are not thread-safe).
 * Run with {@code -t 1} and {@code -t 2} for one thread and several.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xmx12g"})
public class GetBench {
    /** Looked up in turn. */
    private static final int KEYS = 1 << 16;

    @State(Scope.Benchmark)
    public static class Shared {
        @Param({"100000", "1000000", "10000000"})
        public int size;

        Reader hashfile;
        HashMap<?, ?> hashMap;
        String[] keys;
        Path dir;

        @Setup(Level.Trial)
        public void open() throws IOException {
            dir = Data.dir(size);
            keys = Data.randomKeys(size, KEYS);
            hashfile = Hashfile.open(dir.resolve("store.hf").toString());
            hashMap = new ObjectMapper().readValue(dir.resolve("entries.json").toFile(), HashMap.class);
        }

        @TearDown(Level.Trial)
        public void close() {
            hashfile.close();
        }
    }

    @State(Scope.Thread)
    public static class PerThread {
        SparkeyReader sparkey;
        StoreReader paldb;
        int next;

        @Setup(Level.Trial)
        public void open(Shared shared) throws IOException {
            sparkey = Sparkey.openSingleThreadedReader(shared.dir.resolve("sparkey.spi").toFile());
            paldb = PalDB.createReader(new File(shared.dir.toFile(), "paldb.db"));
            next = (int) Thread.currentThread().getId() * 7919;
        }

        @TearDown(Level.Trial)
        public void close() {
            sparkey.close();
            paldb.close();
        }

        String key(Shared shared) {
            return shared.keys[next++ & (KEYS - 1)];
        }
    }

    @Benchmark
    public Object hashfile(Shared shared, PerThread thread) {
        return shared.hashfile.get(thread.key(shared));
    }

    /** The lookup alone: no value decoded. */
    @Benchmark
    public Object hashfileContainsKey(Shared shared, PerThread thread) {
        return shared.hashfile.containsKey(thread.key(shared));
    }

    /** The value as JSON text (what Spark's lookup returns). */
    @Benchmark
    public Object hashfileGetJson(Shared shared, PerThread thread) {
        return shared.hashfile.getJson(thread.key(shared));
    }

    @Benchmark
    public Object hashMapFromJackson(Shared shared, PerThread thread) {
        return shared.hashMap.get(thread.key(shared));
    }

    @Benchmark
    public Object sparkey(Shared shared, PerThread thread) throws IOException {
        return thread.sparkey.getAsString(thread.key(shared));
    }

    @Benchmark
    public Object paldb(Shared shared, PerThread thread) {
        return thread.paldb.get(thread.key(shared));
    }
}
