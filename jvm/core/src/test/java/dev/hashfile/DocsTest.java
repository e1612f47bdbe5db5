package dev.hashfile;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * docs/JVM.md's Java snippets compile and run, as the docs test runs the
 * Ruby and shell ones: each block's imports kept, the rest the body of a
 * method, the files it names in a directory of its own.
 */
class DocsTest {
    @TempDir
    Path dir;

    @Test
    void everyJavaSnippetRuns() throws Exception {
        Path doc = Path.of(System.getProperty("hashfile.root", "../.."), "docs", "JVM.md");
        List<String> blocks = new ArrayList<>();
        // A block under a "<!-- not run: why -->" line is shown, not run.
        Matcher m = Pattern.compile("(?ms)^(<!-- not run:[^\\n]*\\n)?```java\\n(.*?)^```$").matcher(Files.readString(doc));
        while (m.find()) {
            if (m.group(1) == null) {
                blocks.add(m.group(2));
            }
        }
        assertFalse(blocks.isEmpty(), "docs/JVM.md has Java snippets");
        Files.writeString(dir.resolve("export.csv"), "sku,name,price\nA1,apple,1.20\nB2,banana,0.50\n");
        for (int i = 0; i < blocks.size(); i++) {
            run("Snippet" + i, blocks.get(i));
        }
        assertTrue(Files.exists(dir.resolve("prices.hf")), "the snippet's build_from published");
    }

    private void run(String name, String block) throws Exception {
        StringBuilder imports = new StringBuilder("import java.util.*;\n");
        StringBuilder body = new StringBuilder();
        for (String line : block.split("\n")) {
            (line.startsWith("import ") ? imports : body).append(line).append('\n');
        }
        // The files a snippet names, in this test's directory.
        String code = body.toString().replaceAll("\"([\\w.-]+\\.(hf|csv))\"",
                "\"" + dir.toString().replace("\\", "\\\\") + "/$1\"");
        Path source = dir.resolve(name + ".java");
        Files.writeString(source, imports + "public class " + name + " {\n"
                + "  public static void run() throws Exception {\n" + code + "  }\n}\n", StandardCharsets.UTF_8);
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        int status = javac.run(null, null, null, "-classpath", System.getProperty("java.class.path"),
                "-d", dir.toString(), source.toString());
        assertEquals(0, status, name + " of docs/JVM.md compiles");
        try (URLClassLoader loader = new URLClassLoader(new URL[] {dir.toUri().toURL()}, getClass().getClassLoader())) {
            Method method = loader.loadClass(name).getMethod("run");
            method.invoke(null);
        }
    }
}
