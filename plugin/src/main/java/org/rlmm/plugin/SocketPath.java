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
import java.util.Arrays;
import java.util.HexFormat;

/**
 * The child's Unix socket path. One longer than Linux's 107 bytes moves to
 * {@code <java.io.tmpdir>/rlmm-<user>/<hash of the wanted path>.sock} (under /tmp when even that is
 * too long), so a restarted broker finds its socket and two brokers never share one; {@link
 * #prepare} refuses that directory when another local user could replace the socket through it.
 */
final class SocketPath {
    /** The longest path a Unix socket address holds on Linux. */
    static final int MAX_BYTES = 107;

    private SocketPath() {}

    static Path choose(Path wanted) {
        return choose(wanted, System.getProperty("java.io.tmpdir", "/tmp"), System.getProperty("user.name", "user"));
    }

    static Path choose(Path wanted, String tmpdir, String user) {
        if (fits(wanted)) {
            return wanted;
        }
        String name = "rlmm-" + user.replaceAll("[^A-Za-z0-9._-]", "_");
        String sock = hash(wanted.toString()) + ".sock";
        Path p = Paths.get(tmpdir, name, sock).toAbsolutePath();
        return fits(p) ? p : Paths.get("/tmp", name, sock);
    }

    static boolean fits(Path p) {
        return p.toString().getBytes(StandardCharsets.UTF_8).length <= MAX_BYTES;
    }

    /**
     * Creates (0700) or checks the socket's directory when it is outside the work directory: a real
     * directory owned by the work directory's owner, closed to group and others.
     *
     * @throws IOException naming the directory that fails the check
     */
    static void prepare(Path socketDir, Path workDir) throws IOException {
        if (socketDir.startsWith(workDir)) {
            return; // inside the work directory, which the plugin created 0700 itself
        }
        try {
            Files.createDirectory(socketDir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        } catch (FileAlreadyExistsException e) {
            // checked below
        }
        String refused = socketDir + " (the directory of rlmm serve's socket) ";
        if (!Files.isDirectory(socketDir, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException(refused + "is not a directory, or is a link: refused");
        }
        Object uid = Files.getAttribute(workDir, "unix:uid", LinkOption.NOFOLLOW_LINKS);
        Object owner = Files.getAttribute(socketDir, "unix:uid", LinkOption.NOFOLLOW_LINKS);
        if (!owner.equals(uid)) {
            throw new IOException(refused + "is owned by uid " + owner + ", not by this broker's uid " + uid
                    + ": refused (another user could replace the socket)");
        }
        var mode = Files.getPosixFilePermissions(socketDir, LinkOption.NOFOLLOW_LINKS);
        if (mode.stream().anyMatch(p -> p != PosixFilePermission.OWNER_READ && p != PosixFilePermission.OWNER_WRITE
                && p != PosixFilePermission.OWNER_EXECUTE)) {
            throw new IOException(refused + "has mode " + PosixFilePermissions.toString(mode)
                    + ", open to other users: refused (want rwx------)");
        }
    }

    private static String hash(String s) {
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(Arrays.copyOf(d, 8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }
}
