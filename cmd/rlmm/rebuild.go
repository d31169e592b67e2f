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
	"golang.org/x/term"

	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/filelog"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
	"github.com/rlmm-go/rlmm/rebuild"
	"github.com/rlmm-go/rlmm/scrub/layout"
	"github.com/rlmm-go/rlmm/scrub/s3store"
	"github.com/rlmm-go/rlmm/scrub/store"
)

// rebuildOptions are the flags of rlmm rebuild.
type rebuildOptions struct {
	scrubOptions // --layout, --remote-dir, --s3-*, --json, -q, --timeout, --yes
	topic        string
	apply        bool
	brokerID     int32
	aivenFields  string // --aiven-custom-metadata-fields
}

func newRebuildCmd() *cobra.Command {
	o := &rebuildOptions{}
	cmd := &cobra.Command{
		Use:   "rebuild",
		Short: "Rebuild lost remote log metadata from remote storage: plan, confirm, publish the missing events",
		Long: `rebuild reconstructs the metadata of every segment found in remote storage,
from the storage alone, and publishes, in Kafka's bytes and to the metadata
partition Kafka's partitioner gives its partition, the events the metadata log
lacks: COPY_SEGMENT_STARTED then COPY_SEGMENT_FINISHED.

  --layout local --remote-dir DIR   Kafka's LocalTieredStorage: offsets, ids and
                                    partition from the names; the end offset and
                                    largest timestamp from the record batch
                                    headers of the .log file, the leader epochs
                                    from the .leader_epoch_checkpoint, the size
                                    from the .log file
  --layout aiven --s3-bucket B [--s3-prefix P]
                                    Aiven's tiered-storage-for-apache-kafka: the
                                    segment metadata its .rsm-manifest records

A segment the metadata log names in any state is left alone, and so is every
segment of a partition with a partition delete event: a second run plans
nothing. Every event has broker id --broker-id (-1: no broker's) and the
time the command started as its event time.

By default this is a dry run: the plan is printed and nothing is published.
--apply publishes it after confirmation (--yes, or typing the number of events
on a terminal; without a terminal --apply needs --yes). Every event published
is logged on stderr with its metadata partition and offset.

Stop the brokers that host the partitions first, and keep them stopped until
rebuild has finished: a broker whose RLMM starts without the metadata moves
the partition's log start offset past the remote data, and one whose RLMM
still holds the segments in memory would read them twice. With --kafka the
metadata topic must exist (on the brokers still running).

Exit status: 0 the plan is complete (and published with --apply), 1 some
segments found cannot be rebuilt (listed; the others are planned and, with
--apply, published), 2 could not run.`,
		Example: `  rlmm rebuild --kafka broker1:9092 --layout local --remote-dir /var/lib/kafka/tiered
  rlmm rebuild --kafka broker1:9092 --layout local --remote-dir /var/lib/kafka/tiered --topic orders --apply --yes
  rlmm rebuild --kafka broker1:9092 --layout aiven --s3-bucket tiered --s3-prefix prod/ --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRebuild(cmd, o) },
	}
	o.log = addLogFlags(cmd, "directory of rlmm's embedded metadata log (give --dir or --kafka)")
	cmd.SetFlagErrorFunc(flagError)
	f := cmd.Flags()
	o.addStorageFlags(cmd, "listings")
	f.StringVar(&o.topic, "topic", "", "rebuild only this topic's segments")
	f.StringVar(&o.aivenFields, "aiven-custom-metadata-fields", "", "layout aiven: the plugin's rsm.config.custom.metadata.fields.include "+
		"(e.g. REMOTE_SIZE,OBJECT_PREFIX,OBJECT_KEY): every rebuilt segment gets those fields, as the plugin returned them")
	f.BoolVar(&o.apply, "apply", false, "publish the plan (after confirmation)")
	f.BoolVar(&o.yes, "yes", false, "with --apply: publish without asking")
	f.Int32Var(&o.brokerID, "broker-id", -1, "the broker id of the events published (negative: no real broker's)")
	f.BoolVar(&o.jsonOut, "json", false, "print JSON for scripts")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress display on stderr")
	f.DurationVar(&o.timeout, "timeout", readTimeout, "give up reading the metadata log, and listing and reading the storage, after this long each")
	return cmd
}

// rebuildJSON is the document rebuild --json prints.
type rebuildJSON struct {
	Metadata string         `json:"metadata"`
	Found    *rebuild.Found `json:"found"`
	*rebuild.Plan
	Applied   bool            `json:"applied"`
	Published []publishedJSON `json:"published"`
	OK        bool            `json:"ok"`
}

type publishedJSON struct {
	TopicIDPartition  string `json:"topicIdPartition"`
	SegmentID         string `json:"segmentId"`
	Event             string `json:"event"`
	MetadataPartition int32  `json:"metadataPartition"`
	Offset            int64  `json:"offset"`
}

// s3Opener reads S3 objects with ranged GETs.
type s3Opener struct{ s *s3store.Store }

func (o s3Opener) Open(ctx context.Context, key string) (rebuild.Object, error) {
	return &s3Object{ctx: ctx, s: o.s, key: key}, nil
}

type s3Object struct {
	ctx context.Context
	s   *s3store.Store
	key string
}

func (o *s3Object) ReadAt(p []byte, off int64) (int, error) { return o.s.ReadAt(o.ctx, o.key, p, off) }
func (o *s3Object) Close() error                            { return nil }

// stdinTerminal returns stdin when it is a terminal.
func stdinTerminal(cmd *cobra.Command) (*os.File, bool) {
	in, isFile := cmd.InOrStdin().(*os.File)
	return in, isFile && term.IsTerminal(int(in.Fd()))
}

// openRebuildLog opens the metadata log to read and, with --apply, to
// publish to: the Kafka topic (never created) or the embedded log (locked
// when publishing).
func (o *rebuildOptions) openRebuildLog(ctx context.Context, cmd *cobra.Command) (eventlog.Log, string, error) {
	f := o.log
	if f.kafka.Enabled() {
		if cmd.Flags().Changed("dir") {
			return nil, "", usageErrorf("give either --dir or --kafka, not both")
		}
		cfg, err := f.kafka.Config()
		if err != nil {
			return nil, "", usageErrorf("%v", err)
		}
		cfg.SkipTopicCreation = true
		cfg.Logger = slog.New(slog.DiscardHandler)
		if o.timeout < kafkalog.DefaultConnectTimeout {
			cfg.ConnectTimeout = o.timeout
		}
		l, err := kafkalog.Open(ctx, cfg)
		if err != nil {
			return nil, "", couldNotRun(explainKafka(err, cfg))
		}
		return l, fmt.Sprintf("Kafka topic %s at %s", cfg.Topic, strings.Join(cfg.BootstrapServers, ",")), nil
	}
	if !cmd.Flags().Changed("dir") {
		return nil, "", usageErrorf("give the metadata log to rebuild: --kafka host:port, or --dir for rlmm's embedded log")
	}
	dir, err := resolveDir(f.dir)
	if err != nil {
		return nil, "", err
	}
	l, err := filelog.Open(dir, filelog.Options{ReadOnly: !o.apply})
	if err != nil {
		return nil, "", couldNotRun(explainFilelog(err, dir))
	}
	return l, "embedded log " + dir, nil
}

func runRebuild(cmd *cobra.Command, o *rebuildOptions) error {
	if o.yes && !o.apply {
		return usageErrorf("--yes goes with --apply")
	}
	l, err := o.validate(cmd)
	if err != nil {
		return err
	}
	if o.brokerID >= 0 {
		return usageErrorf("--broker-id %d: must be negative, so the events are not taken for broker %d's own", o.brokerID, o.brokerID)
	}
	aivenFields, err := layout.ParseAivenFieldSet(o.aivenFields)
	if err != nil {
		return usageErrorf("--aiven-custom-metadata-fields: %v", err)
	}
	if aivenFields.Any() && l.Name() != layout.AivenName {
		return usageErrorf("--aiven-custom-metadata-fields goes with --layout %s", layout.AivenName)
	}
	if o.apply && !o.yes {
		if _, ok := stdinTerminal(cmd); !ok {
			return usageErrorf("--apply without --yes asks for confirmation on a terminal, and stdin is not one: add --yes to publish without asking")
		}
	}
	nowMs := time.Now().UnixMilli()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	defer stop()
	st, err := o.openStore(ctx, l)
	if err != nil {
		return err
	}
	var opener rebuild.Opener
	switch s := st.(type) {
	case *store.Dir:
		opener = rebuild.DirOpener{Root: s.Root()}
	case *s3store.Store:
		opener = s3Opener{s}
	default:
		return couldNotRun(fmt.Errorf("rebuild cannot read objects of %s", st.Name()))
	}
	openCtx, cancelOpen := context.WithTimeout(ctx, o.timeout)
	lg, name, err := o.openRebuildLog(openCtx, cmd)
	cancelOpen()
	if err != nil {
		return err
	}
	defer lg.Close()

	prog := newProgress("reading "+name, "records", o.quiet)
	rctx, cancel := context.WithTimeout(ctx, o.timeout)
	known, err := rebuild.ReadKnown(rctx, lg)
	cancel()
	prog.finish()
	if err != nil {
		return couldNotRun(fmt.Errorf("reading %s: %w", name, err))
	}
	prog = newProgress("scanning "+st.Name(), "objects", o.quiet)
	sctx, cancel := context.WithTimeout(ctx, o.timeout)
	found, err := rebuild.Scan(sctx, rebuild.ScanOptions{Layout: l, Store: st, Opener: opener, Topic: o.topic, Exclude: o.quarantine,
		AivenFields: aivenFields})
	timedOut := sctx.Err() == context.DeadlineExceeded && ctx.Err() == nil
	cancel()
	prog.finish()
	if err != nil {
		if timedOut {
			return couldNotRun(fmt.Errorf("scanning %s took longer than --timeout %s: %w", st.Name(), o.timeout, err))
		}
		return couldNotRun(fmt.Errorf("scanning %s: %w", st.Name(), err))
	}
	plan := rebuild.MakePlan(found, known, rebuild.PlanOptions{BrokerID: o.brokerID, EventTimestampMs: nowMs,
		MetadataPartitions: lg.Partitions()})
	doc := rebuildJSON{Metadata: name, Found: found, Plan: plan, Published: []publishedJSON{}, OK: len(plan.Problems) == 0}
	out := bufio.NewWriter(cmd.OutOrStdout())
	text := !o.jsonOut
	if text {
		writeRebuildText(out, &doc, known, o.apply)
	}
	err = o.applyStep(ctx, cmd, lg, &doc, out)
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
	if err != nil {
		return err
	}
	if !doc.OK {
		return findings("rebuild: %d segments found in %s cannot be rebuilt (listed above); %d planned",
			len(plan.Problems), st.Name(), len(plan.Steps))
	}
	return nil
}

// applyStep asks for confirmation and publishes the plan.
func (o *rebuildOptions) applyStep(ctx context.Context, cmd *cobra.Command, lg eventlog.Log, doc *rebuildJSON, out *bufio.Writer) error {
	plan := doc.Plan
	if !o.apply || len(plan.Steps) == 0 {
		return nil
	}
	if !o.yes {
		in, ok := stdinTerminal(cmd)
		if !ok {
			return usageErrorf("--apply without --yes needs a terminal to confirm on")
		}
		_ = out.Flush()
		errw := cmd.ErrOrStderr()
		fmt.Fprintf(errw, "type %d to publish these %d events for %d segments to %s: ", plan.Summary.Events, plan.Summary.Events, len(plan.Steps), doc.Metadata)
		line, err := bufio.NewReader(in).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return couldNotRun(fmt.Errorf("reading the confirmation: %w", err))
		}
		if strings.TrimSpace(line) != strconv.Itoa(plan.Summary.Events) {
			fmt.Fprintln(errw, "not confirmed: nothing published")
			return nil
		}
	}
	doc.Applied = true
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
	n, err := rebuild.Apply(ctx, lg, plan, func(p rebuild.Published) {
		logger.Info("rebuild: published", "event", p.Event, "segment", p.Step.SegmentID, "partition", p.Step.TopicIDPartition,
			"offsets", fmt.Sprintf("%d..%d", p.Step.StartOffset, p.Step.EndOffset),
			"metadata_partition", p.MetadataPartition, "offset", p.Offset)
		doc.Published = append(doc.Published, publishedJSON{TopicIDPartition: p.Step.TopicIDPartition, SegmentID: p.Step.SegmentID,
			Event: p.Event, MetadataPartition: p.MetadataPartition, Offset: p.Offset})
	})
	if !o.jsonOut {
		fmt.Fprintf(out, "published %d of %d events\n", n, plan.Summary.Events)
	}
	if err != nil {
		doc.OK = false
		return couldNotRun(fmt.Errorf("%w (%d of %d events published; run rebuild again to publish the rest)", err, n, plan.Summary.Events))
	}
	return nil
}

func writeRebuildText(out io.Writer, doc *rebuildJSON, known *rebuild.Known, apply bool) {
	f, p := doc.Found, doc.Plan
	fmt.Fprintf(out, "rebuild: layout %s, %s against %s\n", f.Layout, f.Store, doc.Metadata)
	fmt.Fprintf(out, "found %d segments in %d objects (%d bytes); the metadata log (%d records) names %d segments\n",
		p.Summary.SegmentsFound+len(f.Problems), f.Objects, f.Bytes, known.Records, known.Segments())
	for _, w := range p.Warnings {
		fmt.Fprintf(out, "warning: %s\n", w)
	}
	for _, s := range p.Steps {
		resume := ""
		if s.Resume {
			resume = " (finishing an interrupted rebuild)"
		}
		fmt.Fprintf(out, "  %s  segment %s offsets %d..%d epochs %s, %d bytes -> metadata partition %d: %s%s\n",
			s.TopicIDPartition, s.SegmentID, s.StartOffset, s.EndOffset, rebuild.FormatEpochs(s.LeaderEpochs), s.SizeInBytes,
			s.MetadataPartition, strings.Join(s.Events, ", "), resume)
		for _, w := range s.Warnings {
			fmt.Fprintf(out, "    warning: %s\n", w)
		}
	}
	for _, pr := range p.Problems {
		fmt.Fprintf(out, "  CANNOT    %s  segment %s at offset %d: %s\n", pr.TopicIDPartition, pr.SegmentID, pr.StartOffset, pr.Detail)
	}
	fmt.Fprintf(out, "plan: %d segments, %d events; left alone: %d segments the metadata log names, %d of deleted partitions; %d cannot be rebuilt\n",
		p.Summary.Planned, p.Summary.Events, p.Summary.Known, p.Summary.Deleted, p.Summary.Problems)
	if !apply && p.Summary.Events > 0 {
		fmt.Fprintln(out, "dry run: nothing published (--apply publishes the plan)")
	}
	if p.Summary.Events == 0 && p.Summary.Problems == 0 {
		fmt.Fprintln(out, "nothing to publish: the metadata log names every segment found")
	}
}
