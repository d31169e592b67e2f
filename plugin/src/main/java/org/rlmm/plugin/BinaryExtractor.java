package org.rlmm.plugin;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URL;
import java.net.URLConnection;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import org.apache.kafka.common.config.ConfigException;

/**
 * The rlmm binary the jar carries for each platform, at {@code org/rlmm/plugin/bin/<platform>/rlmm}
 * with its SHA-256 beside it in {@code rlmm.sha256} (scripts/plugin.sh writes both), put into the
 * work directory: a file there whose checksum matches is used as it is; otherwise the binary is
 * written to a temporary file (mode 0700) in the same directory, checked while written, and renamed
 * into place, so a child never starts a half-written binary.
 */
final class BinaryExtractor {
    static final String RESOURCE_ROOT = "org/rlmm/plugin/bin/";

    private BinaryExtractor() {}

    /** Go's name of a JVM's os.name and os.arch (linux-amd64, linux-arm64); null for a host the jar has no build for. */
    static String platform(String osName, String osArch) {
        String arch = osArch == null ? "" : osArch.trim().toLowerCase(Locale.ROOT);
        String goarch = List.of("amd64", "x86_64").contains(arch) ? "amd64" : List.of("aarch64", "arm64").contains(arch) ? "arm64" : null;
        return "linux".equalsIgnoreCase(String.valueOf(osName).trim()) && goarch != null ? "linux-" + goarch : null;
    }

    /**
     * Makes target the jar's binary for the host.
     *
     * @return whether it was written (false: an intact copy was there)
     * @throws ConfigException naming {@link PluginConfig#BINARY} when the jar has no binary for the host
     * @throws IOException when it cannot be written, or the jar's bytes do not match its checksum
     */
    static boolean install(Path target, String osName, String osArch, ClassLoader loader) throws IOException {
        String platform = platform(osName, osArch);
        String dir = RESOURCE_ROOT + platform + "/";
        URL bin = platform == null ? null : loader.getResource(dir + "rlmm");
        URL sum = platform == null ? null : loader.getResource(dir + "rlmm.sha256");
        if (bin == null || sum == null) {
            throw new ConfigException(PluginConfig.BINARY, null, "not set, and the plugin jar has no rlmm binary for this host (os.name="
                    + osName + ", os.arch=" + osArch + "; the jar of scripts/plugin.sh build carries linux-amd64 and linux-arm64)."
                    + " Set " + PluginConfig.BINARY + " to an rlmm binary built for this host (go build ./cmd/rlmm)");
        }
        String want;
        try (InputStream in = open(sum)) {
            want = new String(in.readAllBytes(), StandardCharsets.US_ASCII).trim().split("\\s+", 2)[0].toLowerCase(Locale.ROOT);
        }
        if (Files.isRegularFile(target) && want.equals(sha256(Files.newInputStream(target), OutputStream.nullOutputStream()))) {
            target.toFile().setExecutable(true, true);
            return false;
        }
        Files.createDirectories(target.toAbsolutePath().getParent());
        Path tmp = Files.createTempFile(target.toAbsolutePath().getParent(), ".rlmm-", ".tmp",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        try {
            String got;
            try (OutputStream out = Files.newOutputStream(tmp)) {
                got = sha256(open(bin), out);
            }
            if (!got.equals(want)) {
                throw new IOException("the jar's rlmm binary for " + platform + " has SHA-256 " + got + ", its checksum file says "
                        + want + ": the jar is damaged");
            }
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            return true;
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /** Copies in to out (closing in) and returns the SHA-256 of what went, in lower-case hex. */
    static String sha256(InputStream in, OutputStream out) throws IOException {
        MessageDigest md;
        try {
            md = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JVM has no SHA-256", e);
        }
        try (InputStream d = new DigestInputStream(in, md)) {
            d.transferTo(out);
        }
        return HexFormat.of().formatHex(md.digest());
    }

    /**
     * Opens a resource without the JDK's shared cache of jar files, which would keep the jar open for
     * the JVM's life after this plugin instance and its class loader are gone.
     */
    private static InputStream open(URL resource) throws IOException {
        URLConnection c = resource.openConnection();
        c.setUseCaches(false);
        return c.getInputStream();
    }
}
