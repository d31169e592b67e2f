package org.rlmm.plugin;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Set;

/**
 * Chooses the child's Unix socket path. A socket address holds at most 107 bytes of path on
 * Linux (sun_path is 108 bytes with its terminating NUL); a log directory can be deeper than
 * that, so a path that does not fit moves to a per-user runtime directory: {@code $XDG_RUNTIME_DIR}
 * when it is set (systemd's /run/user/UID, private to the user), else
 * {@code <java.io.tmpdir>/rlmm-<user.name>} (or under /tmp), and in it to {@code rlmm-<hash of the
 * wanted path>/serve.sock}: the same broker finds the same socket after a restart, two brokers on
 * one host never share one. Before the child starts, {@link #prepare} creates the directories
 * (mode 0700) or checks the ones there: each must be a real directory (not a link) owned by the
 * user the plugin runs as, with no access for group or others; anything else is refused naming
 * it, since another local user who owned the directory could replace the socket with one of
 * their own.
 */
final class SocketPath {
    /** The longest path a Unix socket address holds on Linux. */
    static final int MAX_BYTES = 107;

    private SocketPath() {}

    static Path choose(Path wanted) {
        return choose(wanted, System.getenv("XDG_RUNTIME_DIR"), System.getProperty("java.io.tmpdir"),
                System.getProperty("user.name", "user"));
    }

    static Path choose(Path wanted, String xdgRuntimeDir, String tmpdir, String user) {
        if (fits(wanted)) {
            return wanted;
        }
        String dir = "rlmm-" + hash(wanted.toString());
        String perUser = "rlmm-" + user.replaceAll("[^A-Za-z0-9._-]", "_");
        if (xdgRuntimeDir != null && !xdgRuntimeDir.isEmpty() && Paths.get(xdgRuntimeDir).isAbsolute()) {
            Path p = Paths.get(xdgRuntimeDir, dir, "serve.sock");
            if (fits(p)) {
                return p;
            }
        }
        for (String base : new String[] {tmpdir, "/tmp"}) {
            if (base == null || base.isEmpty()) {
                continue;
            }
            Path p = Paths.get(base, perUser, dir, "serve.sock").toAbsolutePath();
            if (fits(p)) {
                return p;
            }
        }
        return Paths.get("/tmp", perUser, dir, "serve.sock");
    }

    static boolean fits(Path p) {
        return p.toString().getBytes(StandardCharsets.UTF_8).length <= MAX_BYTES;
    }

    /**
     * Creates (mode 0700) or checks the socket's directory and, when the socket moved out of the
     * work directory, the per-user directory above it: each must be a directory, not a link, owned
     * by uid (the owner of the work directory the plugin just created), without group or other
     * permissions. The runtime directory itself ($XDG_RUNTIME_DIR, or the per-user one) is checked
     * the same way.
     *
     * @throws IOException naming the directory that fails the check
     */
    static void prepare(Path socketDir, Path workDir) throws IOException {
        Object uid = Files.getAttribute(workDir, "unix:uid", LinkOption.NOFOLLOW_LINKS);
        if (socketDir.startsWith(workDir)) {
            return; // inside the work directory, which the plugin created 0700 itself
        }
        Path parent = socketDir.getParent();
        if (parent != null) {
            privateDir(parent, uid);
        }
        privateDir(socketDir, uid);
    }

    private static void privateDir(Path d, Object uid) throws IOException {
        try {
            Files.createDirectory(d, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        } catch (FileAlreadyExistsException e) {
            // checked below
        }
        if (!Files.isDirectory(d, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException(d + " (the directory of rlmm serve's socket) is not a directory, or is a link: refused");
        }
        Object owner = Files.getAttribute(d, "unix:uid", LinkOption.NOFOLLOW_LINKS);
        if (!owner.equals(uid)) {
            throw new IOException(d + " (the directory of rlmm serve's socket) is owned by uid " + owner
                    + ", not by this broker's uid " + uid + ": refused (another user could replace the socket)");
        }
        Set<PosixFilePermission> mode = Files.getPosixFilePermissions(d, LinkOption.NOFOLLOW_LINKS);
        for (PosixFilePermission p : mode) {
            if (p.name().startsWith("GROUP") || p.name().startsWith("OTHERS")) {
                throw new IOException(d + " (the directory of rlmm serve's socket) has mode "
                        + PosixFilePermissions.toString(mode) + ", open to other users: refused (want rwx------)");
            }
        }
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
