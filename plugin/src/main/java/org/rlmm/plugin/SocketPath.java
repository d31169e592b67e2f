package org.rlmm.plugin;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * Chooses the child's Unix socket path. A socket address holds at most 107 bytes of path on
 * Linux (sun_path is 108 bytes with its terminating NUL); a log directory can be deeper than
 * that, so a path that does not fit moves to a private directory under java.io.tmpdir (or /tmp)
 * whose name is a hash of the wanted path: the same broker finds the same socket after a
 * restart, two brokers on one host never share one.
 */
final class SocketPath {
    /** The longest path a Unix socket address holds on Linux. */
    static final int MAX_BYTES = 107;

    private SocketPath() {}

    static Path choose(Path wanted) {
        if (fits(wanted)) {
            return wanted;
        }
        String dir = "rlmm-" + hash(wanted.toString());
        for (String base : new String[] {System.getProperty("java.io.tmpdir"), "/tmp"}) {
            if (base == null || base.isEmpty()) {
                continue;
            }
            Path p = Paths.get(base, dir, "serve.sock").toAbsolutePath();
            if (fits(p)) {
                return p;
            }
        }
        return Paths.get("/tmp", dir, "serve.sock");
    }

    static boolean fits(Path p) {
        return p.toString().getBytes(StandardCharsets.UTF_8).length <= MAX_BYTES;
    }

    private static String hash(String s) {
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
            StringBuilder b = new StringBuilder();
            for (int i = 0; i < 8; i++) {
                b.append(String.format("%02x", d[i]));
            }
            return b.toString();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }
}
