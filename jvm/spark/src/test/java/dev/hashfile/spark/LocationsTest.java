package dev.hashfile.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.hashfile.Hashfile;
import dev.hashfile.Reader;
import dev.hashfile.RemoteException;

/**
 * How a read or a lookup opens a remote location (a server on loopback,
 * the JDK's own): the dataset under a prefix if its manifest is there,
 * else a store at the URL, whatever the server answers for the manifest
 * it does not have.
 */
class LocationsTest {
    private static final Pattern RANGE = Pattern.compile("bytes=(\\d+)-(\\d+)");

    @TempDir
    Path dir;

    private HttpServer server;
    private byte[] store;

    @BeforeEach
    void serve() throws IOException {
        Path path = dir.resolve("store.hf");
        Hashfile.build(path, Map.of("a", "1", "b", "2"));
        store = Files.readAllBytes(path);
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        // /CODE/store.hf serves the store, and answers CODE for anything else.
        for (int code : new int[] {403, 404, 302, 500}) {
            server.createContext("/" + code + "/", exchange -> answer(exchange, code));
        }
        server.start();
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    private void answer(HttpExchange exchange, int code) throws IOException {
        try (exchange) {
            if (!exchange.getRequestURI().getPath().endsWith("/store.hf")) {
                if (code == 302) {
                    exchange.getResponseHeaders().set("Location", "/elsewhere");
                }
                exchange.sendResponseHeaders(code, -1);
                return;
            }
            String range = exchange.getRequestHeaders().getFirst("Range");
            Matcher m = range == null ? null : RANGE.matcher(range);
            int from = 0;
            int to = store.length - 1;
            if (m != null && m.matches()) {
                from = Integer.parseInt(m.group(1));
                to = Math.min(Integer.parseInt(m.group(2)), store.length - 1);
                exchange.getResponseHeaders().set("Content-Range", "bytes " + from + "-" + to + "/" + store.length);
            }
            exchange.getResponseHeaders().set("ETag", "\"v1\"");
            exchange.sendResponseHeaders(m != null && m.matches() ? 206 : 200, to - from + 1);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(store, from, to - from + 1);
            }
        }
    }

    private String url(int code) {
        return "http://127.0.0.1:" + server.getAddress().getPort() + "/" + code + "/store.hf";
    }

    @Test
    void aStoreIsReadWhateverTheServerAnswersForTheManifestItLacks() {
        for (int code : new int[] {403, 404, 302}) {
            try (Reader reader = Locations.open(url(code), Map.of(), 1.0)) {
                assertEquals("2", reader.get("b"), "manifest answered " + code);
            }
        }
    }

    @Test
    void aServerErrorOnTheManifestIsTheError() {
        // A 500 may hide a dataset that is there: not taken for "none".
        assertThrows(RemoteException.Server.class,
                () -> Locations.open(url(500), Map.of("retries", 0L), null).close());
    }
}
