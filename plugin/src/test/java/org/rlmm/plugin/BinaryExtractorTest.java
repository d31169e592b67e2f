package org.rlmm.plugin;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The jar's rlmm binaries and their extraction, on made-up resources: a class loader over a
 * directory laid out as the jar is (org/rlmm/plugin/bin/&lt;platform&gt;/rlmm and rlmm.sha256).
 */
class BinaryExtractorTest {
    @TempDir
    Path dir;

    private static final byte[] AMD64 = "#!/bin/sh\necho amd64 build\n".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] ARM64 = "#!/bin/sh\necho arm64 build\n".getBytes(StandardCharsets.US_ASCII);

    private static String sha256(byte[] b) throws IOException {
        return BinaryExtractor.sha256(new ByteArrayInputStream(b), OutputStream.nullOutputStream());
    }

    /** A class loader whose resources are the given platforms' binaries, with their right checksums. */
    private URLClassLoader jar(Map<String, byte[]> binaries) throws Exception {
        Path root = Files.createTempDirectory(dir, "jar");
        for (Map.Entry<String, byte[]> e : binaries.entrySet()) {
            Path d = Files.createDirectories(root.resolve(BinaryExtractor.RESOURCE_ROOT + e.getKey()));
            Files.write(d.resolve("rlmm"), e.getValue());
            Files.writeString(d.resolve("rlmm.sha256"), sha256(e.getValue()) + "  rlmm\n");
        }
        return new URLClassLoader(new URL[] {root.toUri().toURL()}, null);
    }

    @Test
    void theJvmsNamesMapToGosPlatforms() {
        assertEquals("linux-amd64", BinaryExtractor.platform("Linux", "amd64"));
        assertEquals("linux-amd64", BinaryExtractor.platform("Linux", "x86_64"));
        assertEquals("linux-arm64", BinaryExtractor.platform("Linux", "aarch64"));
        assertEquals("linux-arm64", BinaryExtractor.platform("Linux", "arm64"));
        assertNull(BinaryExtractor.platform("Mac OS X", "aarch64"));
        assertNull(BinaryExtractor.platform("Linux", "s390x"));
        assertNull(BinaryExtractor.platform(null, null));
    }

    @Test
    void extractsTheHostsBinaryExecutableByItsOwnerOnly() throws Exception {
        try (URLClassLoader jar = jar(Map.of("linux-amd64", AMD64, "linux-arm64", ARM64))) {
            Path work = dir.resolve("kafka-logs.rlmm");
            Path target = work.resolve("rlmm");
            assertTrue(BinaryExtractor.install(target, "Linux", "aarch64", jar), "a missing binary is written");
            assertArrayEquals(ARM64, Files.readAllBytes(target));
            assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(target)));
            assertEquals(List.of(target), listing(work), "no temporary file is left beside it");
        }
    }

    @Test
    void anIntactCopyIsReusedAndAnAlteredOneReplaced() throws Exception {
        try (URLClassLoader jar = jar(Map.of("linux-amd64", AMD64))) {
            Path target = dir.resolve("rlmm");
            assertTrue(BinaryExtractor.install(target, "Linux", "amd64", jar));
            FileTime old = FileTime.fromMillis(1_000_000_000_000L);
            Files.setLastModifiedTime(target, old);
            Object inode = Files.readAttributes(target, BasicFileAttributes.class).fileKey();
            assertFalse(BinaryExtractor.install(target, "Linux", "amd64", jar), "a file whose checksum matches is not written again");
            assertEquals(old, Files.getLastModifiedTime(target));
            assertEquals(inode, Files.readAttributes(target, BasicFileAttributes.class).fileKey());
            Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("rw-------"));
            assertFalse(BinaryExtractor.install(target, "Linux", "amd64", jar));
            assertTrue(Files.isExecutable(target), "an intact copy that lost its execute bit gets it back");
            Files.write(target, "#!/bin/sh\necho someone else's\n".getBytes(StandardCharsets.US_ASCII));
            assertTrue(BinaryExtractor.install(target, "Linux", "amd64", jar), "a file whose checksum does not match is written again");
            assertArrayEquals(AMD64, Files.readAllBytes(target));
        }
    }

    @Test
    void aResourceThatDoesNotMatchItsChecksumIsRefused() throws Exception {
        try (URLClassLoader jar = jar(Map.of("linux-amd64", AMD64))) {
            Path sum = Path.of(jar.getURLs()[0].toURI()).resolve(BinaryExtractor.RESOURCE_ROOT + "linux-amd64/rlmm.sha256");
            Files.writeString(sum, sha256(ARM64) + "  rlmm\n");
            Path target = dir.resolve("work").resolve("rlmm");
            IOException e = assertThrows(IOException.class, () -> BinaryExtractor.install(target, "Linux", "amd64", jar));
            assertTrue(e.getMessage().contains("the jar is damaged"), e.getMessage());
            assertEquals(List.of(), listing(target.getParent()), "neither the binary nor a temporary file is left");
        }
    }

    @Test
    void aHostTheJarHasNoBinaryForIsAConfigExceptionSayingWhatToDo() throws Exception {
        try (URLClassLoader jar = jar(Map.of("linux-amd64", AMD64))) {
            for (String arch : List.of("s390x", "aarch64")) {
                ConfigException e = assertThrows(ConfigException.class,
                        () -> BinaryExtractor.install(dir.resolve("rlmm"), "Linux", arch, jar));
                for (String want : List.of("os.name=Linux", "os.arch=" + arch, "rlmm.serve.binary")) {
                    assertTrue(e.getMessage().contains(want), "missing " + want + ": " + e.getMessage());
                }
            }
        }
    }

    @Test
    void rlmmServeBinaryIsUsedAsItIsWithNothingExtracted() throws Exception {
        Path own = Files.createFile(dir.resolve("my-rlmm"), PosixFilePermissions.asFileAttribute(
                PosixFilePermissions.fromString("rwx------")));
        Map<String, Object> c = new java.util.HashMap<>(TestSupport.embeddedConfig(dir));
        c.put("rlmm.serve.binary", own.toString());
        PluginConfig p = PluginConfig.parse(c);
        assertEquals(own, p.binary);
        assertFalse(p.bundledBinary());
    }

    private static List<Path> listing(Path d) throws IOException {
        if (!Files.isDirectory(d)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(d)) {
            return s.sorted().toList();
        }
    }
}
