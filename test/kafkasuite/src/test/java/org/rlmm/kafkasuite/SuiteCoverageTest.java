package org.rlmm.kafkasuite;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

import org.apache.kafka.tiered.storage.TieredStorageTestHarness;
import org.junit.jupiter.api.Test;

/**
 * Every concrete class of Kafka's package org.apache.kafka.tiered.storage.integration (read from the
 * kafka-storage test jar on the class path) has a wrapper here with its simple name that runs it, so a
 * class Kafka adds cannot be silently left out of the suite.
 */
class SuiteCoverageTest {
    private static final String PACKAGE = "org/apache/kafka/tiered/storage/integration/";

    @Test
    void everyClassOfThePackageHasAWrapper() throws Exception {
        File jar = new File(TieredStorageTestHarness.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> concrete = new ArrayList<>();
        List<String> missing = new ArrayList<>();
        try (JarFile jf = new JarFile(jar)) {
            for (Enumeration<JarEntry> en = jf.entries(); en.hasMoreElements();) {
                String n = en.nextElement().getName();
                if (!n.startsWith(PACKAGE) || !n.endsWith(".class") || n.contains("$")
                        || n.substring(PACKAGE.length()).contains("/")) {
                    continue;
                }
                Class<?> real = Class.forName(n.substring(0, n.length() - 6).replace('/', '.'));
                if (Modifier.isAbstract(real.getModifiers())) {
                    continue;
                }
                concrete.add(real.getSimpleName());
                if (!wraps(real)) {
                    missing.add(real.getName());
                }
            }
        }
        assertTrue(missing.isEmpty(), "classes of " + jar.getName() + " without a wrapper: " + missing);
        // kafka-storage 4.3.1's count (docs/COMPATIBILITY.md); a different jar must update the docs too.
        assertEquals(17, concrete.size(), "concrete test classes in " + jar.getName() + ": " + concrete);
    }

    private static boolean wraps(Class<?> real) throws Exception {
        Class<?> w;
        try {
            w = Class.forName("org.rlmm.kafkasuite." + real.getSimpleName());
        } catch (ClassNotFoundException e) {
            return false;
        }
        if (real.isAssignableFrom(w)) {
            return true; // a subclass of a non-final test (TransactionsWithTieredStoreTest)
        }
        if (!RealScenario.class.isAssignableFrom(w)) {
            return false;
        }
        var ctor = w.getDeclaredConstructor();
        ctor.setAccessible(true);
        return ((RealScenario) ctor.newInstance()).realClass() == real;
    }
}
