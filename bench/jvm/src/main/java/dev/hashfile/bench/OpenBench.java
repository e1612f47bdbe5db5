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
import org.openjdk.jmh.annotations.Warmup;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.linkedin.paldb.api.PalDB;
import com.linkedin.paldb.api.StoreReader;
import com.spotify.sparkey.Sparkey;
import com.spotify.sparkey.SparkeyReader;

import dev.hashfile.Hashfile;
import dev.hashfile.Reader;

/**
 * What a process pays before its first answer: open (or parse) and one
 * {@code get}, then close, side by side at each size: hashfile's open maps
 * the file and checks its header; Jackson parses the whole JSON into a
 * HashMap; sparkey and PalDB open their files. The files are in the page
 * cache (a process starting on a warm machine).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xmx12g"})
@State(Scope.Benchmark)
public class OpenBench {
    @Param({"100000"})
    public int size;

    Path dir;
    String key;
    ObjectMapper mapper;

    @Setup(Level.Trial)
    public void setup() {
        dir = Data.dir(size);
        key = Data.key(size / 2);
        mapper = new ObjectMapper();
    }

    @Benchmark
    public Object hashfile() {
        try (Reader reader = Hashfile.open(dir.resolve("store.hf").toString())) {
            return reader.get(key);
        }
    }

    @Benchmark
    public Object hashMapFromJackson() throws IOException {
        return mapper.readValue(dir.resolve("entries.json").toFile(), HashMap.class).get(key);
    }

    @Benchmark
    public Object sparkey() throws IOException {
        try (SparkeyReader reader = Sparkey.openSingleThreadedReader(dir.resolve("sparkey.spi").toFile())) {
            return reader.getAsString(key);
        }
    }

    @Benchmark
    public Object paldb() {
        StoreReader reader = PalDB.createReader(new File(dir.toFile(), "paldb.db"));
        try {
            return reader.get(key);
        } finally {
            reader.close();
        }
    }
}
