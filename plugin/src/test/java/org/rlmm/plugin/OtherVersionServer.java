package org.rlmm.plugin;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import org.rlmm.plugin.proto.BrokerAnswer;
import org.rlmm.plugin.proto.ServerInfoReply;

/**
 * A stand-in for {@code rlmm serve} that the tests run as the plugin's child (rlmm.serve.binary):
 * it listens on the child's --socket and answers every hello as a server of the next API version
 * would, accepting it and saying who it is, until its stdin (the plugin's pipe) ends. The tests'
 * own program, so that rlmm serve needs no flag to play another version.
 */
final class OtherVersionServer {
    private OtherVersionServer() {}

    /** The version this stand-in states: the plugin's next one. */
    static final int VERSION = RlmmRemoteLogMetadataManager.API_VERSION + 1;

    /** Writes an executable script in dir that runs this class in a JVM of this test's; its path. */
    static Path script(Path dir) throws IOException {
        Path java = Paths.get(System.getProperty("java.home"), "bin", "java");
        Path bin = dir.resolve("other-version-rlmm");
        Files.writeString(bin, "#!/bin/sh\nexec '" + java + "' -cp '" + System.getProperty("java.class.path") + "' "
                + OtherVersionServer.class.getName() + " \"$@\"\n", StandardCharsets.UTF_8);
        Files.setPosixFilePermissions(bin, PosixFilePermissions.fromString("rwx------"));
        return bin;
    }

    /** The child's main: args are the plugin's flags for rlmm serve (serve --socket PATH ...). */
    public static void main(String[] args) throws IOException {
        Path socket = null;
        for (int i = 0; i + 1 < args.length; i++) {
            if (args[i].equals("--socket")) {
                socket = Paths.get(args[i + 1]);
            }
        }
        if (socket == null) {
            System.err.println("other-version stand-in: no --socket");
            System.exit(2);
        }
        Files.deleteIfExists(socket);
        ServerSocketChannel l = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        l.bind(UnixDomainSocketAddress.of(socket));
        Thread stdin = new Thread(() -> {
            try {
                System.in.transferTo(java.io.OutputStream.nullOutputStream());
            } catch (IOException e) {
                // the pipe broke: the plugin is gone either way
            }
            System.exit(0);
        });
        stdin.setDaemon(true);
        stdin.start();
        System.err.println("level=INFO msg=\"other-version stand-in on " + socket + "\"");
        byte[] answer = BrokerAnswer.newBuilder().setServer(ServerInfoReply.newBuilder().setPid(ProcessHandle.current().pid())
                .setApiVersion(VERSION).setLog("other-version stand-in")).build().toByteArray();
        while (true) {
            try (SocketChannel c = l.accept()) {
                DataInputStream in = new DataInputStream(Channels.newInputStream(c));
                in.readFully(new byte[in.readInt()]); // the hello
                DataOutputStream out = new DataOutputStream(Channels.newOutputStream(c));
                out.writeInt(Wire.MAGIC.length + 1 + answer.length);
                out.write(Wire.MAGIC);
                out.write(VERSION);
                out.write(answer);
                out.flush();
            } catch (IOException e) {
                // that connection only
            }
        }
    }
}
