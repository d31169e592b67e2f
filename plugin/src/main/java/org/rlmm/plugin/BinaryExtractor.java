package org.rlmm.plugin;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URL;
import java.net.URLConnection;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.apache.kafka.common.config.ConfigException;

/**
 * The rlmm binaries the jar carries, one per platform, and their extraction into the plugin's work
 * directory. The jar holds, for each platform of {@link #PLATFORMS}, the resource
 * {@code org/rlmm/plugin/bin/<platform>/rlmm} (a static Go build, CGO off) and beside it
 * {@code rlmm.sha256}, its SHA-256 in {@code sha256sum}'s format (scripts/plugin.sh writes both).
 *
 * <p>{@link #forHost} picks the one for the JVM's {@code os.name} and {@code os.arch}, or throws a
 * {@link ConfigException} saying what the host is, what the jar carries and that
 * {@code rlmm.serve.binary} names a binary instead. {@link Bundled#install} puts it at its place in
 * the work directory: an existing file whose checksum matches is used as it is; otherwise the
 * resource is written to a temporary file (mode 0700) in the same directory, its checksum checked
 * while it is written, and the temporary file renamed over the old one, so a child never starts a
 * half-written binary and two plugins extracting at once both end with a whole one.
 */
final class BinaryExtractor {
    /** Where the binaries are in the jar. */
    static final String RESOURCE_ROOT = "org/rlmm/plugin/bin/";
    /** The platforms scripts/plugin.sh builds, as {@code <GOOS>-<GOARCH>}. */
    static final List<String> PLATFORMS = List.of("linux-amd64", "linux-arm64");
    /** The file name of the binary in the work directory. */
    static final String FILE_NAME = "rlmm";

    private static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rwx------");

    private BinaryExtractor() {}

    /** One platform's binary in the jar: its resource and the SHA-256 the jar gives for it. */
    static final class Bundled {
        final String platform;
        final URL resource;
        final String sha256;

        Bundled(String platform, URL resource, String sha256) {
            this.platform = platform;
            this.resource = resource;
            this.sha256 = sha256;
        }

        /** Where the binary goes in a work directory. */
        Path target(Path workDir) {
            return workDir.resolve(FILE_NAME);
        }

        /**
         * Makes {@code target} this binary: kept when its checksum matches, written anew otherwise.
         *
         * @return whether the file was written (false: an intact copy was already there)
         * @throws IOException when it cannot be written, or the jar's bytes do not match the jar's
         *     checksum (a damaged jar)
         */
        boolean install(Path target) throws IOException {
            if (Files.isRegularFile(target) && sha256.equals(sha256(target))) {
                Set<PosixFilePermission> perms = Files.getPosixFilePermissions(target);
                if (!perms.contains(PosixFilePermission.OWNER_EXECUTE)) {
                    Files.setPosixFilePermissions(target, OWNER_ONLY);
                }
                return false;
            }
            Path dir = target.toAbsolutePath().getParent();
            Files.createDirectories(dir);
            Path tmp = Files.createTempFile(dir, "." + FILE_NAME + "-", ".tmp", PosixFilePermissions.asFileAttribute(OWNER_ONLY));
            try {
                MessageDigest md = digest();
                try (InputStream in = open(resource);
                        FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE);
                        OutputStream out = java.nio.channels.Channels.newOutputStream(ch)) {
                    byte[] buf = new byte[1 << 16];
                    for (int n; (n = in.read(buf)) > 0; ) {
                        md.update(buf, 0, n);
                        out.write(buf, 0, n);
                    }
                    out.flush();
                    ch.force(true);
                }
                String got = HexFormat.of().formatHex(md.digest());
                if (!got.equals(sha256)) {
                    throw new IOException("the jar's rlmm binary for " + platform + " (" + resource + ") has SHA-256 "
                            + got + ", its checksum file says " + sha256 + ": the jar is damaged");
                }
                Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                return true;
            } finally {
                Files.deleteIfExists(tmp);
            }
        }
    }

    /**
     * The platform name ({@code linux-amd64}, ...) of a JVM's {@code os.name} and {@code os.arch},
     * whether or not the jar has a binary for it; null when the OS or architecture is not one Go
     * names here.
     */
    static String platform(String osName, String osArch) {
        String os = osName == null ? "" : osName.trim().toLowerCase(Locale.ROOT);
        String arch = osArch == null ? "" : osArch.trim().toLowerCase(Locale.ROOT);
        String goos = os.equals("linux") ? "linux" : os.startsWith("mac") || os.equals("darwin") ? "darwin" : null;
        String goarch;
        switch (arch) {
            case "amd64":
            case "x86_64":
            case "x86-64":
                goarch = "amd64";
                break;
            case "aarch64":
            case "arm64":
                goarch = "arm64";
                break;
            default:
                goarch = null;
        }
        return goos == null || goarch == null ? null : goos + "-" + goarch;
    }

    /** The binary for the JVM this runs in, from the jar this class was loaded from. */
    static Bundled forHost() {
        return find(System.getProperty("os.name"), System.getProperty("os.arch"), BinaryExtractor.class.getClassLoader());
    }

    /**
     * The binary for a host from {@code loader}'s resources.
     *
     * @throws ConfigException naming {@link PluginConfig#BINARY} when there is none for the host (an
     *     OS or architecture the jar has no build for, or a jar built without the binaries)
     */
    static Bundled find(String osName, String osArch, ClassLoader loader) {
        String platform = platform(osName, osArch);
        Bundled b = platform == null ? null : lookup(platform, loader);
        if (b != null) {
            return b;
        }
        List<String> carried = carried(loader);
        throw new ConfigException(PluginConfig.BINARY, null, "not set, and the plugin jar has no rlmm binary for this host"
                + " (os.name=" + osName + ", os.arch=" + osArch + (platform == null ? "" : ", " + platform) + "); it carries "
                + (carried.isEmpty() ? "none (a jar built without them: use scripts/plugin.sh build)" : String.join(", ", carried))
                + ". Set " + PluginConfig.BINARY + " to the path of an rlmm binary built for this host"
                + " (go build ./cmd/rlmm)");
    }

    /** The platforms whose binary and checksum {@code loader} has. */
    static List<String> carried(ClassLoader loader) {
        List<String> out = new ArrayList<>();
        for (String p : PLATFORMS) {
            if (lookup(p, loader) != null) {
                out.add(p);
            }
        }
        return out;
    }

    /** The binary of a platform, or null when the jar lacks it or its checksum file is unreadable. */
    private static Bundled lookup(String platform, ClassLoader loader) {
        URL bin = loader.getResource(RESOURCE_ROOT + platform + "/" + FILE_NAME);
        URL sum = loader.getResource(RESOURCE_ROOT + platform + "/" + FILE_NAME + ".sha256");
        if (bin == null || sum == null) {
            return null;
        }
        String hex;
        try (InputStream in = open(sum)) {
            String text = new String(in.readAllBytes(), StandardCharsets.US_ASCII).trim();
            hex = text.split("\\s+", 2)[0].toLowerCase(Locale.ROOT);
        } catch (IOException e) {
            return null;
        }
        if (!hex.matches("[0-9a-f]{64}")) {
            return null;
        }
        return new Bundled(platform, bin, hex);
    }

    /**
     * Opens a resource of the jar without the JDK's shared cache of jar files: that cache would keep
     * the jar open for the JVM's life after this plugin instance and its class loader are gone (a
     * JVM that starts many brokers makes many instances).
     */
    private static InputStream open(URL resource) throws IOException {
        URLConnection c = resource.openConnection();
        c.setUseCaches(false);
        return c.getInputStream();
    }

    /** The SHA-256 of a file, in lower-case hex. */
    static String sha256(Path file) throws IOException {
        MessageDigest md = digest();
        try (InputStream in = Files.newInputStream(file)) {
            byte[] buf = new byte[1 << 16];
            for (int n; (n = in.read(buf)) > 0; ) {
                md.update(buf, 0, n);
            }
        }
        return HexFormat.of().formatHex(md.digest());
    }

    private static MessageDigest digest() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JVM has no SHA-256", e);
        }
    }
}
