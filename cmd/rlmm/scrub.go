package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/rlmm-go/rlmm/internal/view"
	"github.com/rlmm-go/rlmm/repair"
	"github.com/rlmm-go/rlmm/scrub"
	"github.com/rlmm-go/rlmm/scrub/layout"
	"github.com/rlmm-go/rlmm/scrub/s3store"
	"github.com/rlmm-go/rlmm/scrub/store"
)

// scrubOptions are the flags of rlmm scrub.
type scrubOptions struct {
	log           *logFlags
	layout        string
	remoteDir     string
	s3            s3store.Config
	s3Prefix      string
	pathStyle     string
	jsonOut       bool
	quiet         bool
	timeout       time.Duration
	deleteOrphans bool
	olderThan     time.Duration
	yes           bool
	quarantine    string
}

// localTieredDir is the directory LocalTieredStorage writes under its
// rsm.config.dir.
const localTieredDir = "kafka-tiered-storage"

func newScrubCmd() *cobra.Command {
	o := &scrubOptions{}
	cmd := &cobra.Command{
		Use:   "scrub",
		Short: "Hold the remote log metadata against the objects in remote storage: missing, orphaned, mismatched",
		Long: `scrub reads the remote log metadata like verify (read-only, --dir or --kafka),
lists the remote storage, and reports per user partition:

  missing     a COPY_SEGMENT_FINISHED (or DELETE_SEGMENT_STARTED) segment whose
              log object is not there: data a consumer will fail to read
  orphans     objects no live segment owns (a copy never recorded, a deletion
              that finished, a deleted topic), with size and age; objects of a
              segment still COPY_SEGMENT_STARTED, of a live segment at another
              key, and keys the layout never writes are listed as protected
              orphans: never deleted
  mismatches  an object whose size differs from the one the layout records, or
              a segment with some of its objects only (the log, not its indexes)

The layout says how the remote storage manager names objects:
  --layout local --remote-dir DIR   Kafka's LocalTieredStorage (DIR is its
                                    rsm.config.dir, or DIR/kafka-tiered-storage)
  --layout aiven --s3-bucket B [--s3-prefix P]
                                    Aiven's tiered-storage-for-apache-kafka on S3;
                                    endpoint, region and credentials as the AWS
                                    SDK reads them (AWS_ACCESS_KEY_ID, AWS_PROFILE,
                                    ...), --s3-endpoint for an S3-compatible server

Nothing is deleted unless --delete-orphans --older-than DURATION is given: then
the orphans that may go (unprotected, older than the threshold: a copy in flight
looks like an orphan for a while) are listed first (a dry run), and deleted only
after confirmation: --yes, or typing their count on a terminal. Without a
terminal and without --yes, only the dry run is printed. Every deletion is
logged on stderr.

Exit status: 0 nothing found, 1 findings (also after deleting orphans: the
report is of the storage as it was found), 2 could not run.`,
		Example: `  rlmm scrub --kafka broker1:9092 --layout local --remote-dir /var/lib/kafka/tiered
  rlmm scrub --kafka broker1:9092 --layout aiven --s3-bucket tiered --s3-prefix prod/ --json
  AWS_PROFILE=ops rlmm scrub --kafka broker1:9092 --layout aiven --s3-bucket tiered \
      --delete-orphans --older-than 72h`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runScrub(cmd, o) },
	}
	o.log = addLogFlags(cmd, "directory of the embedded log, of a simulate run, or of simulate's data (newest run)")
	cmd.SetFlagErrorFunc(flagError)
	f := cmd.Flags()
	o.addStorageFlags(cmd, "listings and deletions")
	f.BoolVar(&o.jsonOut, "json", false, "print JSON for scripts")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress display on stderr")
	f.DurationVar(&o.timeout, "timeout", readTimeout, "give up reading the metadata log, and listing, after this long each")
	f.BoolVar(&o.deleteOrphans, "delete-orphans", false, "delete the orphans older than --older-than (dry run and confirmation first)")
	f.DurationVar(&o.olderThan, "older-than", 0, "with --delete-orphans: only orphans at least this old (e.g. 24h)")
	f.BoolVar(&o.yes, "yes", false, "with --delete-orphans: delete without asking")
	return cmd
}

// scrubJSON is the document scrub --json prints.
type scrubJSON struct {
	Metadata string `json:"metadata"`
	Store    string `json:"store"`
	*scrub.Report
	OK       bool          `json:"ok"`
	Deletion *deletionJSON `json:"deletion,omitempty"`
}

// deletionJSON says what --delete-orphans planned and did.
type deletionJSON struct {
	OlderThanMs  int64               `json:"olderThanMs"`
	Planned      []scrub.Orphan      `json:"planned"`
	PlannedBytes int64               `json:"plannedBytes"`
	Confirmed    bool                `json:"confirmed"`
	Result       *scrub.DeleteResult `json:"result,omitempty"`
}

// validateDelete checks scrub's --delete-orphans, --older-than and --yes.
func (o *scrubOptions) validateDelete(cmd *cobra.Command) error {
	if o.olderThan < 0 || o.olderThan > maxStuckAfter {
		return usageErrorf("--older-than %s: must be positive and at most %s", o.olderThan, maxStuckAfter)
	}
	if o.deleteOrphans && o.olderThan <= 0 {
		return usageErrorf("--delete-orphans needs --older-than DURATION (e.g. 24h): a copy in flight looks like an orphan for a while")
	}
	if !o.deleteOrphans && (cmd.Flags().Changed("older-than") || o.yes) {
		return usageErrorf("--older-than and --yes go with --delete-orphans")
	}
	return nil
}

// validate checks the storage flags and --timeout, and returns the layout.
func (o *scrubOptions) validate(cmd *cobra.Command) (layout.Layout, error) {
	if o.layout == "" {
		return nil, usageErrorf("give --layout: %s", strings.Join(layout.Names(), " or "))
	}
	l, err := layout.New(o.layout, layout.Options{Prefix: o.s3Prefix})
	if err != nil {
		return nil, usageErrorf("--layout: %v", err)
	}
	if err := checkTimeout(o.timeout); err != nil {
		return nil, err
	}
	switch o.pathStyle {
	case "auto":
		o.s3.PathStyle = o.s3.Endpoint != ""
	case "true", "false":
		o.s3.PathStyle = o.pathStyle == "true"
	default:
		return nil, usageErrorf("--s3-path-style %q: must be true, false or auto", o.pathStyle)
	}
	if o.quarantine == "" || !strings.HasSuffix(o.quarantine, "/") || strings.HasPrefix(o.quarantine, "/") || strings.Contains(o.quarantine, "..") {
		return nil, usageErrorf("--quarantine-prefix %q: must be a relative key prefix ending with '/' (e.g. %s)", o.quarantine, repair.DefaultQuarantine)
	}
	if o.s3.Concurrency < 1 || o.s3.Concurrency > 256 {
		return nil, usageErrorf("--s3-concurrency %d: must be 1..256", o.s3.Concurrency)
	}
	if o.s3.RequestTimeout <= 0 || o.s3.RequestTimeout > maxTimeout {
		return nil, usageErrorf("--s3-timeout %s: must be positive and at most %s", o.s3.RequestTimeout, maxTimeout)
	}
	return l, nil
}

// addStorageFlags adds to cmd the flags that name the remote storage and
// its layout (scrub's, rebuild's, repair's and console's), with their shell
// completions; inFlight says what --s3-concurrency bounds.
func (o *scrubOptions) addStorageFlags(cmd *cobra.Command, inFlight string) {
	f := cmd.Flags()
	f.StringVar(&o.layout, "layout", "", "how the remote storage manager names objects: "+strings.Join(layout.Names(), " or "))
	f.StringVar(&o.remoteDir, "remote-dir", "", "local layout: LocalTieredStorage's directory (its rsm.config.dir)")
	f.StringVar(&o.s3.Bucket, "s3-bucket", "", "S3 layouts: the bucket")
	f.StringVar(&o.s3Prefix, "s3-prefix", "", "S3 layouts: the key prefix the storage manager was configured with")
	f.StringVar(&o.s3.Endpoint, "s3-endpoint", "", "S3 layouts: the URL of an S3-compatible server (default: AWS's, or AWS_ENDPOINT_URL_S3)")
	f.StringVar(&o.s3.Region, "s3-region", "", "S3 layouts: the region (default: the AWS SDK's, else us-east-1)")
	f.StringVar(&o.s3.Profile, "s3-profile", "", "S3 layouts: the shared-config profile (default: AWS_PROFILE or default)")
	f.StringVar(&o.pathStyle, "s3-path-style", "auto", "S3 layouts: address the bucket in the path (true, false, auto: true with --s3-endpoint)")
	f.IntVar(&o.s3.Concurrency, "s3-concurrency", 8, "S3 layouts: "+inFlight+" in flight at most")
	f.DurationVar(&o.s3.RequestTimeout, "s3-timeout", 30*time.Second, "S3 layouts: give up a request (with its retries) after this long")
	f.StringVar(&o.quarantine, "quarantine-prefix", repair.DefaultQuarantine, "the key prefix (in the bucket, or under --remote-dir's kafka-tiered-storage) where rlmm repair moves orphans: left out of the listing")
	_ = cmd.MarkFlagDirname("remote-dir")
	_ = cmd.RegisterFlagCompletionFunc("layout", cobra.FixedCompletions(layout.Names(), cobra.ShellCompDirectiveNoFileComp))
}

// openStore opens and checks the remote storage the layout calls for.
func (o *scrubOptions) openStore(ctx context.Context, l layout.Layout) (store.Store, error) {
	if l.Name() == layout.LocalName {
		if o.s3.Bucket != "" {
			return nil, usageErrorf("--layout local reads a directory (--remote-dir), not a bucket")
		}
		if o.remoteDir == "" {
			return nil, usageErrorf("--layout local needs --remote-dir: LocalTieredStorage's directory (rsm.config.dir)")
		}
		root := o.remoteDir
		if filepath.Base(filepath.Clean(root)) != localTieredDir {
			root = filepath.Join(root, localTieredDir)
		}
		d, err := store.NewDir(root)
		if err != nil {
			return nil, usageErrorf("--remote-dir: %v (give LocalTieredStorage's rsm.config.dir)", err)
		}
		return d, nil
	}
	if o.remoteDir != "" {
		return nil, usageErrorf("--layout %s reads a bucket (--s3-bucket), not --remote-dir", l.Name())
	}
	if o.s3.Bucket == "" {
		return nil, usageErrorf("--layout %s needs --s3-bucket", l.Name())
	}
	s, err := s3store.New(ctx, o.s3)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	if err := s.Check(ctx, l.Prefix()); err != nil {
		return nil, couldNotRun(err)
	}
	return s, nil
}

func runScrub(cmd *cobra.Command, o *scrubOptions) error {
	if err := o.validateDelete(cmd); err != nil {
		return err
	}
	l, err := o.validate(cmd)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	defer stop()
	st, err := o.openStore(ctx, l)
	if err != nil {
		return err
	}
	openCtx, cancelOpen := context.WithTimeout(ctx, o.timeout)
	defer cancelOpen()
	src, err := o.log.openReadOnly(openCtx, cmd, slog.New(slog.DiscardHandler), o.timeout)
	if err != nil {
		return couldNotRun(err)
	}
	b, err := materialize(ctx, src, o.timeout, o.quiet, nil)
	src.log.Close()
	if err != nil {
		return err
	}
	cmp, err := o.compare(ctx, l, st, b, o.quiet)
	if err != nil {
		return err
	}
	rep := cmp.Report()
	doc := scrubJSON{Metadata: src.name, Store: st.Name(), Report: rep, OK: rep.Summary.Findings() == 0}
	out := bufio.NewWriter(cmd.OutOrStdout())
	if !o.jsonOut {
		writeScrubText(out, &doc)
	}
	if o.deleteOrphans {
		if err := o.deleteStep(ctx, cmd, st, &doc, out); err != nil {
			_ = out.Flush()
			return err
		}
	}
	if o.jsonOut {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		err = enc.Encode(doc)
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return couldNotRun(fmt.Errorf("writing the report: %w", err))
	}
	if d := doc.Deletion; d != nil && d.Result != nil && d.Result.Failed > 0 {
		return findings("scrub: %d findings; %d orphans could not be deleted (see the log above)", rep.Summary.Findings(), d.Result.Failed)
	}
	if !doc.OK {
		return findings("scrub: %d missing, %d orphans (%d bytes), %d mismatches in %s",
			rep.Summary.Missing, rep.Summary.Orphans, rep.Summary.OrphanBytes, rep.Summary.Mismatches, st.Name())
	}
	return nil
}

// compare lists st and holds every object against the segments of b, the
// quarantine left out: scrub's comparison, which repair makes its plan from
// and rlmm console shows. Only the index is kept while listing: b's caller
// may drop the view.
func (o *scrubOptions) compare(ctx context.Context, l layout.Layout, st store.Store, b *view.Builder, quiet bool) (*scrub.Comparer, error) {
	idx := scrub.NewIndex(l, int(b.Counts().Segments))
	for _, tp := range b.Partitions() {
		p := idx.AddPartition(tp)
		segs := b.Segments(tp)
		for i := range segs {
			idx.Add(p, &segs[i])
		}
	}
	idx.Seal()
	cmp := scrub.NewComparer(idx, time.Now())
	cmp.Exclude(o.quarantine)
	prog := newProgress("listing "+st.Name(), "objects", quiet)
	var listed int64
	lctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	err := st.List(lctx, idx.Prefixes(), func(page []store.Object) error {
		cmp.ObservePage(page)
		listed += int64(len(page))
		prog.set(listed, -1, "objects")
		return nil
	})
	prog.finish()
	if err != nil {
		if lctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return nil, couldNotRun(fmt.Errorf("listing %s took longer than --timeout %s: %w", st.Name(), o.timeout, err))
		}
		return nil, couldNotRun(fmt.Errorf("listing %s: %w", st.Name(), err))
	}
	return cmp, nil
}

// deleteStep prints the dry run, asks for confirmation and deletes.
func (o *scrubOptions) deleteStep(ctx context.Context, cmd *cobra.Command, st store.Store, doc *scrubJSON, out *bufio.Writer) error {
	plan := scrub.Plan(doc.Report, o.olderThan)
	d := &deletionJSON{OlderThanMs: o.olderThan.Milliseconds(), Planned: plan}
	if d.Planned == nil {
		d.Planned = []scrub.Orphan{}
	}
	for _, p := range plan {
		d.PlannedBytes += p.Size
	}
	doc.Deletion = d
	text := !o.jsonOut
	if text {
		fmt.Fprintf(out, "\ndry run: %d orphans (%d bytes) older than %s may be deleted:\n", len(plan), d.PlannedBytes, o.olderThan)
		for _, p := range plan {
			fmt.Fprintf(out, "  %s  %d bytes, age %s\n", p.Key, p.Size, age(p.AgeMs))
		}
	}
	if len(plan) == 0 {
		return nil
	}
	confirmed := o.yes
	if !confirmed {
		in, isFile := cmd.InOrStdin().(*os.File)
		if !isFile || !term.IsTerminal(int(in.Fd())) {
			if text {
				fmt.Fprintf(out, "nothing deleted: not a terminal; run again with --yes to delete these %d orphans\n", len(plan))
			}
			return nil
		}
		_ = out.Flush()
		errw := cmd.ErrOrStderr()
		fmt.Fprintf(errw, "type %d to delete these %d orphans from %s: ", len(plan), len(plan), st.Name())
		line, err := bufio.NewReader(in).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return couldNotRun(fmt.Errorf("reading the confirmation: %w", err))
		}
		if strings.TrimSpace(line) != strconv.Itoa(len(plan)) {
			fmt.Fprintln(errw, "not confirmed: nothing deleted")
			return nil
		}
		confirmed = true
	}
	d.Confirmed = confirmed
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
	res, err := scrub.Delete(ctx, st, plan, logger)
	d.Result = &res
	if text {
		fmt.Fprintf(out, "deleted %d orphans (%d bytes), %d failed\n", res.Deleted, res.Bytes, res.Failed)
	}
	if err != nil {
		return couldNotRun(fmt.Errorf("deleting orphans from %s: %w (%d deleted)", st.Name(), err, res.Deleted))
	}
	return nil
}

func age(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).Round(time.Second).String()
}

func writeScrubText(out io.Writer, doc *scrubJSON) {
	r := doc.Report
	fmt.Fprintf(out, "scrub: layout %s, %s against %s\n", r.Layout, doc.Store, doc.Metadata)
	for _, w := range r.Warnings {
		fmt.Fprintf(out, "warning: %s\n", w)
	}
	for _, p := range r.Partitions {
		fmt.Fprintf(out, "%s: %d live segments\n", p.TopicIDPartition, p.LiveSegments)
		for _, m := range p.Missing {
			fmt.Fprintf(out, "  MISSING   segment %s offsets %d-%d (%s): %s\n", m.SegmentID, m.StartOffset, m.EndOffset, m.State, strings.Join(m.Keys, ", "))
		}
		for _, o := range p.Orphans {
			prot := ""
			if o.Protected {
				prot = ", protected"
			}
			fmt.Fprintf(out, "  ORPHAN    %s  %d bytes, age %s (%s%s)\n", o.Key, o.Size, age(o.AgeMs), o.Reason, prot)
		}
		if len(p.Orphans) > 0 {
			fmt.Fprintf(out, "  orphans: %d, %d bytes\n", len(p.Orphans), p.OrphanBytes)
		}
		for _, m := range p.Mismatches {
			switch {
			case m.Kind == scrub.MismatchPartial:
				fmt.Fprintf(out, "  PARTIAL   segment %s lacks %s\n", m.SegmentID, strings.Join(m.MissingKeys, ", "))
			case m.Key != "":
				fmt.Fprintf(out, "  MISMATCH  %s  %d bytes, the metadata says %d\n", m.Key, m.Actual, m.Expected)
			default:
				fmt.Fprintf(out, "  MISMATCH  segment %s: its objects hold %d bytes, its remote size is %d\n", m.SegmentID, m.Actual, m.Expected)
			}
		}
	}
	s := r.Summary
	fmt.Fprintf(out, "summary: %d objects, %d bytes; %d live segments in %d user partitions; %d missing, %d orphans (%d bytes, %d protected), %d mismatches\n",
		s.Objects, s.Bytes, s.LiveSegments, s.Partitions, s.Missing, s.Orphans, s.OrphanBytes, s.ProtectedOrphans, s.Mismatches)
	if doc.OK {
		fmt.Fprintln(out, "OK: the storage matches the metadata")
	} else {
		fmt.Fprintf(out, "FAILED: %d findings\n", s.Findings())
	}
}
