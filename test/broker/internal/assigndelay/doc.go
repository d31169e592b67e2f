// Command assigndelay is a test seam of the broker tests: the plugin's
// rlmm.serve.binary in TestNoOffsetOutOfRangeInTheAssignmentWindow. Run by
// the plugin as `assigndelay serve --socket PATH ...`, it starts the real
// `rlmm serve` (the binary linked in as main.rlmm) with the same flags but
// another socket (real.sock beside PATH), listens on PATH itself, and
// forwards every framed connection (rpc/brokerframe) between the plugin
// and the server, holding back each assignment change (a leadership change
// or a stop) for main.delay before passing it on. Its hello answer and
// ServerInfo replies name this process's pid, the plugin's child. So the window in which
// the broker's change waits in the plugin's outbox is held open by the
// test, not by a setting of the product.
//
// The server's stdin is a pipe this process holds and feeds from its own:
// with --exit-with-stdin (which the plugin passes) the server stops when
// this process dies, even by kill -9. When the server exits, so does this
// process (status 2 when the server was killed by a signal, else the
// server's); SIGTERM and SIGINT are passed on to the server.
//
// Build it with the two values linked in:
//
//	go build -ldflags "-X main.rlmm=/path/to/rlmm -X main.delay=20s" ./test/broker/internal/assigndelay
package main
