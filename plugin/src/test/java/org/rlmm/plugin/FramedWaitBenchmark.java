package org.rlmm.plugin;

import com.google.protobuf.CodedOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import org.rlmm.plugin.proto.SegmentForOffsetRequest;
import org.rlmm.plugin.proto.SegmentForOffsetStreamReply;
import org.rlmm.plugin.proto.SegmentForOffsetStreamRequest;

/**
 * PluginBenchmark's {@code --framed-wait N}: how a caller of the framed lookup socket should wait
 * for its reply within a deadline, measured on raw connections to the bench's child, rounds taking
 * turns. "blocking" is what {@link FramedPool} does (a blocking read; a watchdog closes an
 * overdue channel, which costs the lookup two volatile writes, included here); "selector" is a
 * non-blocking channel whose caller waits in a per-connection Selector with the remaining time.
 */
final class FramedWaitBenchmark {
    private FramedWaitBenchmark() {}

    private static final byte[] MAGIC = "RLMMLOOKUP".getBytes(StandardCharsets.US_ASCII);

    /** A raw connection past its hello. */
    private static final class Raw {
        final SocketChannel ch;
        final Selector selector;
        final ByteBuffer out = ByteBuffer.allocateDirect(1024);
        final ByteBuffer in = ByteBuffer.allocateDirect(64 << 10);
        volatile long due;

        Raw(Path socket, boolean selecting) throws IOException {
            ch = SocketChannel.open(StandardProtocolFamily.UNIX);
            ch.connect(UnixDomainSocketAddress.of(socket));
            out.clear();
            out.putInt(MAGIC.length + 1).put(MAGIC).put((byte) 1).flip();
            while (out.hasRemaining()) {
                ch.write(out);
            }
            in.clear();
            fillBlocking(4);
            fillBlocking(4 + in.getInt(0));
            if (in.get(4 + MAGIC.length + 1) != 0) {
                throw new IOException("hello refused");
            }
            if (selecting) {
                ch.configureBlocking(false);
                selector = Selector.open();
                ch.register(selector, SelectionKey.OP_READ);
            } else {
                selector = null;
            }
        }

        private void fillBlocking(int n) throws IOException {
            while (in.position() < n) {
                if (ch.read(in) < 0) {
                    throw new EOFException();
                }
            }
        }

        SegmentForOffsetStreamReply roundTrip(SegmentForOffsetStreamRequest req, long timeoutMs) throws IOException {
            due = System.nanoTime() + timeoutMs * 1_000_000;
            out.clear();
            out.putInt(req.getSerializedSize());
            CodedOutputStream cos = CodedOutputStream.newInstance(out);
            req.writeTo(cos);
            cos.flush();
            out.flip();
            while (out.hasRemaining()) {
                ch.write(out);
            }
            in.clear();
            fill(4, timeoutMs);
            int n = in.getInt(0);
            fill(4 + n, timeoutMs);
            due = 0;
            return SegmentForOffsetStreamReply.parseFrom(in.flip().position(4).slice());
        }

        private void fill(int n, long timeoutMs) throws IOException {
            while (in.position() < n) {
                int r = ch.read(in);
                if (r < 0) {
                    throw new EOFException();
                }
                if (r == 0 && selector != null) {
                    selector.select(timeoutMs);
                    selector.selectedKeys().clear();
                }
            }
        }
    }

    /** Runs n round trips of req on each kind, in 10 rounds taking turns, and prints p50 and CPU. */
    static void run(Path socket, SegmentForOffsetRequest q, int n, java.util.function.LongSupplier childCpu) throws IOException {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        String[] kinds = {"blocking", "selector"};
        Raw[] raws = {new Raw(socket, false), new Raw(socket, true)};
        int rounds = 10;
        int per = n / rounds;
        long[][] times = new long[2][per * rounds];
        long[] cpu = new long[2];
        long[] serve = new long[2];
        SegmentForOffsetStreamRequest req = SegmentForOffsetStreamRequest.newBuilder().setId(1).setRequest(q).build();
        for (int w = 0; w < 2; w++) {
            for (int i = 0; i < per; i++) {
                raws[w].roundTrip(req, 10_000);
            }
        }
        for (int r = 0; r < rounds; r++) {
            for (int k = 0; k < 2; k++) {
                int w = (k + r) % 2;
                long c0 = threads.getCurrentThreadCpuTime();
                long s0 = childCpu.getAsLong();
                for (int i = r * per; i < (r + 1) * per; i++) {
                    long t0 = System.nanoTime();
                    if (!raws[w].roundTrip(req, 10_000).getReply().getFound()) {
                        throw new IllegalStateException("no hit");
                    }
                    times[w][i] = System.nanoTime() - t0;
                }
                cpu[w] += threads.getCurrentThreadCpuTime() - c0;
                serve[w] += childCpu.getAsLong() - s0;
            }
        }
        for (int w = 0; w < 2; w++) {
            long[] s = times[w].clone();
            Arrays.sort(s);
            System.out.printf(Locale.ROOT, "framed wait, %s: n=%d p50=%.1f µs p99=%.1f µs; CPU per lookup: caller %.1f µs,"
                    + " rlmm serve %.1f µs%n", kinds[w], s.length, s[s.length / 2] / 1e3, s[(int) (s.length * 0.99)] / 1e3,
                    cpu[w] / 1e3 / s.length, serve[w] / 1e3 / s.length);
            raws[w].ch.close();
            if (raws[w].selector != null) {
                raws[w].selector.close();
            }
        }
    }
}
