package filelog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/internal/cursor"
	"github.com/rlmm-go/rlmm/internal/atomicfile"
)

// Defaults of Options.
const (
	// DefaultSegmentBytes is the segment size at which a partition rolls to
	// a new segment file.
	DefaultSegmentBytes = 64 << 20
	// DefaultJournalBytes is the journal size at which the log checkpoints
	// (fsyncs the segments and starts a new journal).
	DefaultJournalBytes = 64 << 20
	// maxSegmentBytes keeps record positions inside a segment in a uint32.
	maxSegmentBytes = 1 << 30
)

// ErrLocked is returned by Open when another process (or another Open in
// this process) holds the directory's lock.
var ErrLocked = errors.New("filelog: directory is locked by another process")

// Options configure Open.
type Options struct {
	// Partitions is the partition count. Required (> 0) to create a log;
	// when opening an existing log, 0 accepts its count and any other value
	// must match it.
	Partitions int32
	// Logger receives recovery reports (torn tails dropped) and I/O
	// failures. Nil discards them.
	Logger *slog.Logger
	// SegmentBytes is the size at which a partition starts a new segment
	// file. 0 means DefaultSegmentBytes; at most 1 GiB.
	SegmentBytes int64
	// JournalBytes is the journal size that triggers a checkpoint. 0 means
	// DefaultJournalBytes. Recovery after a crash replays at most about this
	// much.
	JournalBytes int64
	// ReadOnly opens an existing log for reading only (rlmm inspect): no
	// lock is taken, nothing is written or truncated, a torn tail is
	// reported (TornTails) but left in place, and Publish fails. The view is
	// the log as it was at Open.
	ReadOnly bool
}

// TornTail describes bytes that recovery found after the last good record
// of a file: the remains of a write interrupted by a crash. Records in it
// were never acknowledged unless the journal still holds them, in which case
// recovery restored them.
type TornTail struct {
	// File is the path of the segment or journal file.
	File string
	// Partition is the partition of a segment file, -1 for the journal.
	Partition int32
	// Offset is the offset the first dropped record would have had (-1 for
	// the journal).
	Offset int64
	// Pos is the byte position of the first bad byte in File; Bytes is how
	// many bytes follow from there (the whole file for a dropped segment).
	Pos, Bytes int64
	// Reason says what was wrong with the first bad record.
	Reason string
}

// Log is a durable eventlog.Log in one directory. Open it with Open; all
// methods are safe for concurrent use.
type Log struct {
	dir      string
	opts     Options
	logger   *slog.Logger
	lockFile *os.File
	id       rlmm.Uuid // from MANIFEST, set by Open
	parts    []*partition
	torn     []TornTail

	// The journal; owned by the committer goroutine (and by Open and Close
	// when it is not running).
	journal     *os.File
	journalPath string
	journalSeq  uint64
	journalSize int64
	jbuf        []byte

	// Counters of the committer, for Stats.
	syncs, synced atomic.Int64

	mu           sync.Mutex
	closed       bool
	failed       error // an I/O error that stopped the committer's writes
	pending      []*request
	appended     chan struct{} // closed and replaced after every commit
	kick         chan struct{}
	stop         chan struct{}
	committerEnd chan struct{}

	// files guards the file handles: readers hold it shared, Close takes
	// it exclusively to close them.
	files     sync.RWMutex
	closeOnce sync.Once
	closeErr  error
}

var _ eventlog.Log = (*Log)(nil)

// partition is one partition's segments and offsets.
type partition struct {
	id  int32
	dir string

	mu   sync.Mutex // guards segs and hwm
	segs []*segment // ascending base offsets
	hwm  int64      // next offset; every record below it is durable

	// overlay holds, in read-only mode, records found only in the journal:
	// offsets overlayBase, overlayBase+1, ...
	overlay     [][]byte
	overlayBase int64

	// Owned by the committer.
	next       int64      // next offset to assign
	active     *segment   // segment appended to
	activeSize int64      // bytes written to active, synced or not
	dirty      []*segment // segments written since the last checkpoint
	dirDirty   bool       // a segment file was created since the last checkpoint
}

// segment is one segment file.
type segment struct {
	base int64
	path string
	f    *os.File

	mu      sync.Mutex
	indexed bool     // pos holds the positions of the records from idxBase on
	pos     []uint32 // byte position of each record from idxBase on
	size    int64    // bytes of durable records
	dirty   bool     // committer: in partition.dirty

	// idxBase is the offset of pos[0]. Open scans the last segment only
	// from the checkpoint on; the checkpointed records before it, from base
	// to idxBase (the first prefixBytes bytes), are indexed on first read.
	idxBase     int64
	prefixBytes int64
}

// request is one Publish waiting for the committer.
type request struct {
	partition int32
	value     []byte
	offset    int64
	err       error
	done      chan struct{}
}

// Stats are counters of a log since it was opened.
type Stats struct {
	// Syncs is the number of group commits (journal fsyncs); Records the
	// records they made durable. Records/Syncs is the batching achieved.
	Syncs, Records int64
}

// Stats returns the log's counters.
func (l *Log) Stats() Stats {
	return Stats{Syncs: l.syncs.Load(), Records: l.synced.Load()}
}

// Partitions returns the number of partitions.
func (l *Log) Partitions() int32 { return int32(len(l.parts)) }

// ID returns the id MANIFEST records, written when the log was created:
// a directory made anew gets another. rlmm.ZeroUuid for a log created
// before logs had an id.
func (l *Log) ID() rlmm.Uuid { return l.id }

// Dir returns the log's directory.
func (l *Log) Dir() string { return l.dir }

// TornTails returns what recovery found after the last good record of each
// damaged file when the log was opened (truncated unless ReadOnly).
func (l *Log) TornTails() []TornTail {
	return append([]TornTail(nil), l.torn...)
}

func (l *Log) checkPartition(p int32) error {
	if p < 0 || p >= int32(len(l.parts)) {
		return fmt.Errorf("filelog: partition %d out of range [0, %d): %w", p, len(l.parts), rlmm.ErrInvalidArgument)
	}
	return nil
}

// Publish appends value to partition and returns its offset once the record
// is durable (written and fsynced to the journal). Concurrent calls share
// one write and one fsync.
func (l *Log) Publish(ctx context.Context, partition int32, value []byte) (int64, error) {
	if err := l.checkPartition(partition); err != nil {
		return 0, err
	}
	if l.opts.ReadOnly {
		return 0, fmt.Errorf("filelog: publish to %s: opened read-only: %w", l.dir, rlmm.ErrInvalidArgument)
	}
	if len(value) > MaxRecordBytes {
		return 0, fmt.Errorf("filelog: publish to partition %d: value of %d bytes exceeds %d: %w", partition, len(value), MaxRecordBytes, rlmm.ErrInvalidArgument)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	r := &request{partition: partition, value: append([]byte(nil), value...), done: make(chan struct{})}
	l.mu.Lock()
	switch {
	case l.closed:
		l.mu.Unlock()
		return 0, fmt.Errorf("filelog: publish: %w", rlmm.ErrClosed)
	case l.failed != nil:
		err := l.failed
		l.mu.Unlock()
		return 0, err
	}
	l.pending = append(l.pending, r)
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default: // the committer is already kicked
	}
	select {
	case <-r.done:
		return r.offset, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// StartOffsets returns 0 for each given partition: the embedded log never
// deletes records.
func (l *Log) StartOffsets(ctx context.Context, partitions []int32) ([]int64, error) {
	if err := l.checkQuery(ctx, "start offsets", partitions); err != nil {
		return nil, err
	}
	return make([]int64, len(partitions)), nil
}

// checkQuery refuses a query of partitions (what names it) when ctx is
// done, the log is closed or a partition is out of range.
func (l *Log) checkQuery(ctx context.Context, what string, partitions []int32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return fmt.Errorf("filelog: %s: %w", what, rlmm.ErrClosed)
	}
	for _, p := range partitions {
		if err := l.checkPartition(p); err != nil {
			return err
		}
	}
	return nil
}

// HighWaterMarks returns the next offset of each given partition.
func (l *Log) HighWaterMarks(ctx context.Context, partitions []int32) ([]int64, error) {
	if err := l.checkQuery(ctx, "high-water marks", partitions); err != nil {
		return nil, err
	}
	hw := make([]int64, len(partitions))
	for i, p := range partitions {
		part := l.parts[p]
		part.mu.Lock()
		hw[i] = part.hwm
		part.mu.Unlock()
	}
	return hw, nil
}

// Subscribe returns a subscription that consumes no partition yet.
func (l *Log) Subscribe(ctx context.Context) (eventlog.Subscription, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, fmt.Errorf("filelog: subscribe: %w", rlmm.ErrClosed)
	}
	return cursor.New("filelog", l.checkPartition, l.collect), nil
}

// Close commits the publishes already queued, checkpoints (so the next Open
// replays nothing), and releases the files and the lock. Blocked Polls
// return rlmm.ErrClosed. Close is idempotent.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		close(l.appended)
		l.mu.Unlock()
		var errs []error
		if !l.opts.ReadOnly {
			close(l.stop)
			<-l.committerEnd
			l.mu.Lock()
			failed := l.failed
			l.mu.Unlock()
			if failed == nil {
				if err := l.checkpoint(); err != nil {
					errs = append(errs, err)
				}
			}
		}
		l.files.Lock()
		defer l.files.Unlock()
		errs = append(errs, l.closeFiles())
		l.closeErr = errors.Join(errs...)
	})
	return l.closeErr
}

// closeFiles closes every file handle and releases the lock. It also runs
// after a failed open, when the partitions after the one that failed were
// never loaded (nil).
func (l *Log) closeFiles() error {
	var errs []error
	for _, p := range l.parts {
		if p == nil {
			continue
		}
		for _, s := range p.segs {
			if s.f != nil {
				if err := s.f.Close(); err != nil {
					errs = append(errs, err)
				}
				s.f = nil
			}
		}
	}
	if l.journal != nil {
		if err := l.journal.Close(); err != nil {
			errs = append(errs, err)
		}
		l.journal = nil
	}
	if l.lockFile != nil {
		if err := unlockDir(l.lockFile); err != nil {
			errs = append(errs, err)
		}
		l.lockFile = nil
	}
	return errors.Join(errs...)
}

// broadcast wakes every Poll waiting for new records.
func (l *Log) broadcast() {
	l.mu.Lock()
	if !l.closed {
		close(l.appended)
		l.appended = make(chan struct{})
	}
	l.mu.Unlock()
}

// run is the committer: it takes the queued publishes in batches, writes
// each batch to the segments and the journal, fsyncs the journal once, and
// answers the batch's callers.
//
// Batches form cohorts: the callers answered after one fsync come back while
// the next batch (those who queued during the fsync) is already being
// written, so 64 publishers settle into two batches of 32 and half of each
// fsync's capacity is wasted. After a batch the committer therefore waits
// until as many publishes are queued as were queued plus answered, for at
// most half an fsync: a caller that publishes again at once makes it into
// the next batch, and a lone publisher (one answered, none queued: target
// one, which its next publish meets) is not delayed at all. Callers that do
// not come back quickly (a manager waits for its pump before its next
// mutation) would only be delayed, so a wait that gains nobody turns waiting
// off for the next lingerBackoff batches.
func (l *Log) run() {
	defer close(l.committerEnd)
	skip := 0 // batches to commit without lingering
	for {
		stopping := false
		select {
		case <-l.kick:
		case <-l.stop:
			stopping = true
		}
		for {
			batch := l.takeBatch()
			if len(batch) == 0 {
				break
			}
			start := time.Now()
			l.commit(batch)
			took := time.Since(start)
			target := min(l.queued()+len(batch), maxLingerTarget)
			switch {
			case stopping || target <= 1:
			case skip > 0:
				skip--
			default:
				var gained bool
				stopping, gained = l.linger(target, took/2)
				if !gained {
					skip = lingerBackoff
				}
			}
		}
		if stopping {
			return
		}
	}
}

// maxLingerTarget bounds the queue length the committer waits for;
// lingerBackoff is how many batches go without waiting after a wait that
// gained nobody.
const (
	maxLingerTarget = 1024
	lingerBackoff   = 8
)

// queued returns the number of publishes waiting for the committer.
func (l *Log) queued() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending)
}

// linger waits until target publishes are queued or d has passed. It
// reports whether the log is stopping and whether any publish arrived while
// it waited (or the target was met at once).
func (l *Log) linger(target int, d time.Duration) (stopping, gained bool) {
	start := l.queued()
	if d <= 0 || start >= target {
		return false, true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		n := l.queued()
		if n >= target {
			return false, true
		}
		select {
		case <-l.kick:
		case <-timer.C:
			return false, l.queued() > start
		case <-l.stop:
			return true, true
		}
	}
}

func (l *Log) failedErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// takeBatch removes from the queue the publishes of one batch: as many as
// fit in maxBatchBytes of journal, at least one.
func (l *Log) takeBatch() []*request {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, size := 0, 0
	for n < len(l.pending) {
		rs := frameHeaderSize + journalRecordPrefix + len(l.pending[n].value)
		if n > 0 && size+rs > maxBatchBytes {
			break
		}
		size += rs
		n++
	}
	batch := append([]*request(nil), l.pending[:n]...)
	rest := copy(l.pending, l.pending[n:])
	clear(l.pending[rest:])
	l.pending = l.pending[:rest]
	return batch
}

// staged is a write to a segment made durable by the next journal fsync:
// what readers learn once it is.
type staged struct {
	seg  *segment
	pos  []uint32
	size int64
}

// commit writes a batch: records to their segments (page cache), the same
// records to the journal, one fsync of the journal; then it publishes the
// new high-water marks and answers the callers.
func (l *Log) commit(batch []*request) {
	if err := l.failedErr(); err != nil {
		answer(batch, err)
		return
	}
	byPart := make(map[int32][][]byte)
	var order []int32
	first := make(map[int32]int64)
	l.jbuf = l.jbuf[:0]
	for _, r := range batch {
		p := l.parts[r.partition]
		if _, ok := byPart[r.partition]; !ok {
			order = append(order, r.partition)
			first[r.partition] = p.next
		}
		r.offset = p.next
		p.next++
		byPart[r.partition] = append(byPart[r.partition], r.value)
		l.jbuf = appendJournalRecord(l.jbuf, l.journalSeq, r.partition, r.offset, r.value)
	}
	var stages []staged
	for _, id := range order {
		st, err := l.appendToPartition(l.parts[id], first[id], byPart[id])
		if err != nil {
			l.fail(batch, err)
			return
		}
		stages = append(stages, st...)
	}
	if _, err := l.journal.WriteAt(l.jbuf, l.journalSize); err != nil {
		l.fail(batch, fmt.Errorf("filelog: writing journal %s at byte %d: %w", l.journalPath, l.journalSize, err))
		return
	}
	l.journalSize += int64(len(l.jbuf))
	if err := fdatasync(l.journal); err != nil {
		l.fail(batch, fmt.Errorf("filelog: syncing journal %s: %w", l.journalPath, err))
		return
	}
	l.syncs.Add(1)
	l.synced.Add(int64(len(batch)))
	for _, st := range stages {
		st.seg.mu.Lock()
		st.seg.pos = append(st.seg.pos, st.pos...)
		st.seg.size = st.size
		st.seg.mu.Unlock()
	}
	for _, id := range order {
		p := l.parts[id]
		p.mu.Lock()
		p.hwm = p.next
		p.mu.Unlock()
	}
	answer(batch, nil)
	l.broadcast()
	if l.journalSize >= l.opts.JournalBytes {
		if err := l.checkpoint(); err != nil {
			l.fail(nil, err)
		}
	}
}

func answer(batch []*request, err error) {
	for _, r := range batch {
		if err != nil {
			r.err = err
		}
		close(r.done)
	}
}

// fail records an I/O error: the batch fails and so does every later
// Publish, since the files may now disagree with the offsets handed out.
// Reopening the log recovers.
func (l *Log) fail(batch []*request, err error) {
	err = fmt.Errorf("%w (the log refuses further publishes; reopen it to recover)", err)
	l.logger.Error("filelog: write failed", "dir", l.dir, "err", err)
	l.mu.Lock()
	if l.failed == nil {
		l.failed = err
	}
	l.mu.Unlock()
	answer(batch, err)
}

// appendToPartition writes the frames of values (offsets first, first+1, ...)
// to p's segments, rolling to a new segment when the active one is full. The
// writes are not synced; the returned stages say what to publish once the
// journal fsync has made them durable.
func (l *Log) appendToPartition(p *partition, first int64, values [][]byte) ([]staged, error) {
	var stages []staged
	var buf []byte
	cur := staged{seg: p.active}
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		if _, err := p.active.f.WriteAt(buf, p.activeSize); err != nil {
			return fmt.Errorf("filelog: writing %s at byte %d: %w", p.active.path, p.activeSize, err)
		}
		p.activeSize += int64(len(buf))
		cur.size = p.activeSize
		stages = append(stages, cur)
		if !p.active.dirty {
			p.active.dirty = true
			p.dirty = append(p.dirty, p.active)
		}
		buf = buf[:0]
		return nil
	}
	for i, v := range values {
		off := first + int64(i)
		if p.activeSize+int64(len(buf)) >= l.opts.SegmentBytes {
			if err := flush(); err != nil {
				return nil, err
			}
			if err := l.roll(p, off); err != nil {
				return nil, err
			}
			cur = staged{seg: p.active}
		}
		cur.pos = append(cur.pos, uint32(p.activeSize+int64(len(buf))))
		buf = appendFrame(buf, uint64(off), v)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return stages, nil
}

// roll starts a new segment file for p whose first offset is base.
func (l *Log) roll(p *partition, base int64) error {
	s, err := createSegment(p.dir, base)
	if err != nil {
		return err
	}
	s.indexed = true
	p.mu.Lock()
	p.segs = append(p.segs, s)
	p.mu.Unlock()
	p.active, p.activeSize, p.dirDirty = s, 0, true
	return nil
}

func segmentName(base int64) string { return fmt.Sprintf("%020d%s", base, segmentSuffix) }

func journalName(seq uint64) string {
	return fmt.Sprintf("%s%020d%s", journalPrefix, seq, journalSuffix)
}

func partitionDirName(p int32) string { return fmt.Sprintf("p-%05d", p) }

func createSegment(dir string, base int64) (*segment, error) {
	path := filepath.Join(dir, segmentName(base))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("filelog: creating segment: %w", err)
	}
	return &segment{base: base, path: path, f: f, idxBase: base}, nil
}

// checkpoint makes every segment write durable (fsync of the written
// segments and of directories that gained files), then starts a new journal
// whose header records the partitions' ends, and deletes the old journal.
// After it, recovery has nothing to replay.
func (l *Log) checkpoint() error {
	for _, p := range l.parts {
		for _, s := range p.dirty {
			if err := fdatasync(s.f); err != nil {
				return fmt.Errorf("filelog: syncing segment %s: %w", s.path, err)
			}
			s.dirty = false
		}
		p.dirty = p.dirty[:0]
		if p.dirDirty {
			if err := syncDir(p.dir); err != nil {
				return err
			}
			p.dirDirty = false
		}
	}
	seq := l.journalSeq + 1
	h := journalHeader{Seq: seq, Checkpoint: make([]int64, len(l.parts)), SegmentBase: make([]int64, len(l.parts)), SegmentBytes: make([]int64, len(l.parts))}
	for i, p := range l.parts {
		h.Checkpoint[i] = p.next
		if p.active != nil {
			h.SegmentBase[i], h.SegmentBytes[i] = p.active.base, p.activeSize
		}
	}
	hdr := appendJournalHeader(nil, h)
	path := filepath.Join(l.dir, journalName(seq))
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return fmt.Errorf("filelog: creating journal: %w", err)
	}
	if _, err := f.Write(hdr); err != nil {
		f.Abort()
		return fmt.Errorf("filelog: writing journal %s: %w", f.Name(), err)
	}
	if err := f.Commit(); err != nil {
		f.Abort()
		return fmt.Errorf("filelog: installing journal: %w", err)
	}
	old, oldPath := l.journal, l.journalPath
	l.journal, l.journalPath, l.journalSeq, l.journalSize = f.File, path, seq, int64(len(hdr))
	if old != nil {
		old.Close()
		if err := os.Remove(oldPath); err != nil {
			l.logger.Warn("filelog: removing an old journal", "file", oldPath, "err", err)
		}
	}
	return nil
}

// syncDir fsyncs a directory, making the names created or renamed in it
// durable.
func syncDir(dir string) error {
	if err := atomicfile.SyncDir(dir); err != nil {
		return fmt.Errorf("filelog: %w", err)
	}
	return nil
}

// findSegment returns the index in segs of the segment holding offset.
func findSegment(segs []*segment, offset int64) int {
	return sort.Search(len(segs), func(i int) bool { return segs[i].base > offset }) - 1
}
