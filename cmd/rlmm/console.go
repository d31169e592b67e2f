package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlmm-go/rlmm/console"
	"github.com/rlmm-go/rlmm/scrub/layout"
	"github.com/rlmm-go/rlmm/scrub/store"
)

// defaultConsoleListen is where rlmm console serves by default: loopback
// only (9405 for KIP-405).
const defaultConsoleListen = "127.0.0.1:9405"

// consoleOptions are the flags of rlmm console.
type consoleOptions struct {
	log         *logFlags
	listen      string
	allowRemote bool
	refresh     time.Duration
	stuckAfter  time.Duration
	reference   string
	quiet       bool
	timeout     time.Duration
	// storage holds the storage flags (scrub's); scrubbing is on when
	// --layout is given.
	storage scrubOptions
}

func newConsoleCmd() *cobra.Command {
	o := &consoleOptions{}
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Serve a read-only web page of the remote log metadata: topics, segment timelines, anomalies, scrub findings",
		Long: `console reads a remote log metadata log like inspect and verify (read-only,
--dir or --kafka) and serves a web page over it, with its JSON API under /api/:

  topics      the topics with remote data: partitions, segments, remote bytes
              (as inspect --sizes counts them), the oldest remote offset
  timeline    per user partition, its remote segments along the offsets,
              coloured by leader epoch; hatched while COPY_SEGMENT_STARTED
              or DELETE_SEGMENT_STARTED; gaps and overlaps of an epoch's
              coverage and stuck segments marked (verify's rules)
  anomalies   verify's list (--stuck-after, --stuck-reference as verify's)
  storage     scrub's findings (missing, orphans, mismatches) when the
              storage flags are given (--layout with --remote-dir or
              --s3-bucket, as scrub's); listed read-only, nothing is deleted

The page and its scripts are in the binary: nothing is fetched from the
network, so it works on an offline machine. No endpoint changes anything.

The log is read at start (the page is served once that reading is done), then
again every --refresh (0: never), while the page keeps showing the previous
reading; a reading that fails is shown on the page and the previous one stays.
Memory: the view of the log (as inspect's) and, while re-reading, a second one.

The console has no authentication, so it listens on loopback only
(--listen 127.0.0.1:9405); a non-loopback address is refused unless
--allow-remote is given (then put it behind something that authenticates).

It runs until interrupted (Ctrl-C, SIGTERM). Exit status: 0 stopped, 2 could
not run (bad flags, unreadable log, address in use).`,
		Example: `  rlmm console                                  # the newest simulate run in ./rlmm-data, at http://127.0.0.1:9405/
  rlmm console --kafka broker1:9092 --refresh 1m
  rlmm console --kafka broker1:9092 --layout aiven --s3-bucket tiered --s3-prefix prod/
  rlmm console --dir /var/lib/rlmm/log --listen 127.0.0.1:0   # any free port (printed)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runConsole(cmd, o) },
	}
	o.log = addLogFlags(cmd, "directory of the embedded log, of a simulate run, or of simulate's data (newest run)")
	cmd.SetFlagErrorFunc(flagError)
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", defaultConsoleListen, "host:port to serve on; a loopback address unless --allow-remote (port 0: any free port)")
	f.BoolVar(&o.allowRemote, "allow-remote", false, "allow a --listen address other than loopback (the console has no authentication)")
	f.DurationVar(&o.refresh, "refresh", 5*time.Minute, "re-read the log this long after the previous reading ended (0: read once)")
	f.DurationVar(&o.stuckAfter, "stuck-after", time.Hour, "a segment in COPY_SEGMENT_STARTED or DELETE_SEGMENT_STARTED longer than this is stuck, at most "+maxStuckAfter.String())
	f.StringVar(&o.reference, "stuck-reference", "log", "measure ages against the newest event of the log (log) or the wall clock (now)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress display on stderr")
	f.DurationVar(&o.timeout, "timeout", readTimeout, "give up one reading of the log (and one listing of the storage) after this long, at most "+maxTimeout.String())
	o.storage.addStorageFlags(cmd, "listings")
	_ = cmd.RegisterFlagCompletionFunc("stuck-reference", cobra.FixedCompletions([]string{"log", "now"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// checkListen refuses an address that is not host:port, and one that is not
// loopback unless allowRemote: the console has no authentication, and
// every topic name and segment id of the cluster is on its page.
func checkListen(addr string, allowRemote bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErrorf("--listen %q: not host:port (%v)", addr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return usageErrorf("--listen %q: port %q: %v", addr, port, err)
	}
	if allowRemote {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	what := "host " + host
	if host == "" {
		what = "no host (every interface)"
	}
	return usageErrorf("--listen %q: %s is not a loopback address; the console has no authentication and shows every topic "+
		"and segment of the cluster, so it listens on loopback only (e.g. 127.0.0.1:9405) unless --allow-remote is given", addr, what)
}

func (o *consoleOptions) validate(cmd *cobra.Command) (layout.Layout, error) {
	if err := checkListen(o.listen, o.allowRemote); err != nil {
		return nil, err
	}
	if o.refresh < 0 || o.refresh > maxTimeout {
		return nil, usageErrorf("--refresh %s: must be 0 (read once) or positive, at most %s", o.refresh, maxTimeout)
	}
	if o.stuckAfter <= 0 || o.stuckAfter > maxStuckAfter {
		return nil, usageErrorf("--stuck-after %s: must be positive and at most %s (e.g. 30m, 1h, 24h)", o.stuckAfter, maxStuckAfter)
	}
	if o.reference != "log" && o.reference != "now" {
		return nil, usageErrorf("--stuck-reference %q: must be log or now", o.reference)
	}
	if err := checkTimeout(o.timeout); err != nil {
		return nil, err
	}
	if o.storage.layout == "" {
		for _, name := range []string{"remote-dir", "s3-bucket", "s3-prefix", "s3-endpoint", "s3-region", "s3-profile"} {
			if cmd.Flags().Changed(name) {
				return nil, usageErrorf("--%s names remote storage: give --layout too (%s)", name, strings.Join(layout.Names(), " or "))
			}
		}
		return nil, nil
	}
	o.storage.timeout = o.timeout
	return o.storage.validate(cmd)
}

// reader reads the log, and scrubs the storage, into snapshots.
type reader struct {
	o      *consoleOptions
	cmd    *cobra.Command
	layout layout.Layout
	store  store.Store // nil without storage
}

// load reads the whole log once (and lists the storage) into a snapshot;
// quiet hides the progress display (re-readings are quiet).
func (r *reader) load(ctx context.Context, quiet bool) (*console.Snapshot, error) {
	openCtx, cancel := context.WithTimeout(ctx, r.o.timeout)
	defer cancel()
	src, err := r.o.log.openReadOnly(openCtx, r.cmd, slog.New(slog.DiscardHandler), r.o.timeout)
	if err != nil {
		return nil, couldNotRun(err)
	}
	b, err := materialize(ctx, src, r.o.timeout, quiet, nil)
	src.log.Close()
	if err != nil {
		return nil, err
	}
	ref := b.NewestEventMs()
	if r.o.reference == "now" || ref < 0 {
		ref = time.Now().UnixMilli()
	}
	in := console.Input{Source: src.name, Builder: b, Extra: slices.Clone(src.tornTails), ReadAt: time.Now(),
		ReferenceMs: ref, StuckAfter: r.o.stuckAfter}
	if r.store != nil {
		in.Scrub = &console.Scrub{Store: r.store.Name()}
		cmp, err := r.o.storage.compare(ctx, r.layout, r.store, b, quiet)
		if err != nil {
			// The metadata is still worth showing: the page says why
			// the storage is not.
			in.Scrub.Error = err.Error()
		} else {
			in.Scrub.Report = cmp.Report()
		}
	}
	return console.NewSnapshot(in), nil
}

func runConsole(cmd *cobra.Command, o *consoleOptions) error {
	l, err := o.validate(cmd)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r := &reader{o: o, cmd: cmd, layout: l}
	if l != nil {
		if r.store, err = o.storage.openStore(ctx, l); err != nil {
			return err
		}
	}
	snap, err := r.load(ctx, o.quiet)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
	srv := console.NewServer(console.Options{RefreshEvery: o.refresh, Logger: logger})
	srv.Set(snap)
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", o.listen)
	if err != nil {
		return couldNotRun(fmt.Errorf("listening on %s: %w", o.listen, err))
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	refreshWhat := fmt.Sprintf("re-read every %s", o.refresh)
	if o.refresh == 0 {
		refreshWhat = "read once"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "rlmm console: http://%s/ (%s, %s; read-only; Ctrl-C stops)\n", ln.Addr(), snap.Source(), refreshWhat)

	var wg sync.WaitGroup
	serveErr := make(chan error, 1)
	wg.Go(func() { serveErr <- hs.Serve(ln) })
	wg.Go(func() {
		console.Refresh(ctx, srv, o.refresh, func(ctx context.Context) (*console.Snapshot, error) { return r.load(ctx, true) }, logger)
	})
	select {
	case <-ctx.Done():
		err = nil
	case err = <-serveErr:
		err = couldNotRun(fmt.Errorf("serving on %s: %w", ln.Addr(), err))
	}
	stop()
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if serr := hs.Shutdown(shutCtx); serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		_ = hs.Close()
	}
	wg.Wait()
	return err
}
