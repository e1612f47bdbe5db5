package dev.hashfile;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The conformance table (test/conformance/cases.json), which Ruby, the CLI
 * and Python run too, run on the JVM: the same answers, error classes and
 * messages. A case with a step this binding has no form of yet is a skip
 * naming the step.
 */
class ConformanceTest {
    private static final JsonNode TABLE = load();
    /** Steps the JVM binding has a form for. */
    private static final Set<String> STEPS = Set.of(
            "build", "build_from", "dig", "open", "get", "get_many", "len", "info_has", "info_keys", "exists", "patch", "shard_of",
            "same_object", "history", "rollback", "diff", "delta", "compact");
    private static final Object MISSING = new Object();

    private static JsonNode load() {
        Path table = Path.of(System.getProperty("hashfile.root", "../.."), "test", "conformance", "cases.json");
        try {
            return new ObjectMapper().readTree(table.toFile());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @TestFactory
    Stream<DynamicTest> cases() {
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode entry : TABLE.get("cases")) {
            tests.add(DynamicTest.dynamicTest(entry.get("name").asText(), () -> runCase(entry)));
        }
        return tests.stream();
    }

    /** A value of the table as Java holds it. */
    static Object value(JsonNode data) {
        if (data.isArray()) {
            List<Object> out = new ArrayList<>();
            data.forEach(v -> out.add(value(v)));
            return out;
        }
        if (data.isObject()) {
            if (data.has("$bytes")) {
                return HexFormat.of().parseHex(data.get("$bytes").asText());
            }
            if (data.has("$int")) {
                return new BigInteger(data.get("$int").asText());
            }
            if (data.has("$float")) {
                String text = data.get("$float").asText();
                switch (text) {
                    case "nan": return Double.NaN;
                    case "inf": return Double.POSITIVE_INFINITY;
                    case "-inf": return Double.NEGATIVE_INFINITY;
                    default: return Double.parseDouble(text);
                }
            }
            if (data.has("$object")) {
                return new Object();
            }
            if (data.has("$nest")) {
                List<Object> nested = new ArrayList<>();
                for (int i = 1; i < data.get("$nest").asInt(); i++) {
                    List<Object> outer = new ArrayList<>();
                    outer.add(nested);
                    nested = outer;
                }
                return nested;
            }
            Map<String, Object> out = new LinkedHashMap<>();
            data.properties().forEach(e -> out.put(e.getKey(), value(e.getValue())));
            return out;
        }
        if (data.isIntegralNumber()) {
            return data.bigIntegerValue().bitLength() < 64 ? (Object) data.asLong() : data.bigIntegerValue();
        }
        if (data.isFloatingPointNumber()) {
            return data.asDouble();
        }
        if (data.isTextual()) {
            return data.asText();
        }
        if (data.isBoolean()) {
            return data.asBoolean();
        }
        return null;
    }

    /** A form in which values of one type compare equal and of two types never do; map order counts. */
    static Object canonical(Object v) {
        if (v instanceof Map) {
            List<Object> pairs = new ArrayList<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                pairs.add(List.of(canonical(e.getKey()), canonical(e.getValue())));
            }
            return List.of("map", pairs);
        }
        if (v instanceof List) {
            List<Object> items = new ArrayList<>();
            for (Object x : (List<?>) v) {
                items.add(canonical(x));
            }
            return List.of("list", items);
        }
        if (v == null) {
            return "null";
        }
        if (v instanceof Double) {
            return List.of("float", ((Double) v).isNaN() ? "nan" : v.toString());
        }
        if (v instanceof Long || v instanceof BigInteger) {
            return List.of("int", v.toString());
        }
        if (v instanceof byte[]) {
            return List.of("bytes", HexFormat.of().formatHex((byte[]) v));
        }
        if (v instanceof Boolean) {
            return List.of("bool", v.toString());
        }
        return List.of("text", v.toString());
    }

    private static final class State {
        Reader db;
    }

    static void runCase(JsonNode entry) throws Exception {
        for (JsonNode step : entry.get("steps")) {
            String op = step.fieldNames().next();
            Assumptions.assumeTrue(STEPS.contains(op), "the JVM binding has no form of the step " + op + " yet");
        }
        Path dir = Files.createTempDirectory("conformance");
        if (entry.has("files")) {
            for (Map.Entry<String, JsonNode> f : entry.get("files").properties()) {
                Files.writeString(dir.resolve(f.getKey()), f.getValue().asText(), StandardCharsets.UTF_8);
            }
        }
        State state = new State();
        try {
            int i = 0;
            for (JsonNode step : entry.get("steps")) {
                i++;
                String where = entry.get("name").asText() + ", step " + i + " (" + step.fieldNames().next() + ")";
                JsonNode error = step.get("error");
                if (error == null) {
                    runStep(step, dir, state, where);
                    continue;
                }
                Throwable raised = null;
                try {
                    runStep(step, dir, state, where);
                } catch (RuntimeException e) {
                    raised = e;
                }
                if (raised == null) {
                    fail(where + ": expected " + error);
                }
                String expected = TABLE.get("errors").get(error.get("kind").asText()).get("java").asText();
                Class<?> expectedClass = Class.forName(expected);
                // An operating system error: UncheckedIOException, its cause the IOException's kind.
                Throwable classed = raised instanceof UncheckedIOException ? raised.getCause() : raised;
                assertTrue(expectedClass.isInstance(classed), where + ": raised " + raised);
                if (error.has("message")) {
                    assertEquals(error.get("message").asText(), raised.getMessage(), where);
                }
                if (error.has("match")) {
                    assertTrue(Pattern.compile(error.get("match").asText()).matcher(raised.getMessage()).find(),
                            where + ": " + raised.getMessage() + " does not match " + error.get("match").asText());
                }
            }
        } finally {
            if (state.db != null) {
                state.db.close();
            }
        }
    }

    @SuppressWarnings("unchecked")
    static void runStep(JsonNode step, Path dir, State state, String where) throws IOException {
        String op = step.fieldNames().next();
        Map<String, Object> options = step.has("options") ? (Map<String, Object>) value(step.get("options")) : Map.of();
        switch (op) {
            case "build":
                Hashfile.build(dir.resolve(step.get("output").asText()).toString(), (Map<?, ?>) value(step.get("build")), options);
                break;
            case "build_from": {
                List<String> inputs = new ArrayList<>();
                step.get("build_from").forEach(f -> inputs.add(dir.resolve(f.asText()).toString()));
                Map<String, Long> summary = Hashfile.buildFrom(inputs, dir.resolve(step.get("output").asText()).toString(), options);
                if (step.has("expect")) {
                    for (Map.Entry<String, JsonNode> e : step.get("expect").properties()) {
                        assertEquals(e.getValue().asLong(), summary.get(e.getKey()), where);
                    }
                }
                break;
            }
            case "dig": {
                JsonNode args = step.get("dig");
                Object[] path = new Object[args.size() - 1];
                for (int i = 1; i < args.size(); i++) {
                    path[i - 1] = value(args.get(i));
                }
                Object found = state.db.dig(args.get(0).asText(), path);
                if (step.has("absent")) {
                    assertEquals(null, found, where);
                } else {
                    assertEquals(canonical(value(step.get("expect"))), canonical(found), where);
                }
                break;
            }
            case "open": {
                if (state.db != null) {
                    state.db.close();
                    state.db = null;
                }
                String name = step.get("open").asText();
                String location = name.contains("://") ? name : dir.resolve(name).toString();
                if (step.has("generation")) {
                    Map<String, Object> pinned = new java.util.LinkedHashMap<>(options);
                    pinned.put("generation", Hashfile.history(location).get(step.get("generation").asInt()).get("generation"));
                    options = pinned;
                }
                state.db = Hashfile.open(location, options);
                break;
            }
            case "history": {
                List<Map<String, Object>> history = Hashfile.history(dir.resolve(step.get("history").asText()).toString(), options);
                if (step.has("expect")) {
                    expectPartial(step.get("expect"), history, where);
                }
                break;
            }
            case "diff": {
                String a = dir.resolve(step.get("diff").get(0).asText()).toString();
                String b = dir.resolve(step.get("diff").get(1).asText()).toString();
                Map<String, Object> given = new java.util.LinkedHashMap<>(options);
                if (step.has("generations")) {
                    given.put("generation_a", Hashfile.history(a).get(step.get("generations").get(0).asInt()).get("generation"));
                    given.put("generation_b", Hashfile.history(b).get(step.get("generations").get(1).asInt()).get("generation"));
                }
                ObjectMapper json = new ObjectMapper();
                List<String> lines = new ArrayList<>();
                Map<String, Object> summary = Hashfile.diff(a, b, given, line -> {
                    try {
                        lines.add(json.readTree(line).toString());
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                });
                if (step.has("expect")) {
                    expectPartial(step.get("expect"), summary, where);
                }
                if (step.has("lines")) {
                    List<String> expected = new ArrayList<>();
                    step.get("lines").forEach(l -> expected.add(l.toString()));
                    java.util.Collections.sort(expected);
                    java.util.Collections.sort(lines);
                    assertEquals(expected, lines, where);
                }
                break;
            }
            case "delta": {
                String dataset = dir.resolve(step.get("delta").asText()).toString();
                Map<String, Object> done;
                if (step.has("changes_file")) {
                    done = Hashfile.patch(dataset, dir.resolve(step.get("changes_file").asText()).toString(), options);
                } else {
                    Map<?, ?> put = step.has("put") ? (Map<?, ?>) value(step.get("put")) : Map.of();
                    List<String> delete = new ArrayList<>();
                    if (step.has("delete")) {
                        step.get("delete").forEach(k -> delete.add(k.asText()));
                    }
                    done = Hashfile.patch(dataset, put, delete, options);
                }
                if (step.has("expect")) {
                    expectPartial(step.get("expect"), done, where);
                }
                break;
            }
            case "compact": {
                Map<String, Object> done = Hashfile.compact(dir.resolve(step.get("compact").asText()).toString(), options);
                if (step.has("expect")) {
                    expectPartial(step.get("expect"), done, where);
                }
                break;
            }
            case "rollback": {
                String dataset = dir.resolve(step.get("rollback").asText()).toString();
                String to = step.has("to") ? (String) Hashfile.history(dataset).get(step.get("to").asInt()).get("generation") : null;
                Map<String, Object> published = Hashfile.rollback(dataset, to, options);
                if (step.has("expect")) {
                    expectPartial(step.get("expect"), published, where);
                }
                break;
            }
            case "get": {
                Object found = state.db.getOrDefault(step.get("get").asText(), MISSING);
                if (step.has("absent")) {
                    assertTrue(found == MISSING, where);
                } else {
                    assertEquals(canonical(value(step.get("expect"))), canonical(found), where);
                }
                break;
            }
            case "get_many": {
                List<Object> got = state.db.getMany((List<?>) value(step.get("get_many")));
                assertEquals(canonical(value(step.get("expect"))), canonical(got), where);
                break;
            }
            case "same_object": {
                String key = step.get("same_object").asText();
                assertEquals(step.get("expect").asBoolean(), state.db.get(key) == state.db.get(key), where);
                break;
            }
            case "len":
                assertEquals(step.get("len").asLong(), state.db.size(), where);
                break;
            case "info_has": {
                Map<String, Object> info = state.db.info();
                for (JsonNode key : step.get("info_has")) {
                    assertTrue(info.containsKey(key.asText()), where + ": info has no " + key + " (" + info.keySet() + ")");
                }
                break;
            }
            case "info_keys": {
                List<String> keys = new ArrayList<>();
                step.get("info_keys").forEach(k -> keys.add(k.asText()));
                assertEquals(keys, new ArrayList<>(state.db.info().keySet()), where);
                break;
            }
            case "exists":
                assertEquals(step.get("expect").asBoolean(), Files.exists(dir.resolve(step.get("exists").asText())), where);
                break;
            case "patch": {
                Path file = dir.resolve(step.get("patch").asText());
                byte[] data = Files.readAllBytes(file);
                byte[] find = HexFormat.of().parseHex(step.get("find").asText());
                byte[] replace = HexFormat.of().parseHex(step.get("replace").asText());
                int at = indexOf(data, find);
                assertTrue(at >= 0, where + ": " + step.get("find").asText() + " is not in the file");
                byte[] out = new byte[data.length - find.length + replace.length];
                System.arraycopy(data, 0, out, 0, at);
                System.arraycopy(replace, 0, out, at, replace.length);
                System.arraycopy(data, at + find.length, out, at + replace.length, data.length - at - find.length);
                Files.write(file, out);
                break;
            }
            case "shard_of": {
                JsonNode args = step.get("shard_of");
                Object shards = value(args.get(1));
                int got = shards instanceof Long && (Long) shards >= Integer.MIN_VALUE && (Long) shards <= Integer.MAX_VALUE
                        ? Hashfile.shardOf(args.get(0).asText(), (int) (long) (Long) shards)
                        : Native.shardOf(args.get(0).asText().getBytes(StandardCharsets.UTF_8), shards);
                assertEquals(step.get("expect").asInt(), got, where);
                break;
            }
            default:
                fail(where + ": no such step");
        }
    }

    /** {@code actual} (a map, or a list of them) has every key {@code expected} names, with that value, and a list as many items. */
    private static void expectPartial(JsonNode expected, Object actual, String where) {
        if (expected.isArray()) {
            List<?> list = (List<?>) actual;
            assertEquals(expected.size(), list.size(), where + ": " + list);
            for (int i = 0; i < expected.size(); i++) {
                expectPartial(expected.get(i), list.get(i), where + ", item " + i);
            }
            return;
        }
        Map<?, ?> map = (Map<?, ?>) actual;
        for (Map.Entry<String, JsonNode> e : expected.properties()) {
            if (e.getValue().isContainerNode()) {
                expectPartial(e.getValue(), map.get(e.getKey()), where + ": " + e.getKey());
            } else {
                assertEquals(canonical(value(e.getValue())), canonical(map.get(e.getKey())), where + ": " + e.getKey());
            }
        }
    }

    private static int indexOf(byte[] data, byte[] find) {
        outer:
        for (int i = 0; i + find.length <= data.length; i++) {
            for (int j = 0; j < find.length; j++) {
                if (data[i + j] != find[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }
}
