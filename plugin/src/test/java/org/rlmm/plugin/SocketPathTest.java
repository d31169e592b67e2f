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

/** A socket path too long for Linux moves to a per-user runtime directory whose owner and mode are checked. */
class SocketPathTest {
    @TempDir
    Path dir;

    private Path deep() {
        return dir.resolve("d".repeat(60)).resolve("e".repeat(60)).resolve("kafka-logs.rlmm").resolve("serve.sock");
    }

    @Test
    void aLongPathGoesToTheUsersRuntimeDirectory() {
        Path wanted = deep();
        Path xdg = SocketPath.choose(wanted, "/run/user/1000", "/tmp", "kafka");
        assertTrue(xdg.startsWith("/run/user/1000") && xdg.getParent().getFileName().toString().startsWith("rlmm-"), xdg.toString());
        Path tmp = SocketPath.choose(wanted, null, "/tmp", "kafka");
        assertEquals(Path.of("/tmp/rlmm-kafka"), tmp.getParent().getParent(), tmp.toString());
        assertEquals(tmp, SocketPath.choose(wanted, null, "/tmp", "kafka"), "the same broker finds the same socket");
        assertTrue(SocketPath.fits(tmp) && SocketPath.fits(xdg));
        Path shortOne = dir.resolve("serve.sock");
        assertEquals(shortOne, SocketPath.choose(shortOne, "/run/user/1000", "/tmp", "kafka"), "a path that fits stays");
    }

    @Test
    void prepareMakesPrivateDirectoriesAndRefusesOpenOnes() throws IOException {
        Path work = Files.createDirectory(dir.resolve("work"));
        Path runtime = dir.resolve("rlmm-kafka");
        Path socketDir = runtime.resolve("rlmm-0123456789abcdef");
        SocketPath.prepare(socketDir, work);
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(runtime)));
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(socketDir)));
        SocketPath.prepare(socketDir, work); // again: the same directories pass

        Files.setPosixFilePermissions(runtime, PosixFilePermissions.fromString("rwxrwxrwx"));
        IOException open = assertThrows(IOException.class, () -> SocketPath.prepare(socketDir, work));
        assertTrue(open.getMessage().contains(runtime.toString()) && open.getMessage().contains("rwxrwxrwx"), open.getMessage());
        Files.setPosixFilePermissions(runtime, PosixFilePermissions.fromString("rwx------"));

        Path elsewhere = Files.createDirectory(dir.resolve("elsewhere"), PosixFilePermissions.asFileAttribute(
                PosixFilePermissions.fromString("rwx------")));
        Path link = dir.resolve("rlmm-linked");
        Files.createSymbolicLink(link, elsewhere);
        IOException linked = assertThrows(IOException.class, () -> SocketPath.prepare(link.resolve("rlmm-x"), work));
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
            // Not root: another user's directory cannot be made here; the check still runs on a
            // directory root owns, if /tmp has one (it does not need to).
            System.out.println("SKIP part: cannot chown " + runtime + " to uid " + other + " (" + e + "): not root");
            org.junit.jupiter.api.Assumptions.abort("cannot chown without root");
        }
        IOException e = assertThrows(IOException.class, () -> SocketPath.prepare(runtime.resolve("rlmm-x"), work));
        assertTrue(e.getMessage().contains("owned by uid " + other), e.getMessage());
    }
}
