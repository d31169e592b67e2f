package org.rlmm.kafkasuite;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Marks where each run's output begins and ends in the class's output file, so that
 * scripts/kafkasuite_gate.py takes the evidence for a known failure from that run's own lines, not
 * from the whole class's (Surefire writes one {@code <class>-output.txt} per class, the runs one
 * after another: forkCount=1, one thread). The lines are
 * <pre>
 * @@kafkasuite run begin: &lt;class&gt; | &lt;display name&gt;
 * @@kafkasuite run end: &lt;class&gt; | &lt;display name&gt;
 * </pre>
 * printed before the harness's set-up (the first {@code @BeforeEach}) and after its tear-down (the
 * last {@code @AfterEach}), on the stream the brokers' and clients' logs go to. The end line also
 * removes the plugin's work directories of the run's brokers ({@link SuiteRlmm#removeWorkDirs}):
 * they are next to the harness's temporary log directories, not inside them, so nothing else does.
 */
final class RunMarkers implements BeforeEachCallback, AfterEachCallback {
    static final String BEGIN = "@@kafkasuite run begin: ";
    static final String END = "@@kafkasuite run end: ";

    @Override
    public void beforeEach(ExtensionContext context) {
        print(BEGIN, context);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        try {
            SuiteRlmm.removeWorkDirs();
        } finally {
            print(END, context);
        }
    }

    private static void print(String what, ExtensionContext context) {
        String cls = context.getRequiredTestClass().getSimpleName();
        System.out.println(what + cls + " | " + context.getDisplayName());
        System.out.flush();
    }

    /** Deletes a directory tree, leaving nothing of it; a part already gone is no error. */
    static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        List<Path> all = new ArrayList<>();
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(all::add);
        }
        for (Path p : all) {
            Files.deleteIfExists(p);
        }
    }
}
