package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/internal/view"
	"github.com/rlmm-go/rlmm/wire"
)

// inspectOptions are the flags of rlmm inspect.
type inspectOptions struct {
	log       *logFlags
	topic     string
	partition int32
	segments  bool
	events    bool
	jsonOut   bool
	quiet     bool
	timeout   time.Duration
	snapshot  string // inspect_snapshot.go
	// sizes, byPartition, price: the size view (inspect_sizes.go).
	sizes       bool
	byPartition bool
	price       float64
}

func newInspectCmd() *cobra.Command {
	o := &inspectOptions{}
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "Show the remote log metadata of every user partition, read from an rlmm log or a Kafka cluster",
		Long: `inspect reads a remote log metadata log from its log start up to its end
(both sampled when it starts), read-only, and shows per user partition:
segments by state, remote bytes, the offset range of the finished segments, the
leader epochs with their highest remote offsets, and the partition delete
state. Where retention or DeleteRecords removed the first records of a
metadata partition, it says where that partition's history starts: segments
added before it are unknown.

The log is the embedded log of --dir (default ./rlmm-data: the newest
` + "`rlmm simulate`" + ` run in it), or the __remote_log_metadata topic of the Kafka
cluster given by --kafka, written by rlmm or by Java brokers. inspect never
writes: the embedded log is opened without its lock, the Kafka topic is never
created.`,
		Example: `  rlmm inspect                                  # the newest simulate run in ./rlmm-data
  rlmm inspect --dir rlmm-data/run-20260101-120000-seed1 --segments
  rlmm inspect --kafka broker1:9092 --topic orders --partition 3 --segments
  rlmm inspect --kafka broker1:9093 --tls-ca ca.pem --sasl-mechanism SCRAM-SHA-512 --sasl-user ops --json
  rlmm inspect --dir /var/lib/rlmm/log --events | grep DELETE_SEGMENT
  rlmm inspect --snapshot /var/lib/rlmm/snap/rlmm.snapshot --segments --json
  rlmm inspect --kafka broker1:9092 --sizes --price-per-gb-month 0.023   # remote bytes per topic, a monthly estimate`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.snapshot != "" {
				return runInspectSnapshot(cmd, o)
			}
			return runInspect(cmd, o)
		},
	}
	o.log = addLogFlags(cmd, "directory of the embedded log, of a simulate run, or of simulate's data (newest run)")
	cmd.SetFlagErrorFunc(flagError)
	f := cmd.Flags()
	addSnapshotFlag(f, o)
	f.StringVar(&o.topic, "topic", "", "show only this user topic")
	f.Int32Var(&o.partition, "partition", -1, "show only this user partition number, 0 or more (with or without --topic; default all)")
	f.BoolVar(&o.segments, "segments", false, "list every segment not yet DELETE_SEGMENT_FINISHED")
	f.BoolVar(&o.events, "events", false, "print every raw event in Kafka's formatter text (metadata partition, offset, value; the key before the value when the record has one)")
	f.BoolVar(&o.jsonOut, "json", false, "print JSON for scripts")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress display on stderr")
	f.DurationVar(&o.timeout, "timeout", readTimeout, "give up connecting to and reading the log after this long, at most "+maxTimeout.String())
	addSizesFlags(f, o)
	return cmd
}

// keep reports whether tp passes the --topic and --partition filters.
func (o *inspectOptions) keep(tp rlmm.TopicIDPartition) bool {
	return (o.topic == "" || tp.Topic == o.topic) && (o.partition < 0 || tp.Partition == o.partition)
}

// jsonEvent is one raw event of inspect --events --json.
type jsonEvent struct {
	MetadataPartition int32 `json:"metadataPartition"`
	Offset            int64 `json:"offset"`
	// Key is the record's key (KIP-1266 keys records; released Kafka and
	// rlmm do not), absent when null.
	Key *string `json:"key,omitempty"`
	// Tombstone: the record's value is null (a compacted topic's deletion
	// of Key); it has no event.
	Tombstone bool        `json:"tombstone,omitempty"`
	Event     *wire.Event `json:"event,omitempty"`
	Error     string      `json:"error,omitempty"`
}

// jsonSegment is one segment of inspect --segments --json.
type jsonSegment struct {
	ID               string           `json:"segmentId"`
	State            string           `json:"state"`
	StartOffset      int64            `json:"startOffset"`
	EndOffset        int64            `json:"endOffset"`
	LeaderEpochs     map[string]int64 `json:"segmentLeaderEpochs"`
	SizeInBytes      int32            `json:"segmentSizeInBytes"`
	BrokerID         int32            `json:"brokerId"`
	MaxTimestampMs   int64            `json:"maxTimestampMs"`
	EventTimestampMs int64            `json:"eventTimestampMs"`
	CustomMetadata   *int             `json:"customMetadataBytes,omitempty"`
	// CustomMetadataHex is the custom metadata itself, in hex: what the RLMM
	// hands the RSM back (e.g. Aiven's remote size, object prefix and key).
	CustomMetadataHex string `json:"customMetadata,omitempty"`
	TxnIndexEmpty     bool   `json:"txnIdxEmpty"`
}

func toJSONSegment(m *rlmm.SegmentMetadata) jsonSegment {
	s := jsonSegment{ID: m.ID.ID.String(), State: m.State.String(), StartOffset: m.StartOffset, EndOffset: m.EndOffset,
		LeaderEpochs: map[string]int64{}, SizeInBytes: m.SizeInBytes, BrokerID: m.BrokerID,
		MaxTimestampMs: m.MaxTimestampMs, EventTimestampMs: m.EventTimestampMs, TxnIndexEmpty: m.TxnIndexEmpty}
	for _, e := range m.LeaderEpochs {
		s.LeaderEpochs[strconv.Itoa(int(e.Epoch))] = e.StartOffset
	}
	if m.CustomMetadata != nil {
		n := len(m.CustomMetadata)
		s.CustomMetadata = &n
		s.CustomMetadataHex = hex.EncodeToString(m.CustomMetadata)
	}
	return s
}

// jsonPartition is one user partition of inspect --json.
type jsonPartition struct {
	view.PartitionSummary
	Segments []jsonSegment `json:"segments,omitempty"`
}

// inspectJSON is the document inspect --json prints.
type inspectJSON struct {
	Source             string      `json:"source"`
	MetadataPartitions int32       `json:"metadataPartitions"`
	Counts             view.Counts `json:"counts"`
	NewestEventMs      int64       `json:"newestEventTimestampMs"`
	// HistoryStarts lists the metadata partitions whose early records are
	// gone (retention, DeleteRecords), with where their history starts.
	HistoryStarts []view.HistoryStart `json:"historyStarts"`
	Partitions    []jsonPartition     `json:"partitions"`
	Events        []jsonEvent         `json:"events,omitempty"`
}

func runInspect(cmd *cobra.Command, o *inspectOptions) error {
	if err := checkTimeout(o.timeout); err != nil {
		return err
	}
	if cmd.Flags().Changed("partition") && o.partition < 0 {
		return usageErrorf("--partition %d: must be 0 or more (leave it out to show every partition)", o.partition)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
	defer cancel()
	logger := slog.New(slog.DiscardHandler)
	src, err := o.log.openReadOnly(ctx, cmd, logger, o.timeout)
	if err != nil {
		return couldNotRun(err)
	}
	defer src.log.Close()
	out := bufio.NewWriter(cmd.OutOrStdout())
	defer out.Flush()

	var events []jsonEvent
	var line []byte
	onRecord := func(rec eventlog.Record, ev *wire.Event, derr error) error {
		if !o.events {
			return nil
		}
		if rec.Tombstone {
			if k, err := wire.ParseRecordKey(rec.Key); err == nil && !o.keep(k.TopicIDPartition) {
				return nil
			}
		} else if derr == nil {
			if tp, ok := ev.TopicIDPartition(); ok && !o.keep(tp) {
				return nil
			}
		}
		if o.jsonOut {
			je := jsonEvent{MetadataPartition: rec.Partition, Offset: rec.Offset, Tombstone: rec.Tombstone}
			if rec.Key != nil {
				k := string(rec.Key)
				je.Key = &k
			}
			switch {
			case rec.Tombstone:
			case derr != nil:
				je.Error = derr.Error()
			default:
				evCopy := *ev
				je.Event = &evCopy
			}
			events = append(events, je)
			return nil
		}
		if derr == nil && !rec.Tombstone && rec.Key == nil {
			// Kafka's formatter line exactly.
			line = wire.AppendText(line[:0], rec.Partition, rec.Offset, ev)
			_, err := out.Write(line)
			return err
		}
		// The same line with the key (when there is one) before the value.
		line = fmt.Appendf(line[:0], "partition: %d, offset: %d, ", rec.Partition, rec.Offset)
		if rec.Key != nil {
			line = fmt.Appendf(line, "key: %s, ", strconv.QuoteToGraphic(string(rec.Key)))
		}
		switch {
		case rec.Tombstone:
			line = append(line, "value: null (a tombstone)\n"...)
		case derr != nil:
			line = fmt.Appendf(line, "undecodable: %v\n", derr)
		default:
			line = append(wire.AppendString(append(line, "value: "...), ev), '\n')
		}
		_, err := out.Write(line)
		return err
	}
	if err := o.checkSizes(cmd); err != nil {
		return err
	}
	b, err := materialize(ctx, src, o.timeout, o.quiet, onRecord)
	if err != nil {
		return err
	}
	if o.sizes {
		return writeSizes(out, src, b, o)
	}
	var parts []jsonPartition
	for _, tp := range b.Partitions() {
		if !o.keep(tp) {
			continue
		}
		p := jsonPartition{PartitionSummary: b.Summary(tp)}
		if o.segments {
			segs := b.Segments(tp)
			p.Segments = make([]jsonSegment, 0, len(segs))
			for i := range segs {
				p.Segments = append(p.Segments, toJSONSegment(&segs[i]))
			}
		}
		parts = append(parts, p)
	}
	if o.jsonOut {
		doc := inspectJSON{Source: src.name, MetadataPartitions: src.log.Partitions(), Counts: b.Counts(),
			NewestEventMs: b.NewestEventMs(), HistoryStarts: b.History(), Partitions: parts, Events: events}
		if doc.HistoryStarts == nil {
			doc.HistoryStarts = []view.HistoryStart{}
		}
		if doc.Partitions == nil {
			doc.Partitions = []jsonPartition{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	if o.events {
		fmt.Fprintln(out)
	}
	return writeInspectText(out, src, b, parts, o.segments)
}

func writeInspectText(out io.Writer, src *source, b *view.Builder, parts []jsonPartition, segments bool) error {
	c := b.Counts()
	fmt.Fprintf(out, "%s: %d records in %d metadata partitions (%d undecodable, %d rejected by the state machine: see rlmm verify)\n",
		src.name, c.Records, src.log.Partitions(), c.Undecodable, c.Rejected)
	if newest := b.NewestEventMs(); newest >= 0 {
		fmt.Fprintf(out, "newest event: %s\n", time.UnixMilli(newest).UTC().Format(time.RFC3339))
	}
	for _, h := range b.History() {
		fmt.Fprintf(out, "%s\n", h.Meaning())
	}
	if len(parts) == 0 {
		fmt.Fprintln(out, "no user partition matches")
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tMETA\tCOPYING\tFINISHED\tDELETING\tREMOTE BYTES\tOFFSETS\tLEADER EPOCHS (highest offset)\tPARTITION DELETE")
	for _, p := range parts {
		s := &p.PartitionSummary
		offsets := "-"
		if s.StartOffset >= 0 {
			offsets = fmt.Sprintf("[%d, %d]", s.StartOffset, s.EndOffset)
		}
		var epochs []string
		for _, e := range s.Epochs {
			epochs = append(epochs, fmt.Sprintf("%d:%d", e.Epoch, e.HighestOffset))
		}
		del := s.DeleteState
		if del == "" {
			del = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", s.TopicIDPartition, s.MetadataPartition,
			s.SegmentsByState[rlmm.CopySegmentStarted.String()], s.SegmentsByState[rlmm.CopySegmentFinished.String()],
			s.SegmentsByState[rlmm.DeleteSegmentStarted.String()], s.RemoteBytes, offsets, orDash(strings.Join(epochs, " ")), del)
	}
	if err := tw.Flush(); err != nil || !segments {
		return err
	}
	for _, p := range parts {
		segs := b.Segments(p.TopicIDPartition)
		fmt.Fprintf(out, "\n%s: %d segments\n", p.TopicIDPartition, len(segs))
		if len(segs) == 0 {
			continue
		}
		if err := writeSegmentTable(out, segs); err != nil {
			return err
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
