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
 * The child's Unix socket path. A path longer than Linux's 107 bytes moves to a per-user runtime
 * directory ({@code $XDG_RUNTIME_DIR}, else {@code <java.io.tmpdir>/rlmm-<user>}) under a hash of the
 * wanted path, so a restarted broker finds its socket and two brokers never share one; {@link
 * #prepare} refuses a directory through which another local user could replace the socket.
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
     * Creates (0700) or checks the socket's directory and the one above it, when outside the work
     * directory: a real directory owned by the work directory's owner, closed to group and others.
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
