package rebuild

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/rlmm-go/rlmm"
)

// checkpointVersion is the only version of Kafka's leader-epoch checkpoint.
const checkpointVersion = 0

// ParseLeaderEpochCheckpoint parses Kafka's leader-epoch checkpoint file
// (LeaderEpochCheckpointFile, as LocalTieredStorage stores a segment's
// .leader_epoch_checkpoint): a line with the version (0), a line with the
// number of entries, then one "<epoch> <start offset>" line per entry
// (fields separated by white space), and nothing after them. Epochs must be
// non-negative and increase, start offsets non-negative and not decrease.
// Errors wrap rlmm.ErrCorrupt and name the file, the line and its byte.
func ParseLeaderEpochCheckpoint(b []byte, name string) ([]rlmm.EpochStart, error) {
	pos, lineNo := 0, 0
	// next returns the next line without its "\n" (or "\r\n"), its byte,
	// and false at the end of the file.
	next := func() (string, int, bool) {
		if pos >= len(b) {
			return "", pos, false
		}
		start := pos
		end := len(b)
		if i := bytes.IndexByte(b[pos:], '\n'); i >= 0 {
			end = pos + i
			pos = end + 1
		} else {
			pos = len(b)
		}
		lineNo++
		return strings.TrimSuffix(string(b[start:end]), "\r"), start, true
	}
	bad := func(at int, format string, args ...any) error {
		return fmt.Errorf("%w: %s: line %d (byte %d): %s", rlmm.ErrCorrupt, name, lineNo, at, fmt.Sprintf(format, args...))
	}
	line, at, ok := next()
	if !ok {
		return nil, fmt.Errorf("%w: %s: empty leader-epoch checkpoint (no version line)", rlmm.ErrCorrupt, name)
	}
	if v, err := strconv.Atoi(strings.TrimSpace(line)); err != nil || v != checkpointVersion {
		return nil, bad(at, "version %q, want %d", line, checkpointVersion)
	}
	line, at, ok = next()
	if !ok {
		return nil, fmt.Errorf("%w: %s: byte %d: truncated leader-epoch checkpoint (no entry count line)", rlmm.ErrCorrupt, name, len(b))
	}
	count, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || count < 0 {
		return nil, bad(at, "entry count %q is not a non-negative number", line)
	}
	if count > len(b) {
		return nil, bad(at, "entry count %d in a file of %d bytes", count, len(b))
	}
	out := make([]rlmm.EpochStart, 0, count)
	for i := 0; i < count; i++ {
		line, at, ok = next()
		if !ok {
			return nil, fmt.Errorf("%w: %s: byte %d: truncated leader-epoch checkpoint: %d of %d entries", rlmm.ErrCorrupt, name, len(b), i, count)
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, bad(at, "entry %q: want \"<epoch> <start offset>\"", line)
		}
		epoch, err := strconv.ParseInt(f[0], 10, 32)
		if err != nil || epoch < 0 {
			return nil, bad(at, "epoch %q is not a non-negative int32", f[0])
		}
		off, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || off < 0 {
			return nil, bad(at, "start offset %q is not a non-negative int64", f[1])
		}
		if n := len(out); n > 0 && (int32(epoch) <= out[n-1].Epoch || off < out[n-1].StartOffset) {
			return nil, bad(at, "entry epoch %d at offset %d after epoch %d at offset %d: epochs must increase and offsets not decrease",
				epoch, off, out[n-1].Epoch, out[n-1].StartOffset)
		}
		out = append(out, rlmm.EpochStart{Epoch: int32(epoch), StartOffset: off})
	}
	if line, at, ok := next(); ok {
		return nil, bad(at, "%q after the %d entries the file announces", line, count)
	}
	return out, nil
}

// EpochsInRange returns the entries of a leader-epoch lineage that cover
// offsets start..end, as Kafka's LeaderEpochFileCache.epochEntriesInRange
// gives them for a segment (RemoteLogManager's segment leader epochs): the
// entries starting after end are dropped, and of those starting at or
// before start only the last is kept, moved to start.
func EpochsInRange(entries []rlmm.EpochStart, start, end int64) []rlmm.EpochStart {
	var out []rlmm.EpochStart
	for _, e := range entries {
		if e.StartOffset > end {
			break
		}
		if e.StartOffset <= start {
			out = append(out[:0], rlmm.EpochStart{Epoch: e.Epoch, StartOffset: start})
			continue
		}
		out = append(out, e)
	}
	return out
}
