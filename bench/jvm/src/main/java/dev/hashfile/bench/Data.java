package dev.hashfile.bench;

import java.io.BufferedWriter;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;

import com.linkedin.paldb.api.PalDB;
import com.linkedin.paldb.api.StoreWriter;
import com.spotify.sparkey.Sparkey;
import com.spotify.sparkey.SparkeyWriter;

import dev.hashfile.Hashfile;

/**
 * The same entries in every form a benchmark reads, made once per size and
 * kept (bench/data/jvm/SIZE, or -Dhashfile.bench.data): {@code key-I} to a
 * short text value, as a hashfile store, a JSON object (for Jackson), a
 * sparkey log and index, and a PalDB store.
 */
final class Data {
    private Data() {}

    static String key(long i) {
        return "key-" + i;
    }

    static String value(long i) {
        return "value-" + i + "-" + Long.toString(i * 2654435761L & 0xffffffffL, 36);
    }

    static Path dir(int size) {
        Path dir = Path.of(System.getProperty("hashfile.bench.data", "bench/data/jvm"), Integer.toString(size));
        if (!Files.exists(dir.resolve("done"))) {
            make(dir, size);
        }
        return dir;
    }

    /** Keys in a random order, each looked up in turn: every lookup a cache miss at 10M, as in a service. */
    static String[] randomKeys(int size, int count) {
        Random random = new Random(42);
        String[] keys = new String[count];
        for (int i = 0; i < count; i++) {
            keys[i] = key(random.nextInt(size));
        }
        return keys;
    }

    private static void make(Path dir, int size) {
        try {
            Files.createDirectories(dir);
            Path jsonl = dir.resolve("entries.jsonl");
            Path json = dir.resolve("entries.json");
            try (BufferedWriter lines = Files.newBufferedWriter(jsonl, StandardCharsets.UTF_8);
                    BufferedWriter object = Files.newBufferedWriter(json, StandardCharsets.UTF_8)) {
                object.write('{');
                for (long i = 0; i < size; i++) {
                    String entry = "\"" + key(i) + "\":\"" + value(i) + "\"";
                    lines.write("{\"k\":\"" + key(i) + "\",\"v\":\"" + value(i) + "\"}\n");
                    object.write(i == 0 ? entry : "," + entry);
                }
                object.write('}');
            }
            Hashfile.buildFrom(List.of(jsonl.toString()), dir.resolve("store.hf").toString(),
                    Map.of("format", "jsonl", "key_field", "k", "value_field", "v"));
            Files.delete(jsonl);
            try (SparkeyWriter writer = Sparkey.createNew(dir.resolve("sparkey.spi").toFile())) {
                for (long i = 0; i < size; i++) {
                    writer.put(key(i), value(i));
                }
                writer.writeHash();
            }
            StoreWriter paldb = PalDB.createWriter(new File(dir.toFile(), "paldb.db"));
            for (long i = 0; i < size; i++) {
                paldb.put(key(i), value(i));
            }
            paldb.close();
            Files.writeString(dir.resolve("done"), "");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
