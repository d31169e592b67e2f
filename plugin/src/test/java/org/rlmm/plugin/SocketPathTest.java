package org.rlmm.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A socket path too long for Linux moves to a per-user directory whose owner and mode are checked. */
class SocketPathTest {
    @TempDir
    Path dir;

    private Path deep() {
        return dir.resolve("d".repeat(60)).resolve("e".repeat(60)).resolve("kafka-logs.rlmm").resolve("serve.sock");
    }

    @Test
    void aLongPathGoesToTheUsersDirectoryUnderTheTempDirectory() {
        Path wanted = deep();
        Path tmp = SocketPath.choose(wanted, "/var/tmp", "kafka");
        assertEquals(Path.of("/var/tmp/rlmm-kafka"), tmp.getParent(), tmp.toString());
        assertEquals(tmp, SocketPath.choose(wanted, "/var/tmp", "kafka"), "the same broker finds the same socket");
        assertTrue(SocketPath.fits(tmp));
        Path far = SocketPath.choose(wanted, "/" + "t".repeat(100), "kafka");
        assertEquals(Path.of("/tmp/rlmm-kafka"), far.getParent(), "a temporary directory too long itself: /tmp");
        Path shortOne = dir.resolve("serve.sock");
        assertEquals(shortOne, SocketPath.choose(shortOne, "/var/tmp", "kafka"), "a path that fits stays");
    }

    @Test
    void prepareMakesAPrivateDirectoryAndRefusesAnOpenOne() throws IOException {
        Path work = Files.createDirectory(dir.resolve("work"));
        Path socketDir = dir.resolve("rlmm-kafka");
        SocketPath.prepare(socketDir, work);
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(socketDir)));
        SocketPath.prepare(socketDir, work); // again: the same directory passes

        Files.setPosixFilePermissions(socketDir, PosixFilePermissions.fromString("rwxrwxrwx"));
        IOException open = assertThrows(IOException.class, () -> SocketPath.prepare(socketDir, work));
        assertTrue(open.getMessage().contains(socketDir.toString()) && open.getMessage().contains("rwxrwxrwx"), open.getMessage());

        Path elsewhere = Files.createDirectory(dir.resolve("elsewhere"), PosixFilePermissions.asFileAttribute(
                PosixFilePermissions.fromString("rwx------")));
        Path link = dir.resolve("rlmm-linked");
        Files.createSymbolicLink(link, elsewhere);
        IOException linked = assertThrows(IOException.class, () -> SocketPath.prepare(link, work));
        assertTrue(linked.getMessage().contains(link.toString()) && linked.getMessage().contains("link"), linked.getMessage());
    }

    @Test
    void prepareRefusesADirectoryOfAnotherUser() throws IOException {
        Path work = Files.createDirectory(dir.resolve("work"));
        Path runtime = Files.createDirectory(dir.resolve("rlmm-kafka"), PosixFilePermissions.asFileAttribute(
                PosixFilePermissions.fromString("rwx------")));
        int other = ((Integer) Files.getAttribute(work, "unix:uid", LinkOption.NOFOLLOW_LINKS)) + 4242;
        try {
            Files.setAttribute(runtime, "unix:uid", other, LinkOption.NOFOLLOW_LINKS);
        } catch (IOException e) {
            // Not root: another user's directory cannot be made here.
            System.out.println("SKIP part: cannot chown " + runtime + " to uid " + other + " (" + e + "): not root");
            org.junit.jupiter.api.Assumptions.abort("cannot chown without root");
        }
        IOException e = assertThrows(IOException.class, () -> SocketPath.prepare(runtime, work));
        assertTrue(e.getMessage().contains("owned by uid " + other), e.getMessage());
    }
}
