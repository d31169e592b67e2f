package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlmm-go/rlmm/internal/view"
)

// verifyOptions are the flags of rlmm verify.
type verifyOptions struct {
	log        *logFlags
	stuckAfter time.Duration
	reference  string
	jsonOut    bool
	quiet      bool
	timeout    time.Duration
}

func newVerifyCmd() *cobra.Command {
	o := &verifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Find stuck, orphaned, rejected and inconsistent remote log metadata; exit 1 when there is any",
		Long: `verify reads a remote log metadata log like inspect (read-only, from its log
start up to its end, both sampled when it starts) and reports every anomaly with the
segment or record it concerns:

  stuck_copy            a segment in COPY_SEGMENT_STARTED older than --stuck-after:
                        its copy died; an orphan candidate whose remote data to
                        clean up (the segment ids are listed)
  stuck_delete          a segment in DELETE_SEGMENT_STARTED older than --stuck-after:
                        its deletion never finished
  rejected_event        an event the state machine rejects: an invalid transition,
                        an update of an unknown segment (metadata partition, offset)
  undecodable_record    a record that is not a metadata event (metadata partition, offset)
  misrouted_event       an event in a metadata partition other than Kafka's
                        partitioner gives its user partition: brokers never see it
  overlapping_segments  finished segments of one broker covering the same offsets in
                        one leader epoch (a warning when two brokers copied them: the
                        same committed records, copied by a new leader and an old one
                        that copied on before it learnt it lost the leadership)
  offset_gap            offsets of a leader epoch no finished segment covers,
                        between two that do
  shared_record_key     (a topic keyed as KIP-1266 proposes) records of two segments
                        under one key whose last record is not a live segment's own:
                        compaction keeps a key's last record only, and would drop
                        that live segment's history (the segment ids are listed)
  tombstoned_live_segment  a key whose last record is a tombstone while a segment
                        with records under it is live: compaction would drop them

and, as warnings that do not change the exit status: segment metadata Kafka
accepts but rlmm's stricter sanity checks fail (sanity_warning), partition
delete states out of order (partition_delete_order), snapshot records inside
the topic (snapshot_record), records with a null value whose key is not a
KIP-1266 key (tombstone_record; other tombstones are counted), record keys
that do not match their records (record_key_mismatch), torn tails of the
embedded log (torn_tail), a metadata partition whose first records were
deleted by retention or DeleteRecords (history_lost: reading starts at its
log start offset), updates there of segments added before that start
(unknown_segment), and a deletion update of a segment whose deletion had
already finished earlier in the log (redeleted_segment: a late second
deletion that changes nothing).

Ages are measured against the newest event timestamp in the log by default
(--stuck-reference log), so verifying a copy of a log gives the same answer
tomorrow; --stuck-reference now measures against the wall clock, which also
catches a log where nothing has happened for long.

Exit status: 0 no anomaly, 1 anomalies found, 2 could not run.`,
		Example: `  rlmm verify                                   # the newest simulate run in ./rlmm-data
  rlmm verify --kafka broker1:9092 --stuck-after 6h --stuck-reference now
  rlmm verify --kafka broker1:9092 --json | jq '.anomalies[] | select(.kind == "stuck_copy") | .segmentIds[]'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runVerify(cmd, o) },
	}
	o.log = addLogFlags(cmd, "directory of the embedded log, of a simulate run, or of simulate's data (newest run)")
	cmd.SetFlagErrorFunc(flagError)
	f := cmd.Flags()
	f.DurationVar(&o.stuckAfter, "stuck-after", time.Hour, "a segment in COPY_SEGMENT_STARTED or DELETE_SEGMENT_STARTED longer than this is stuck, at most "+maxStuckAfter.String())
	f.StringVar(&o.reference, "stuck-reference", "log", "measure ages against the newest event of the log (log) or the wall clock (now)")
	f.BoolVar(&o.jsonOut, "json", false, "print JSON for monitoring")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress display on stderr")
	f.DurationVar(&o.timeout, "timeout", readTimeout, "give up connecting to and reading the log after this long, at most "+maxTimeout.String())
	_ = cmd.RegisterFlagCompletionFunc("stuck-reference", cobra.FixedCompletions([]string{"log", "now"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// verifyJSON is the document verify --json prints.
type verifyJSON struct {
	Source          string         `json:"source"`
	Counts          view.Counts    `json:"counts"`
	Partitions      int            `json:"userPartitions"`
	ReferenceTimeMs int64          `json:"referenceTimeMs"`
	Reference       string         `json:"stuckReference"`
	StuckAfterMs    int64          `json:"stuckAfterMs"`
	Failures        int            `json:"anomalyCount"`
	Warnings        int            `json:"warningCount"`
	OK              bool           `json:"ok"`
	Anomalies       []view.Anomaly `json:"anomalies"`
	// HistoryStarts lists the metadata partitions whose early records are
	// gone, with where their history starts (each also a history_lost
	// warning).
	HistoryStarts []view.HistoryStart `json:"historyStarts"`
}

func runVerify(cmd *cobra.Command, o *verifyOptions) error {
	if o.stuckAfter <= 0 || o.stuckAfter > maxStuckAfter {
		return usageErrorf("--stuck-after %s: must be positive and at most %s (e.g. 30m, 1h, 24h)", o.stuckAfter, maxStuckAfter)
	}
	if o.reference != "log" && o.reference != "now" {
		return usageErrorf("--stuck-reference %q: must be log or now", o.reference)
	}
	if err := checkTimeout(o.timeout); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
	defer cancel()
	src, err := o.log.openReadOnly(ctx, cmd, slog.New(slog.DiscardHandler), o.timeout)
	if err != nil {
		return couldNotRun(err)
	}
	defer src.log.Close()
	b, err := materialize(ctx, src, o.timeout, o.quiet, nil)
	if err != nil {
		return err
	}
	ref := b.NewestEventMs()
	if o.reference == "now" || ref < 0 {
		ref = time.Now().UnixMilli()
	}
	anomalies := append(slices.Clone(src.tornTails), b.Anomalies(ref, o.stuckAfter)...)
	failures := 0
	for _, a := range anomalies {
		if !a.Warning {
			failures++
		}
	}
	doc := verifyJSON{Source: src.name, Counts: b.Counts(), Partitions: len(b.Partitions()), ReferenceTimeMs: ref,
		Reference: o.reference, StuckAfterMs: o.stuckAfter.Milliseconds(), Failures: failures,
		Warnings: len(anomalies) - failures, OK: failures == 0, Anomalies: anomalies, HistoryStarts: b.History()}
	if doc.HistoryStarts == nil {
		doc.HistoryStarts = []view.HistoryStart{}
	}
	if doc.Anomalies == nil {
		doc.Anomalies = []view.Anomaly{}
	}
	out := bufio.NewWriter(cmd.OutOrStdout())
	if o.jsonOut {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		err = enc.Encode(doc)
	} else {
		err = writeVerifyText(out, &doc)
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return couldNotRun(fmt.Errorf("writing the report: %w", err))
	}
	if failures > 0 {
		return findings("verify: %d anomalies in %s", failures, src.name)
	}
	return nil
}

func writeVerifyText(out io.Writer, doc *verifyJSON) error {
	refWhat := "the newest event"
	if doc.Reference == "now" {
		refWhat = "now"
	}
	fmt.Fprintf(out, "%s: %d records, %d user partitions; stuck means older than %s at %s (%s)\n",
		doc.Source, doc.Counts.Records, doc.Partitions, time.Duration(doc.StuckAfterMs)*time.Millisecond,
		time.UnixMilli(doc.ReferenceTimeMs).UTC().Format(time.RFC3339), refWhat)
	var cleanup []view.Anomaly
	for _, a := range doc.Anomalies {
		fmt.Fprintln(out, a.String())
		if a.Kind == view.StuckCopy {
			cleanup = append(cleanup, a)
		}
	}
	if len(cleanup) > 0 {
		fmt.Fprintf(out, "\nsegments to clean up in remote storage (stuck copies, orphan candidates):\n")
		for _, a := range cleanup {
			for _, id := range a.SegmentIDs {
				fmt.Fprintf(out, "  %s %s\n", a.TopicIDPartition, id)
			}
		}
	}
	if doc.OK {
		_, err := fmt.Fprintf(out, "OK: no anomalies (%d warnings)\n", doc.Warnings)
		return err
	}
	_, err := fmt.Fprintf(out, "FAILED: %d anomalies, %d warnings\n", doc.Failures, doc.Warnings)
	return err
}
