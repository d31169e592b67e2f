package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/memory"
	"github.com/rlmm-go/rlmm/snapshot"
	"github.com/rlmm-go/rlmm/wire"
)

// rlmm inspect --snapshot FILE: a dump of a snapshot file (as raft-wal
// ships waldump), through the snapshot package's reader: format version 4
// (the block index in a footer) and the older versions 2 and 3 (the index
// in the head), the version and layout said. It never writes.

// snapshotBlockJSON is one block of inspect --snapshot --json.
type snapshotBlockJSON struct {
	Partition         string        `json:"partition"`
	MetadataPartition int32         `json:"metadataPartition"`
	Segments          int           `json:"segments"`
	FileOffset        int64         `json:"fileOffset"`
	Length            int64         `json:"length"`
	CRC32C            string        `json:"crc32c"`
	Error             string        `json:"error,omitempty"`
	HighestOffsets    []epochOffset `json:"highestOffsets,omitempty"`
	DeleteState       string        `json:"deleteState,omitempty"`
	SegmentList       []jsonSegment `json:"segmentList,omitempty"`
}

// epochOffset is an epoch's highest finished offset.
type epochOffset struct {
	Epoch  int32 `json:"epoch"`
	Offset int64 `json:"offset"`
}

// snapshotJSON is the document inspect --snapshot --json prints.
type snapshotJSON struct {
	File               string              `json:"file"`
	Bytes              int64               `json:"bytes"`
	Version            uint16              `json:"version"`
	Layout             string              `json:"layout"` // where the block index is: "footer" (version 4) or "head" (versions 2 and 3)
	LogID              string              `json:"logId"`  // "" when the file does not say (version 2, or a log without an id)
	MetadataPartitions int32               `json:"metadataPartitions"`
	Committed          []int64             `json:"committedOffsets"`
	UserPartitions     int                 `json:"userPartitions"`
	TotalSegments      int                 `json:"totalSegments"`
	BadBlocks          int                 `json:"badBlocks"`
	Blocks             []snapshotBlockJSON `json:"blocks"`
}

// addSnapshotFlag registers --snapshot on rlmm inspect.
func addSnapshotFlag(f *pflag.FlagSet, o *inspectOptions) {
	f.StringVar(&o.snapshot, "snapshot", "", "show a snapshot file (rlmm.snapshot) instead of a log: head, committed offsets, every block with its checksum checked")
}

func runInspectSnapshot(cmd *cobra.Command, o *inspectOptions) error {
	if o.events {
		return usageErrorf("--events reads a log; a snapshot holds no events (drop --events or --snapshot)")
	}
	if cmd.Flags().Changed("dir") || cmd.Flags().Changed("kafka") {
		return usageErrorf("--snapshot reads a file; it takes no --dir or --kafka")
	}
	f, err := os.Open(o.snapshot)
	if err != nil {
		return couldNotRun(fmt.Errorf("snapshot: %w", err))
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return couldNotRun(fmt.Errorf("snapshot: %w", err))
	}
	if !info.Mode().IsRegular() {
		return couldNotRun(fmt.Errorf("snapshot %s: not a regular file (%s)", o.snapshot, info.Mode()))
	}
	r, err := snapshot.Open(f, info.Size())
	if err != nil {
		return couldNotRun(fmt.Errorf("snapshot %s: %w", o.snapshot, err))
	}
	head := r.Head()
	doc := snapshotJSON{File: o.snapshot, Bytes: r.Size(), Version: r.Version(), Layout: snapshotLayout(r.Version()),
		MetadataPartitions: head.Partitions, Committed: head.Committed, UserPartitions: len(r.Blocks()),
		Blocks: []snapshotBlockJSON{}}
	if head.LogID != rlmm.ZeroUuid {
		doc.LogID = head.LogID.String()
	}
	var buf []byte
	var segs [][]rlmm.SegmentMetadata // per shown block, with --segments
	for k, blk := range r.Blocks() {
		doc.TotalSegments += blk.Segments
		if !o.keep(blk.TopicIDPartition) {
			continue
		}
		b := snapshotBlockJSON{Partition: blk.TopicIDPartition.String(),
			MetadataPartition: wire.MetadataPartition(blk.TopicIDPartition, head.Partitions),
			Segments:          blk.Segments, FileOffset: blk.Offset, Length: blk.Length, CRC32C: fmt.Sprintf("%08x", blk.CRC)}
		var st memory.PartitionState
		buf, err = r.ReadBlock(k, buf)
		if err == nil {
			st, err = snapshot.DecodeState(buf, blk)
		}
		if err != nil {
			b.Error = err.Error()
			doc.BadBlocks++
		} else {
			for _, h := range st.HighestOffsets {
				b.HighestOffsets = append(b.HighestOffsets, epochOffset{h.Epoch, h.Offset})
			}
			if st.Delete != nil {
				b.DeleteState = st.Delete.State.String()
			}
			if o.segments {
				b.SegmentList = make([]jsonSegment, 0, len(st.Segments))
				for i := range st.Segments {
					b.SegmentList = append(b.SegmentList, toJSONSegment(&st.Segments[i]))
				}
			}
		}
		doc.Blocks = append(doc.Blocks, b)
		segs = append(segs, st.Segments)
	}
	out := bufio.NewWriter(cmd.OutOrStdout())
	if o.jsonOut {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		err = enc.Encode(doc)
	} else {
		err = writeSnapshotText(out, &doc, segs, o.segments)
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	if doc.BadBlocks > 0 {
		return findings("snapshot %s: %d of its blocks are damaged or cannot be decoded (a restart would replay their metadata partitions from 0)", o.snapshot, doc.BadBlocks)
	}
	return nil
}

// snapshotLayout names where a snapshot version keeps its block index.
func snapshotLayout(version uint16) string {
	if version >= snapshot.Version {
		return "footer"
	}
	return "head"
}

func writeSnapshotText(out io.Writer, doc *snapshotJSON, segs [][]rlmm.SegmentMetadata, segments bool) error {
	fmt.Fprintf(out, "%s: rlmm snapshot version %d (block index in the %s), %d bytes, %d metadata partitions, %d user partitions, %d segments\n",
		doc.File, doc.Version, doc.Layout, doc.Bytes, doc.MetadataPartitions, doc.UserPartitions, doc.TotalSegments)
	// The id a restart compares with its log's (the metadata topic's id).
	fmt.Fprintf(out, "written for the log with id %s\n", orDash(doc.LogID))
	var held []string
	for mp, c := range doc.Committed {
		if c >= 0 {
			held = append(held, fmt.Sprintf("%d:%d", mp, c))
		}
	}
	fmt.Fprintf(out, "committed offsets (metadata partition:offset; the others hold nothing): %s\n", orDash(strings.Join(held, " ")))
	if len(doc.Blocks) == 0 {
		fmt.Fprintln(out, "no user partition matches")
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tMETA\tSEGMENTS\tFILE OFFSET\tBYTES\tCRC32C\tHIGHEST OFFSETS\tPARTITION DELETE\tSTATUS")
	for _, b := range doc.Blocks {
		var highs []string
		for _, h := range b.HighestOffsets {
			highs = append(highs, fmt.Sprintf("%d:%d", h.Epoch, h.Offset))
		}
		status := "ok"
		if b.Error != "" {
			status = b.Error
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", b.Partition, b.MetadataPartition, b.Segments, b.FileOffset,
			b.Length, b.CRC32C, orDash(strings.Join(highs, " ")), orDash(b.DeleteState), status)
	}
	if err := tw.Flush(); err != nil || !segments {
		return err
	}
	for k, b := range doc.Blocks {
		if b.Error != "" {
			continue
		}
		fmt.Fprintf(out, "\n%s: %d segments (in the order of their last change)\n", b.Partition, len(segs[k]))
		if len(segs[k]) == 0 {
			continue
		}
		if err := writeSegmentTable(out, segs[k]); err != nil {
			return err
		}
	}
	return nil
}

// writeSegmentTable prints segments as a table (inspect --segments, of a
// log or of a snapshot).
func writeSegmentTable(out io.Writer, segs []rlmm.SegmentMetadata) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  SEGMENT ID\tSTATE\tOFFSETS\tLEADER EPOCHS\tBYTES\tBROKER\tEVENT TIME")
	for _, m := range segs {
		var eb strings.Builder
		rlmm.WriteEpochs(&eb, m.LeaderEpochs)
		fmt.Fprintf(tw, "  %s\t%s\t[%d, %d]\t%s\t%d\t%d\t%s\n", m.ID.ID, m.State, m.StartOffset, m.EndOffset,
			eb.String(), m.SizeInBytes, m.BrokerID, time.UnixMilli(m.EventTimestampMs).UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}
