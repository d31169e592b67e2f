package memory

// extraTable maps a partition's slots to their segExtra: what a slot
// flagged flagEpochs or flagCustom keeps besides its 64 bytes. It replaced
// a map[int32]segExtra. When every segment carries custom metadata (as an
// RSM that names its objects there makes every segment do), a snapshot's
// restore spent about a third of its CPU in that map (sizing it, then a
// look-up and an insert per segment), and the map took about 40 bytes per
// entry; this table takes 28 (a 4-byte position per slot, the 24-byte
// entry) and a look-up is two array reads.
//
// The entries sit back to back in list, in no order; rows, one per chunk of
// slots, give each slot the position of its entry. A row is allocated with
// the first extra of its chunk, so a partition without extras pays nothing
// and one with a few pays 4 bytes per slot of the chunks that hold them. A
// removed entry is replaced by the last one (whose slot says which row
// entry to move), so list stays dense without a free list.
type extraTable struct {
	// rows[c][o] is 1 + the position in list of the extra of slot
	// c<<chunkBits | o; 0: none. A nil row has none.
	rows [][]int32
	list []segExtra
}

// reserve sizes an empty table for n extras among slots slots (a bulk
// build). When most slots will have one (as when an RSM gives every
// segment custom metadata), every row is made at once, windows of one
// array: one object instead of one per chunk.
func (t *extraTable) reserve(n, slots int) {
	if n <= 0 {
		return
	}
	t.list = make([]segExtra, 0, n)
	prefault(t.list)
	chunks := (slots + chunkSize - 1) / chunkSize
	t.rows = make([][]int32, 0, chunks)
	if 2*n < slots {
		return
	}
	all := makeWritten[int32](chunks * chunkSize)
	for c := range chunks {
		t.rows = append(t.rows, all[c*chunkSize:(c+1)*chunkSize:(c+1)*chunkSize])
	}
}

// len returns the number of slots with extras.
func (t *extraTable) len() int { return len(t.list) }

// at returns slot i's extra, nil when it has none. The pointer is valid
// until the next put or del.
func (t *extraTable) at(i int32) *segExtra {
	c := int(i >> chunkBits)
	if c >= len(t.rows) {
		return nil
	}
	row := t.rows[c]
	if row == nil {
		return nil
	}
	k := row[i&chunkMask]
	if k == 0 {
		return nil
	}
	return &t.list[k-1]
}

// get returns a copy of slot i's extra and whether it has one.
func (t *extraTable) get(i int32) (segExtra, bool) {
	if x := t.at(i); x != nil {
		return *x, true
	}
	return segExtra{}, false
}

// put returns slot i's extra, adding an empty one when it has none. The
// pointer is valid until the next put or del.
func (t *extraTable) put(i int32) *segExtra {
	c := int(i >> chunkBits)
	for len(t.rows) <= c {
		t.rows = append(t.rows, nil)
	}
	row := t.rows[c]
	if row == nil {
		// at and put read a row's entry before writing it (makeWritten).
		row = makeWritten[int32](chunkSize)
		t.rows[c] = row
	}
	o := i & chunkMask
	if k := row[o]; k != 0 {
		return &t.list[k-1]
	}
	t.list = append(t.list, segExtra{slot: i})
	row[o] = int32(len(t.list))
	return &t.list[len(t.list)-1]
}

// del removes slot i's extra, if it has one.
func (t *extraTable) del(i int32) {
	c := int(i >> chunkBits)
	if c >= len(t.rows) || t.rows[c] == nil {
		return
	}
	row := t.rows[c]
	k := row[i&chunkMask]
	if k == 0 {
		return
	}
	row[i&chunkMask] = 0
	last := len(t.list) - 1
	if int(k-1) != last {
		moved := t.list[last]
		t.list[k-1] = moved
		t.rows[moved.slot>>chunkBits][moved.slot&chunkMask] = k
	}
	t.list = t.list[:last]
}
