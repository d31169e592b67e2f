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
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/repair"
	"github.com/rlmm-go/rlmm/scrub/layout"
	"github.com/rlmm-go/rlmm/scrub/store"
)

// repairOptions are the flags of rlmm repair.
type repairOptions struct {
	rebuildOptions // storage and log flags, --apply, --yes, --broker-id, --json, -q, --timeout
	grace          time.Duration
	stuckAfter     time.Duration
}

func newRepairCmd() *cobra.Command {
	o := &repairOptions{}
	cmd := &cobra.Command{
		Use:   "repair",
		Short: "Act on scrub's findings: quarantine orphans, delete them after a grace period, close stuck copies, report lost segments",
		Long: `repair runs scrub's comparison (the metadata log, --dir or --kafka, against the
remote storage) and makes a plan of it:

  quarantine  every unprotected orphan (no segment of the metadata has its id)
              at least --older-than old is moved (copied, then deleted) to
              --quarantine-prefix + <run time>/ + its key; an object a live
              segment owns, an object of a copy in flight and a key the layout
              never writes are never touched
  purge       objects in quarantine for --grace or longer (the run time in
              their key) are deleted; younger ones are held
  close       a segment COPY_SEGMENT_STARTED for --stuck-after or longer none
              of whose objects is in the storage is closed: DELETE_SEGMENT_STARTED
              then DELETE_SEGMENT_FINISHED, in Kafka's bytes, to its metadata
              partition (as rebuild publishes), broker id --broker-id; a
              segment DELETE_SEGMENT_STARTED as long with no object (a deletion
              that was not recorded, or a repair interrupted between its two
              events: then at once) gets DELETE_SEGMENT_FINISHED
  lost        a COPY_SEGMENT_FINISHED segment whose log object is missing is
              reported with its partition, segment id and the offsets lost;
              nothing is done about it

By default this is a dry run: the plan is printed and nothing changes.
--apply carries it out after confirmation (--yes, or typing the number of
actions on a terminal; without a terminal --apply needs --yes). Every action
is logged on stderr as it is done; an object that cannot be moved stays where
it was. A second run after --apply has nothing to do (but what the grace
still holds in quarantine). scrub and rebuild leave the quarantine out of
their listings.

Storage flags as scrub's: --layout local --remote-dir DIR, or --layout aiven
--s3-bucket B [--s3-prefix P] [--s3-endpoint URL].

Exit status: 0 nothing left to repair (the plan was empty, or applied), 1 lost
segments, actions not applied (a dry run) or actions that failed, 2 could not
run.`,
		Example: `  rlmm repair --kafka broker1:9092 --layout local --remote-dir /var/lib/kafka/tiered
  rlmm repair --kafka broker1:9092 --layout aiven --s3-bucket tiered --s3-prefix prod/ --apply --yes
  rlmm repair --kafka broker1:9092 --layout aiven --s3-bucket tiered --older-than 72h --grace 168h --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRepair(cmd, o) },
	}
	o.log = addLogFlags(cmd, "directory of rlmm's embedded metadata log (give --dir or --kafka)")
	cmd.SetFlagErrorFunc(flagError)
	f := cmd.Flags()
	o.addStorageFlags(cmd, "listings, copies and deletions")
	f.DurationVar(&o.olderThan, "older-than", 24*time.Hour, "quarantine orphans at least this old (a copy in flight looks like an orphan for a while)")
	f.DurationVar(&o.grace, "grace", 7*24*time.Hour, "delete objects that have been in quarantine this long")
	f.DurationVar(&o.stuckAfter, "stuck-after", 24*time.Hour, "close a segment COPY_SEGMENT_STARTED this long (from its event time) with no object in the storage")
	f.BoolVar(&o.apply, "apply", false, "carry the plan out (after confirmation)")
	f.BoolVar(&o.yes, "yes", false, "with --apply: carry it out without asking")
	f.Int32Var(&o.brokerID, "broker-id", -1, "the broker id of the events published (negative: no real broker's)")
	f.BoolVar(&o.jsonOut, "json", false, "print JSON for scripts")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress display on stderr")
	f.DurationVar(&o.timeout, "timeout", readTimeout, "give up reading the metadata log, and listing the storage, after this long each")
	return cmd
}

// repairJSON is the document repair --json prints.
type repairJSON struct {
	Metadata         string `json:"metadata"`
	Store            string `json:"store"`
	QuarantinePrefix string `json:"quarantinePrefix"`
	OlderThanMs      int64  `json:"olderThanMs"`
	GraceMs          int64  `json:"graceMs"`
	StuckAfterMs     int64  `json:"stuckAfterMs"`
	*repair.Plan
	Applied bool           `json:"applied"`
	Result  *repair.Result `json:"result,omitempty"`
	OK      bool           `json:"ok"`
}

func (o *repairOptions) check(cmd *cobra.Command) (layout.Layout, error) {
	if o.yes && !o.apply {
		return nil, usageErrorf("--yes goes with --apply")
	}
	l, err := o.validate(cmd)
	if err != nil {
		return nil, err
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--older-than", o.olderThan}, {"--grace", o.grace}, {"--stuck-after", o.stuckAfter}} {
		if d.v <= 0 || d.v > maxStuckAfter {
			return nil, usageErrorf("%s %s: must be positive and at most %s", d.name, d.v, maxStuckAfter)
		}
	}
	if o.brokerID >= 0 {
		return nil, usageErrorf("--broker-id %d: must be negative, so the events are not taken for broker %d's own", o.brokerID, o.brokerID)
	}
	if o.apply && !o.yes {
		if _, ok := stdinTerminal(cmd); !ok {
			return nil, usageErrorf("--apply without --yes asks for confirmation on a terminal, and stdin is not one: add --yes to repair without asking")
		}
	}
	return l, nil
}

func runRepair(cmd *cobra.Command, o *repairOptions) error {
	l, err := o.check(cmd)
	if err != nil {
		return err
	}
	now := time.Now()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	defer stop()
	st, err := o.openStore(ctx, l)
	if err != nil {
		return err
	}
	mover, ok := st.(store.Mover)
	if !ok {
		return couldNotRun(fmt.Errorf("repair cannot move objects of %s", st.Name()))
	}
	openCtx, cancelOpen := context.WithTimeout(ctx, o.timeout)
	lg, name, err := o.openRebuildLog(openCtx, cmd)
	cancelOpen()
	if err != nil {
		return err
	}
	defer lg.Close()
	b, err := materialize(ctx, &source{log: lg, name: name}, o.timeout, o.quiet, nil)
	if err != nil {
		return err
	}
	cmp, err := o.compare(ctx, l, st, b, o.quiet)
	if err != nil {
		return err
	}
	in := repair.Input{Report: cmp.Report()}
	metaOf := func(ids []rlmm.SegmentID) []rlmm.SegmentMetadata {
		var out []rlmm.SegmentMetadata
		for _, id := range ids {
			for _, m := range b.Segments(id.TopicIDPartition) {
				if m.ID.ID == id.ID {
					out = append(out, m)
					break
				}
			}
		}
		return out
	}
	in.Started = metaOf(cmp.WithoutObjects(rlmm.CopySegmentStarted))
	in.Deleting = metaOf(cmp.WithoutObjects(rlmm.DeleteSegmentStarted))
	b = nil
	qctx, cancel := context.WithTimeout(ctx, o.timeout)
	err = st.List(qctx, []string{o.quarantine}, func(page []store.Object) error {
		in.Quarantined = append(in.Quarantined, page...)
		return nil
	})
	cancel()
	if err != nil {
		return couldNotRun(fmt.Errorf("listing the quarantine %s of %s: %w", o.quarantine, st.Name(), err))
	}
	plan, err := repair.MakePlan(in, repair.Options{Now: now, OrphanAge: o.olderThan, Grace: o.grace, StuckAfter: o.stuckAfter,
		Quarantine: o.quarantine, BrokerID: o.brokerID, MetadataPartitions: lg.Partitions()})
	if err != nil {
		return couldNotRun(err)
	}
	doc := repairJSON{Metadata: name, Store: st.Name(), QuarantinePrefix: o.quarantine, OlderThanMs: o.olderThan.Milliseconds(),
		GraceMs: o.grace.Milliseconds(), StuckAfterMs: o.stuckAfter.Milliseconds(), Plan: plan}
	out := bufio.NewWriter(cmd.OutOrStdout())
	if !o.jsonOut {
		writeRepairText(out, &doc, o.apply)
	}
	err = o.applyRepair(ctx, cmd, mover, lg, &doc, out)
	s := plan.Summary
	doc.OK = err == nil && s.Lost == 0 && (s.Actions() == 0 || (doc.Applied && !doc.Result.Failed()))
	if o.jsonOut {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(doc); err == nil && jerr != nil {
			err = couldNotRun(fmt.Errorf("writing the report: %w", jerr))
		}
	}
	if ferr := out.Flush(); err == nil && ferr != nil {
		err = couldNotRun(fmt.Errorf("writing the report: %w", ferr))
	}
	switch {
	case err != nil:
		return err
	case doc.Result != nil && doc.Result.Failed():
		return findings("repair: %d orphans could not be quarantined, %d quarantined objects could not be deleted (see the log above)",
			doc.Result.MoveFailed, doc.Result.PurgeFailed)
	case s.Lost > 0:
		return findings("repair: %d segments have lost their log object in %s (listed above)", s.Lost, st.Name())
	case s.Actions() > 0 && !doc.Applied:
		return findings("repair: %d actions planned, not applied", s.Actions())
	}
	return nil
}

// applyRepair asks for confirmation and carries the plan out.
func (o *repairOptions) applyRepair(ctx context.Context, cmd *cobra.Command, st store.Mover, lg eventlog.Log, doc *repairJSON, out *bufio.Writer) error {
	n := doc.Summary.Actions()
	if !o.apply || n == 0 {
		return nil
	}
	if !o.yes {
		in, ok := stdinTerminal(cmd)
		if !ok {
			return usageErrorf("--apply without --yes needs a terminal to confirm on")
		}
		_ = out.Flush()
		errw := cmd.ErrOrStderr()
		fmt.Fprintf(errw, "type %d to carry out these %d actions on %s and %s: ", n, n, doc.Store, doc.Metadata)
		line, err := bufio.NewReader(in).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return couldNotRun(fmt.Errorf("reading the confirmation: %w", err))
		}
		if strings.TrimSpace(line) != strconv.Itoa(n) {
			fmt.Fprintln(errw, "not confirmed: nothing done")
			return nil
		}
	}
	doc.Applied = true
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
	res, err := repair.Apply(ctx, st, lg, doc.Plan, logger)
	doc.Result = &res
	if !o.jsonOut {
		fmt.Fprintf(out, "applied: %d orphans quarantined (%d bytes, %d failed), %d deleted from quarantine (%d bytes, %d failed), %d stuck copies closed (%d events)\n",
			res.Moved, res.MovedBytes, res.MoveFailed, res.Purged, res.PurgedBytes, res.PurgeFailed, res.Closed, res.Published)
	}
	if err != nil {
		return couldNotRun(err)
	}
	return nil
}

func writeRepairText(out io.Writer, doc *repairJSON, apply bool) {
	p := doc.Plan
	fmt.Fprintf(out, "repair: %s against %s\n", doc.Store, doc.Metadata)
	for _, m := range p.Quarantine {
		fmt.Fprintf(out, "  QUARANTINE  %s  %d bytes, age %s -> %s\n", m.Key, m.Size, age(m.AgeMs), m.To)
	}
	for _, pg := range p.Purge {
		fmt.Fprintf(out, "  DELETE      %s  %d bytes, quarantined %s\n", pg.Key, pg.Size, pg.QuarantinedAt.UTC().Format(time.RFC3339))
	}
	for _, pg := range p.Held {
		fmt.Fprintf(out, "  HELD        %s  %d bytes: %s\n", pg.Key, pg.Size, pg.Note)
	}
	for _, c := range p.Close {
		fmt.Fprintf(out, "  CLOSE       %s  segment %s offsets %d..%d, %s in %s with no object -> metadata partition %d: %s\n",
			c.TopicIDPartition, c.SegmentID, c.StartOffset, c.EndOffset, age(c.StartedAgeMs), c.State,
			c.MetadataPartition, strings.Join(c.Events, ", "))
	}
	for _, w := range p.Waiting {
		fmt.Fprintf(out, "  WAITING     %s  segment %s: %s in %s with no object, under --stuck-after\n",
			w.TopicIDPartition, w.SegmentID, age(w.StartedAgeMs), w.State)
	}
	for _, l := range p.Lost {
		fmt.Fprintf(out, "  LOST        %s  segment %s (%s): offsets %d..%d lost, missing %s\n",
			l.TopicIDPartition, l.SegmentID, l.State, l.StartOffset, l.EndOffset, strings.Join(l.MissingKeys, ", "))
	}
	s := p.Summary
	fmt.Fprintf(out, "plan: quarantine %d orphans (%d bytes), delete %d from quarantine (%d bytes), close %d stuck copies (%d events); held %d, waiting %d; left alone: %d protected and %d young orphans, %d mismatches; %d segments lost\n",
		s.Quarantine, s.QuarantineBytes, s.Purge, s.PurgeBytes, s.Close, s.Events, s.Held, s.Waiting, s.Protected, s.Young, s.Mismatches, s.Lost)
	switch {
	case s.Actions() == 0:
		fmt.Fprintln(out, "nothing to do")
	case !apply:
		fmt.Fprintln(out, "dry run: nothing changed (--apply carries the plan out)")
	}
}
