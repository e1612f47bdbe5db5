package dev.hashfile;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Map;

/**
 * The native half (the {@code hashfile_jvm} library, JNI over the Rust
 * crates): loaded once, from the jar or from the path the system property
 * {@code hashfile.library} names.
 */
final class Native {
    private Native() {}

    /** Where the jar carries the library for this platform. */
    static final String RESOURCE = "/dev/hashfile/native/linux-x86_64/libhashfile_jvm.so";

    static {
        String given = System.getProperty("hashfile.library");
        if (given != null) {
            System.load(Path.of(given).toAbsolutePath().toString());
        } else {
            System.load(extracted().toString());
        }
    }

    /** The jar's library, copied to a file of its own (a library loads from a file). */
    private static Path extracted() {
        String os = System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT);
        String arch = System.getProperty("os.arch", "");
        if (!os.contains("linux") || !(arch.equals("amd64") || arch.equals("x86_64"))) {
            throw new UnsatisfiedLinkError(
                    "hashfile's jar carries its native library for Linux x86_64 only, not " + os + " " + arch
                            + "; build it (rake jvm_build) and give its path as -Dhashfile.library=");
        }
        try (InputStream in = Native.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new UnsatisfiedLinkError("the jar has no " + RESOURCE + " (built without rake jvm_build?)");
            }
            Path dir = Files.createTempDirectory("hashfile-jvm");
            Path file = dir.resolve("libhashfile_jvm.so");
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
            file.toFile().deleteOnExit();
            dir.toFile().deleteOnExit();
            return file;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot extract hashfile's native library", e);
        }
    }

    /**
     * A map's entries as name, value pairs, in its order: what the native
     * side reads. Walked, not sized: a map whose {@code size()} is wrong
     * loses nothing.
     */
    static Object[] pairs(Map<?, ?> map) {
        java.util.List<Object> out = new java.util.ArrayList<>();
        for (Map.Entry<?, ?> e : map.entrySet()) {
            out.add(e.getKey());
            out.add(e.getValue());
        }
        return out.toArray();
    }

    /**
     * The UTF-8 bytes of {@code s}; an {@link IllegalArgumentException} for
     * a lone surrogate, which has none ({@code String.getBytes} would put
     * {@code ?} in its place, another key).
     */
    static byte[] utf8(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (Character.isSurrogate(s.charAt(i))) {
                return strictUtf8(s);
            }
        }
        return s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    private static byte[] strictUtf8(String s) {
        try {
            java.nio.ByteBuffer bytes = java.nio.charset.StandardCharsets.UTF_8.newEncoder()
                    .onMalformedInput(java.nio.charset.CodingErrorAction.REPORT)
                    .onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPORT)
                    .encode(java.nio.CharBuffer.wrap(s));
            byte[] out = new byte[bytes.remaining()];
            bytes.get(out);
            return out;
        } catch (java.nio.charset.CharacterCodingException e) {
            throw new IllegalArgumentException(
                    "a string with a lone surrogate (not valid UTF-16) has no UTF-8 form: " + e.getMessage(), e);
        }
    }

    static native long open(String location, Object[] options);

    static native void close(long handle);

    static native void free(long handle);

    static native boolean isClosed(long handle);

    static native Object get(long handle, byte[] key, Object ifMissing);

    static native boolean containsKey(long handle, byte[] key);

    static native long size(long handle);

    static native int shardCount(long handle);

    static native Object[] getMany(long handle, byte[][] keys, Object ifMissing);

    static native Object[] chunk(long handle, long[] cursor, int max, boolean oneShard);

    static native Object[] jsonChunk(long handle, long[] cursor, int max, boolean oneShard);

    static native long shardWriterCreate(String location, String generation, int shard, int shardCount,
            Object[] options, Object[] remote);

    static native long shardWriterAdd(long writer, byte[] lines, String source);

    static native String[] shardWriterFinish(long writer);

    static native void shardWriterFree(long writer);

    static native String newGeneration();

    static native int memoLimit(long handle);

    static native long memoGeneration(long handle);

    static native int memoAdmit(long handle, long generation, int size);

    static native boolean memoMovedOn(long handle, long generation);

    static native String getJson(long handle, byte[] key);

    static native Object[] getManyJson(long handle, byte[][] keys);

    static native String[] remoteOptionNames();

    static native int maxShards();

    static native String closest(String name, String[] known);

    static native boolean takesReload(String location);

    static native Object history(String location, Object[] options);

    static native Object rollback(String location, String generation, Object[] options);

    static native Object patch(String location, Object[] upserts, Object[] deletes, String changesPath,
            Object[] options);

    static native Object compact(String location, Object[] options);

    static native Object diff(String a, String b, Object[] options, java.util.function.Consumer<String> each);

    static native Object optionFromText(String name, String text);

    static native void checkBuildOptions(Object[] options, Object[] remote);

    static native String publishShards(String location, String generation, int shardCount, String[] reports,
            Object[] options, Object[] remote);

    static native void discardGeneration(String location, String generation, Object[] remote);

    static native void verify(long handle);

    static native Object info(long handle);

    static native long build(String path, Object[] entries, Object[] options);

    static native int shardOf(byte[] key, Object shards);

    static native int route(byte[] key, int shards);

    static native long pin(long handle);

    static native String location(long handle);

    static native long generation(long handle);

    static native String reloadError(long handle);

    static native void reopen(long handle);

    static native boolean isStale(long handle);

    static native long[] buildFrom(String[] inputs, String output, Object[] options);

    static native Object[] dig(long handle, byte[] key, Object[] path);
}
