package filelog

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/internal/atomicfile"
)

// Open opens the log in dir, creating it when opts.Partitions > 0 and the
// directory is missing or empty (and not ReadOnly). Opening recovers from a
// crash: it drops a torn tail (logged, see TornTails), replays the journal
// into the segments and checkpoints. It fails with a clear error when dir is
// not an rlmm log, holds a different partition count than opts.Partitions,
// is locked by another process (ErrLocked), or is corrupt before its tail
// (rlmm.ErrCorrupt, naming the file and byte offset).
func Open(dir string, opts Options) (*Log, error) {
	if opts.Partitions < 0 || opts.Partitions > maxPartitions {
		return nil, fmt.Errorf("filelog: partition count %d outside [1, %d]: %w", opts.Partitions, maxPartitions, rlmm.ErrInvalidArgument)
	}
	if opts.SegmentBytes == 0 {
		opts.SegmentBytes = DefaultSegmentBytes
	}
	if opts.SegmentBytes < 0 || opts.SegmentBytes > maxSegmentBytes {
		return nil, fmt.Errorf("filelog: segment size %d outside [1, %d]: %w", opts.SegmentBytes, maxSegmentBytes, rlmm.ErrInvalidArgument)
	}
	if opts.JournalBytes == 0 {
		opts.JournalBytes = DefaultJournalBytes
	}
	if opts.JournalBytes < 0 {
		return nil, fmt.Errorf("filelog: journal size %d is negative: %w", opts.JournalBytes, rlmm.ErrInvalidArgument)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l := &Log{
		dir:          dir,
		opts:         opts,
		logger:       logger,
		appended:     make(chan struct{}),
		kick:         make(chan struct{}, 1),
		stop:         make(chan struct{}),
		committerEnd: make(chan struct{}),
	}
	err := l.open()
	// A read-only open races with the writer of a live log: a checkpoint or
	// a segment roll between our directory listing and our reads can look
	// like a segment ending before its checkpoint. Look again.
	for attempt := 1; err != nil && opts.ReadOnly && errors.Is(err, rlmm.ErrCorrupt) && attempt < readOnlyAttempts; attempt++ {
		l.closeFiles()
		l.parts, l.torn = nil, nil
		err = l.open()
	}
	if err != nil {
		l.closeFiles()
		return nil, err
	}
	if !opts.ReadOnly {
		go l.run()
	}
	return l, nil
}

// readOnlyAttempts is how often a read-only Open tries to get a consistent
// view of a log that is being written.
const readOnlyAttempts = 3

func (l *Log) open() error {
	creating := l.opts.Partitions > 0 && !l.opts.ReadOnly
	fi, err := os.Stat(l.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) && creating:
		if err := os.MkdirAll(l.dir, 0o755); err != nil {
			return fmt.Errorf("filelog: creating %s: %w", l.dir, err)
		}
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("filelog: no log at %s (the directory does not exist; give a partition count to create one): %w", l.dir, err)
	case err != nil:
		return fmt.Errorf("filelog: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("filelog: %s is not a directory: %w", l.dir, rlmm.ErrInvalidArgument)
	}
	if !l.opts.ReadOnly {
		lf, err := lockDir(filepath.Join(l.dir, lockName))
		if err != nil {
			return err
		}
		l.lockFile = lf
	}
	m, err := l.readOrCreateManifest(creating)
	if err != nil {
		return err
	}
	if l.opts.Partitions != 0 && l.opts.Partitions != m.Partitions {
		return fmt.Errorf("filelog: %s holds a log of %d partitions, but %d were asked for: %w", l.dir, m.Partitions, l.opts.Partitions, rlmm.ErrInvalidArgument)
	}
	if m.ID != nil {
		l.id = *m.ID
	}
	l.parts = make([]*partition, m.Partitions)
	for i := range l.parts {
		if err := l.loadPartitionDir(int32(i)); err != nil {
			return err
		}
	}
	h, recs, jerr := l.loadJournal(m.Partitions)
	if jerr != nil {
		return jerr
	}
	for i, p := range l.parts {
		if err := l.recoverPartition(p, h.Checkpoint[i], h.SegmentBase[i], h.SegmentBytes[i]); err != nil {
			return err
		}
	}
	if err := l.replayJournal(recs); err != nil {
		return err
	}
	if l.opts.ReadOnly {
		return nil
	}
	// Make the recovered state the new checkpoint: segments synced, a
	// fresh journal, the old one gone.
	return l.checkpoint()
}

// readOrCreateManifest reads MANIFEST, or writes it into an empty directory
// when creating.
func (l *Log) readOrCreateManifest(creating bool) (manifest, error) {
	path := filepath.Join(l.dir, manifestName)
	data, err := os.ReadFile(path)
	if err == nil {
		return decodeManifest(path, data)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return manifest{}, fmt.Errorf("filelog: reading manifest: %w", err)
	}
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return manifest{}, fmt.Errorf("filelog: %w", err)
	}
	var others []string
	for _, e := range entries {
		if e.Name() != lockName && !strings.HasSuffix(e.Name(), tmpSuffix) {
			others = append(others, e.Name())
		}
	}
	if len(others) > 0 {
		return manifest{}, fmt.Errorf("filelog: %s is not an rlmm log: it has no %s but holds %d other entries (such as %q): %w",
			l.dir, manifestName, len(others), others[0], rlmm.ErrInvalidArgument)
	}
	if !creating {
		return manifest{}, fmt.Errorf("filelog: no log at %s (the directory is empty; give a partition count to create one): %w", l.dir, fs.ErrNotExist)
	}
	id := rlmm.RandomUuid()
	m := manifest{Format: formatName, Version: formatVersion, Partitions: l.opts.Partitions, ID: &id}
	if err := atomicfile.WriteFile(path, encodeManifest(m), 0o644); err != nil {
		return manifest{}, fmt.Errorf("filelog: installing manifest: %w", err)
	}
	l.logger.Info("filelog: created log", "dir", l.dir, "partitions", l.opts.Partitions, "id", id)
	return m, nil
}

// loadPartitionDir lists the segment files of partition id (creating its
// directory and first segment when writable) and opens them.
func (l *Log) loadPartitionDir(id int32) error {
	p := &partition{id: id, dir: filepath.Join(l.dir, partitionDirName(id))}
	l.parts[id] = p
	entries, err := os.ReadDir(p.dir)
	if errors.Is(err, fs.ErrNotExist) && !l.opts.ReadOnly {
		if err := os.Mkdir(p.dir, 0o755); err != nil {
			return fmt.Errorf("filelog: creating partition directory: %w", err)
		}
		entries, err = nil, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("filelog: partition %d: %w", id, err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, segmentSuffix) {
			continue
		}
		base, err := strconv.ParseInt(strings.TrimSuffix(name, segmentSuffix), 10, 64)
		if err != nil || base < 0 {
			return fmt.Errorf("filelog: %s: not a segment name: %w", filepath.Join(p.dir, name), rlmm.ErrCorrupt)
		}
		path := filepath.Join(p.dir, name)
		flag := os.O_RDWR
		if l.opts.ReadOnly {
			flag = os.O_RDONLY
		}
		f, err := os.OpenFile(path, flag, 0)
		if err != nil {
			return fmt.Errorf("filelog: opening segment: %w", err)
		}
		p.segs = append(p.segs, &segment{base: base, path: path, f: f, idxBase: base})
	}
	sort.Slice(p.segs, func(i, j int) bool { return p.segs[i].base < p.segs[j].base })
	if len(p.segs) > 0 && p.segs[0].base != 0 {
		return fmt.Errorf("filelog: partition %d: first segment %s starts at offset %d, not 0 (segments are missing): %w",
			id, p.segs[0].path, p.segs[0].base, rlmm.ErrCorrupt)
	}
	return nil
}

// loadJournal finds the newest journal, removes stale ones (when
// writable), and decodes it. A torn tail of the journal is reported; a bad
// frame followed by more bytes than one interrupted batch can leave is
// corruption.
func (l *Log) loadJournal(partitions int32) (journalHeader, []journalRecord, error) {
	h := journalHeader{Checkpoint: make([]int64, partitions), SegmentBase: make([]int64, partitions), SegmentBytes: make([]int64, partitions)}
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return h, nil, fmt.Errorf("filelog: %w", err)
	}
	var seqs []uint64
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, journalPrefix) {
			continue
		}
		if strings.HasSuffix(name, tmpSuffix) {
			// An interrupted checkpoint: the previous journal is intact.
			if !l.opts.ReadOnly {
				os.Remove(filepath.Join(l.dir, name))
			}
			continue
		}
		seq, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, journalPrefix), journalSuffix), 10, 64)
		if err != nil || !strings.HasSuffix(name, journalSuffix) {
			return h, nil, fmt.Errorf("filelog: %s: not a journal name: %w", filepath.Join(l.dir, name), rlmm.ErrCorrupt)
		}
		seqs = append(seqs, seq)
	}
	if len(seqs) == 0 {
		// A log whose creation was interrupted before its first
		// checkpoint: every partition is empty or wholly unsynced.
		return h, nil, nil
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	seq := seqs[len(seqs)-1]
	if !l.opts.ReadOnly {
		for _, s := range seqs[:len(seqs)-1] {
			os.Remove(filepath.Join(l.dir, journalName(s)))
		}
	}
	path := filepath.Join(l.dir, journalName(seq))
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && l.opts.ReadOnly {
		// Replaced by a checkpoint of the writer since we listed it.
		return h, nil, fmt.Errorf("filelog: journal %s vanished while opening read-only: %w", path, rlmm.ErrCorrupt)
	}
	if err != nil {
		return h, nil, fmt.Errorf("filelog: reading journal: %w", err)
	}
	h, recs, end, err := readJournal(data, seq, partitions)
	if err != nil {
		fe, ok := isFrameError(err)
		if !ok || end == 0 {
			return h, nil, fmt.Errorf("filelog: journal %s: %w", path, err)
		}
		rest := int64(len(data)) - end
		if rest > maxTornBytes() {
			return h, nil, fmt.Errorf("filelog: journal %s: bad record followed by %d more bytes, more than a crash can leave unsynced: %w", path, rest, err)
		}
		l.reportTorn(TornTail{File: path, Partition: -1, Offset: -1, Pos: fe.Pos, Bytes: rest, Reason: fe.Reason})
	}
	l.journalSeq = seq
	l.journalPath = path
	return h, recs, nil
}

func (l *Log) reportTorn(t TornTail) {
	l.torn = append(l.torn, t)
	verb := "dropping"
	if l.opts.ReadOnly {
		verb = "ignoring (read-only)"
	}
	l.logger.Warn("filelog: "+verb+" torn tail", "file", t.File, "partition", t.Partition, "offset", t.Offset,
		"byte", t.Pos, "bytes", t.Bytes, "reason", t.Reason)
}

// recoverPartition scans p's segments from the one holding its checkpoint
// offset on. Records below the checkpoint were fsynced before the journal
// was made durable, so a bad one is corruption; from the checkpoint on, a
// bad record is a torn tail: it and everything after it is dropped (the
// journal replay restores what was acknowledged).
//
// When the segment holding the checkpoint is the one the checkpoint was
// taken in (segBase), the scan starts at the checkpoint's byte position
// (segBytes): a cleanly closed log opens without reading its data.
func (l *Log) recoverPartition(p *partition, checkpoint, segBase, segBytes int64) error {
	if len(p.segs) == 0 {
		if checkpoint > 0 {
			return fmt.Errorf("filelog: partition %d: no segment files in %s, but %d records were checkpointed: %w", p.id, p.dir, checkpoint, rlmm.ErrCorrupt)
		}
		if l.opts.ReadOnly {
			return nil
		}
		s, err := createSegment(p.dir, 0)
		if err != nil {
			return err
		}
		s.indexed = true
		p.segs = []*segment{s}
		p.dirDirty = true
	}
	start := max(findSegment(p.segs, checkpoint), 0)
	next := p.segs[start].base
	for i := start; i < len(p.segs); i++ {
		s := p.segs[i]
		if s.base != next {
			// A segment rolled to after the previous one lost its unsynced
			// tail, or a gap.
			if next < checkpoint {
				return fmt.Errorf("filelog: partition %d: segment %s starts at offset %d but the previous segment ends at %d: %w",
					p.id, s.path, s.base, next, rlmm.ErrCorrupt)
			}
			return l.dropSegments(p, i, next, "segment does not follow the previous one")
		}
		from := int64(0) // byte position to scan from
		s.idxBase, s.prefixBytes = s.base, 0
		if i == start && s.base == segBase && checkpoint > s.base {
			from = segBytes
			s.idxBase, s.prefixBytes = checkpoint, segBytes
		}
		fi, err := s.f.Stat()
		if err != nil {
			return fmt.Errorf("filelog: %w", err)
		}
		if fi.Size() < from {
			return fmt.Errorf("filelog: %s: partition %d: the file ends at byte %d, before byte %d where the checkpoint (offset %d) is: %w",
				s.path, p.id, fi.Size(), from, checkpoint, rlmm.ErrCorrupt)
		}
		data := make([]byte, fi.Size()-from)
		if _, err := s.f.ReadAt(data, from); err != nil {
			return fmt.Errorf("filelog: reading %s: %w", s.path, err)
		}
		s.pos = s.pos[:0]
		count, end, serr := scanSegment(data, s.idxBase, func(_, pos int64, _ []byte) { s.pos = append(s.pos, uint32(from+pos)) })
		end += from
		s.size, s.indexed = end, true
		next = s.idxBase + count
		if serr != nil {
			serr = shiftFrameError(serr, from)
			fe, _ := isFrameError(serr)
			if next < checkpoint {
				return fmt.Errorf("filelog: %s: partition %d offset %d (checkpointed, so not a torn write): %w", s.path, p.id, next, serr)
			}
			l.reportTorn(TornTail{File: s.path, Partition: p.id, Offset: next, Pos: end, Bytes: fi.Size() - end, Reason: fe.Reason})
			if !l.opts.ReadOnly {
				if err := s.f.Truncate(end); err != nil {
					return fmt.Errorf("filelog: truncating torn tail of %s at byte %d: %w", s.path, end, err)
				}
				p.dirty = append(p.dirty, s)
				s.dirty = true
			}
			if i+1 < len(p.segs) {
				return l.dropSegments(p, i+1, next, "follows a torn tail")
			}
			break
		}
	}
	if next < checkpoint {
		last := p.segs[len(p.segs)-1]
		return fmt.Errorf("filelog: partition %d: segments end at offset %d (%s, byte %d) but %d records were checkpointed: %w",
			p.id, next, last.path, last.size, checkpoint, rlmm.ErrCorrupt)
	}
	p.hwm, p.next = next, next
	p.active = p.segs[len(p.segs)-1]
	p.activeSize = p.active.size
	return nil
}

// dropSegments removes p's segments from index i on: the remains of a crash
// after offset next.
func (l *Log) dropSegments(p *partition, i int, next int64, reason string) error {
	for _, s := range p.segs[i:] {
		size := int64(0)
		if fi, err := s.f.Stat(); err == nil {
			size = fi.Size()
		}
		l.reportTorn(TornTail{File: s.path, Partition: p.id, Offset: next, Pos: 0, Bytes: size, Reason: reason})
		if !l.opts.ReadOnly {
			s.f.Close()
			s.f = nil
			if err := os.Remove(s.path); err != nil {
				return fmt.Errorf("filelog: removing %s: %w", s.path, err)
			}
			p.dirDirty = true
		}
	}
	if l.opts.ReadOnly {
		// Keep the handles for Close, but out of the read path.
		for _, s := range p.segs[i:] {
			s.f.Close()
			s.f = nil
		}
	}
	p.segs = p.segs[:i]
	last := p.segs[len(p.segs)-1]
	p.hwm, p.next = next, next
	p.active, p.activeSize = last, last.size
	return nil
}

// replayJournal appends to the segments (or, read-only, to an in-memory
// overlay) the journal records beyond each partition's end.
func (l *Log) replayJournal(recs []journalRecord) error {
	byPart := make(map[int32][][]byte)
	firsts := make(map[int32]int64)
	for _, r := range recs {
		p := l.parts[r.partition]
		switch {
		case r.offset < p.next:
			continue // already in the segments
		case r.offset > p.next:
			return fmt.Errorf("filelog: journal %s byte %d holds partition %d offset %d, but the partition ends at offset %d: %w",
				l.journalPath, r.pos, r.partition, r.offset, p.next, rlmm.ErrCorrupt)
		}
		if _, ok := byPart[r.partition]; !ok {
			firsts[r.partition] = r.offset
		}
		byPart[r.partition] = append(byPart[r.partition], r.value)
		p.next++
	}
	for id, values := range byPart {
		p := l.parts[id]
		l.logger.Info("filelog: replayed records from the journal", "partition", id, "from", firsts[id], "records", len(values))
		if l.opts.ReadOnly {
			p.overlay, p.overlayBase = values, firsts[id]
			p.hwm = p.next
			continue
		}
		stages, err := l.appendToPartition(p, firsts[id], values)
		if err != nil {
			return err
		}
		for _, st := range stages {
			st.seg.pos = append(st.seg.pos, st.pos...)
			st.seg.size = st.size
		}
		p.hwm = p.next
	}
	return nil
}
