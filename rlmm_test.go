package rlmm

import (
	"errors"
	"strings"
	"testing"
)

func TestUuidText(t *testing.T) {
	// Kafka's examples (kafka-rlmm.md §3.1).
	cases := []struct {
		msb, lsb int64
		text     string
	}{
		{0, 0, "AAAAAAAAAAAAAAAAAAAAAA"},
		{0, 1, "AAAAAAAAAAAAAAAAAAAAAQ"},
		{1, 2, "AAAAAAAAAAEAAAAAAAAAAg"},
		{3, 4, "AAAAAAAAAAMAAAAAAAAABA"},
		{-1, -1, "_____________________w"},
	}
	for _, c := range cases {
		u := UuidFromBits(c.msb, c.lsb)
		if got := u.String(); got != c.text {
			t.Errorf("Uuid(%d, %d).String() = %q, want %q", c.msb, c.lsb, got, c.text)
		}
		if u.MostSignificantBits() != c.msb || u.LeastSignificantBits() != c.lsb {
			t.Errorf("Uuid(%d, %d) halves = %d, %d", c.msb, c.lsb, u.MostSignificantBits(), u.LeastSignificantBits())
		}
		back, err := ParseUuid(c.text)
		if err != nil || back != u {
			t.Errorf("ParseUuid(%q) = %v, %v; want %v", c.text, back, err, u)
		}
		var tu Uuid
		txt, _ := u.MarshalText()
		if err := tu.UnmarshalText(txt); err != nil || tu != u {
			t.Errorf("text round trip of %v: %v, %v", u, tu, err)
		}
	}
	if ZeroUuid != UuidFromBits(0, 0) || OneUuid != UuidFromBits(0, 1) {
		t.Errorf("reserved values: zero %v, one %v", ZeroUuid, OneUuid)
	}
}

func TestParseUuidRejects(t *testing.T) {
	for _, s := range []string{
		"",
		"AAAAAAAAAAAAAAAAAAAAA",   // 21 characters
		"AAAAAAAAAAAAAAAAAAAAAAA", // 23 characters
		"AAAAAAAAAAAAAAAAAAAAA=",  // padding
		"AAAAAAAAAAAAAAAAAAAA+A",  // standard, not URL-safe, alphabet
		"AAAAAAAAAAAAAAAAAAAAAB",  // non-zero trailing bits: not canonical
		"00000000-0000-0001-0000-000000000002",
	} {
		var u Uuid
		_, err := ParseUuid(s)
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ParseUuid(%q) err = %v, want ErrInvalidArgument", s, err)
		}
		if err := u.UnmarshalText([]byte(s)); err == nil {
			t.Errorf("UnmarshalText(%q) accepted", s)
		}
	}
}

func TestRandomUuid(t *testing.T) {
	seen := map[Uuid]bool{}
	for i := 0; i < 2000; i++ {
		u := RandomUuid()
		s := u.String()
		if u == ZeroUuid || u == OneUuid || strings.HasPrefix(s, "-") || len(s) != 22 {
			t.Fatalf("RandomUuid returned a reserved or unprintable value %q", s)
		}
		if u[6]>>4 != 4 || u[8]>>6 != 2 {
			t.Fatalf("RandomUuid %x is not version 4, IETF variant", u)
		}
		if seen[u] {
			t.Fatalf("RandomUuid repeated %s", s)
		}
		seen[u] = true
		if back, err := ParseUuid(s); err != nil || back != u {
			t.Fatalf("ParseUuid(%q) = %v, %v", s, back, err)
		}
	}
}

func TestCanTransition(t *testing.T) {
	// Kafka's table (kafka-rlmm.md §4.1), every pair, including undefined states.
	const S, F, DS, DF = CopySegmentStarted, CopySegmentFinished, DeleteSegmentStarted, DeleteSegmentFinished
	allowed := map[[2]SegmentState]bool{
		{S, S}: true, {S, F}: true, {S, DS}: true,
		{F, F}: true, {F, DS}: true,
		{DS, DS}: true, {DS, DF}: true,
		{DF, DF}: true,
	}
	for from := SegmentState(-1); from <= 4; from++ {
		for to := SegmentState(-1); to <= 4; to++ {
			if got := CanTransition(from, to); got != allowed[[2]SegmentState{from, to}] {
				t.Errorf("CanTransition(%s, %s) = %t", from, to, got)
			}
		}
		if got := CanCreate(from); got != (from == S) {
			t.Errorf("CanCreate(%s) = %t", from, got)
		}
	}
}

func TestCanTransitionPartitionDelete(t *testing.T) {
	const M, S, F = DeletePartitionMarked, DeletePartitionStarted, DeletePartitionFinished
	allowed := map[[2]PartitionDeleteState]bool{{M, M}: true, {M, S}: true, {S, S}: true, {S, F}: true, {F, F}: true}
	for from := PartitionDeleteState(-1); from <= 3; from++ {
		for to := PartitionDeleteState(-1); to <= 3; to++ {
			if got := CanTransitionPartitionDelete(from, to); got != allowed[[2]PartitionDeleteState{from, to}] {
				t.Errorf("CanTransitionPartitionDelete(%s, %s) = %t", from, to, got)
			}
		}
	}
}

func TestStateNames(t *testing.T) {
	segNames := []string{"COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED", "DELETE_SEGMENT_STARTED", "DELETE_SEGMENT_FINISHED"}
	for i, n := range segNames {
		if got := SegmentState(i).String(); got != n {
			t.Errorf("SegmentState(%d) = %q, want %q", i, got, n)
		}
		if s, err := ParseSegmentState(n); err != nil || s != SegmentState(i) {
			t.Errorf("ParseSegmentState(%q) = %v, %v", n, s, err)
		}
	}
	pdNames := []string{"DELETE_PARTITION_MARKED", "DELETE_PARTITION_STARTED", "DELETE_PARTITION_FINISHED"}
	for i, n := range pdNames {
		if got := PartitionDeleteState(i).String(); got != n {
			t.Errorf("PartitionDeleteState(%d) = %q, want %q", i, got, n)
		}
		if s, err := ParsePartitionDeleteState(n); err != nil || s != PartitionDeleteState(i) {
			t.Errorf("ParsePartitionDeleteState(%q) = %v, %v", n, s, err)
		}
	}
	if got := SegmentState(9).String(); got != "SegmentState(9)" {
		t.Errorf("undefined segment state prints %q", got)
	}
	if got := PartitionDeleteState(-2).String(); got != "PartitionDeleteState(-2)" {
		t.Errorf("undefined partition delete state prints %q", got)
	}
	for _, bad := range []string{"", "copy_segment_started", "DELETE_PARTITION_MARKED"} {
		if _, err := ParseSegmentState(bad); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ParseSegmentState(%q) err = %v", bad, err)
		}
	}
	if _, err := ParsePartitionDeleteState("COPY_SEGMENT_STARTED"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("ParsePartitionDeleteState accepted a segment state: %v", err)
	}
}

// exampleSegment is the segment of kafka-rlmm.md §6.6.
func exampleSegment() SegmentMetadata {
	tp := TopicIDPartition{TopicID: UuidFromBits(1, 2), Topic: "foo", Partition: 3}
	return SegmentMetadata{
		ID: SegmentID{TopicIDPartition: tp, ID: UuidFromBits(3, 4)}, StartOffset: 0, EndOffset: 99,
		MaxTimestampMs: 1000, BrokerID: 1, EventTimestampMs: 2000, LeaderEpochs: []EpochStart{{0, 0}},
		SizeInBytes: 1024, State: CopySegmentStarted,
	}
}

func TestSegmentMetadataValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*SegmentMetadata)
		valid  bool
	}{
		{"example", func(*SegmentMetadata) {}, true},
		{"one-offset segment", func(m *SegmentMetadata) { m.EndOffset = 0 }, true},
		{"negative start", func(m *SegmentMetadata) { m.StartOffset = -1 }, false},
		{"end below start", func(m *SegmentMetadata) { m.StartOffset, m.EndOffset = 10, 9 }, false},
		{"no epochs", func(m *SegmentMetadata) { m.LeaderEpochs = nil }, false},
		{"empty epochs", func(m *SegmentMetadata) { m.LeaderEpochs = []EpochStart{} }, false},
		{"epochs descending", func(m *SegmentMetadata) { m.LeaderEpochs = []EpochStart{{2, 0}, {1, 50}} }, false},
		{"epoch repeated", func(m *SegmentMetadata) { m.LeaderEpochs = []EpochStart{{1, 0}, {1, 50}} }, false},
		{"undefined state", func(m *SegmentMetadata) { m.State = 4 }, false},
		// What Kafka's constructor does not check is accepted.
		{"epoch start outside the segment", func(m *SegmentMetadata) { m.LeaderEpochs = []EpochStart{{0, 500}} }, true},
		{"epoch starts decreasing", func(m *SegmentMetadata) { m.LeaderEpochs = []EpochStart{{0, 50}, {1, 10}} }, true},
		{"negative size", func(m *SegmentMetadata) { m.SizeInBytes = -1 }, true},
		{"negative epoch", func(m *SegmentMetadata) { m.LeaderEpochs = []EpochStart{{-1, 0}} }, true},
		{"any state", func(m *SegmentMetadata) { m.State = DeleteSegmentFinished }, true},
	}
	for _, c := range cases {
		m := exampleSegment()
		c.mutate(&m)
		err := m.Validate()
		if (err == nil) != c.valid || (err != nil && !errors.Is(err, ErrInvalidArgument)) {
			t.Errorf("%s: Validate() = %v, want valid %t", c.name, err, c.valid)
		}
	}
}

func TestSegmentMetadataSanity(t *testing.T) {
	cases := []struct {
		name   string
		epochs []EpochStart
		sane   bool
	}{
		{"one epoch at start", []EpochStart{{0, 0}}, true},
		{"epochs inside, increasing", []EpochStart{{0, 0}, {1, 50}, {4, 99}}, true},
		{"first epoch after start", []EpochStart{{0, 10}}, false},
		{"epoch past end", []EpochStart{{0, 0}, {1, 100}}, false},
		{"epoch before start", []EpochStart{{0, -1}}, false},
		{"starts not increasing", []EpochStart{{0, 0}, {1, 50}, {2, 50}}, false},
	}
	for _, c := range cases {
		m := exampleSegment()
		m.LeaderEpochs = c.epochs
		if err := m.Sanity(); (err == nil) != c.sane {
			t.Errorf("%s: Sanity() = %v, want sane %t", c.name, err, c.sane)
		}
	}
}

func TestEpochRange(t *testing.T) {
	m := exampleSegment()
	m.EndOffset = 100
	m.LeaderEpochs = []EpochStart{{0, 0}, {1, 20}, {2, 80}}
	cases := []struct {
		epoch      int32
		start, end int64
		ok         bool
	}{{0, 0, 19, true}, {1, 20, 79, true}, {2, 80, 100, true}, {3, 0, 0, false}, {-1, 0, 0, false}}
	for _, c := range cases {
		s, e, ok := m.EpochRange(c.epoch)
		if ok != c.ok || (ok && (s != c.start || e != c.end)) {
			t.Errorf("EpochRange(%d) = %d, %d, %t; want %d, %d, %t", c.epoch, s, e, ok, c.start, c.end, c.ok)
		}
	}
}

func TestWithUpdate(t *testing.T) {
	m := exampleSegment()
	m.CustomMetadata = []byte{1, 2}
	m.TxnIndexEmpty = true
	orig := m.Clone()
	for _, custom := range [][]byte{nil, {}, {9}} {
		u := SegmentUpdate{ID: m.ID, EventTimestampMs: 3000, CustomMetadata: custom, State: CopySegmentFinished, BrokerID: 2}
		got, err := m.WithUpdate(u)
		if err != nil {
			t.Fatal(err)
		}
		want := m.Clone()
		want.BrokerID, want.EventTimestampMs, want.State = 2, 3000, CopySegmentFinished
		want.CustomMetadata = custom
		if !got.Equal(&want) {
			t.Errorf("WithUpdate(custom %#v) = %v, want %v", custom, got, want)
		}
		if !m.Equal(&orig) {
			t.Errorf("WithUpdate changed the original: %v", m)
		}
		if len(custom) > 0 {
			custom[0] = 7
			if got.CustomMetadata[0] == 7 {
				t.Errorf("WithUpdate kept the update's slice")
			}
		}
	}
	other := m.ID
	other.ID = UuidFromBits(9, 9)
	if _, err := m.WithUpdate(SegmentUpdate{ID: other, State: CopySegmentFinished}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("WithUpdate of another segment: err = %v", err)
	}
}

func TestEqualAndClone(t *testing.T) {
	a := exampleSegment()
	a.LeaderEpochs = []EpochStart{{0, 0}, {1, 50}}
	b := a.Clone()
	if !a.Equal(&b) {
		t.Fatalf("a clone differs")
	}
	b.LeaderEpochs[1].StartOffset = 51
	if a.LeaderEpochs[1].StartOffset != 50 || a.Equal(&b) {
		t.Errorf("Clone shares epochs or Equal ignores them")
	}
	c := a.Clone()
	c.CustomMetadata = []byte{}
	if a.Equal(&c) {
		t.Errorf("Equal treats absent and empty custom metadata alike")
	}
	d := a.Clone()
	d.TxnIndexEmpty = true
	if a.Equal(&d) {
		t.Errorf("Equal ignores TxnIndexEmpty")
	}
	e := c.Clone()
	if e.CustomMetadata == nil {
		t.Errorf("Clone turned empty custom metadata into absent")
	}
}

func TestStringForms(t *testing.T) {
	tp := TopicIDPartition{TopicID: UuidFromBits(1, 2), Topic: "foo", Partition: 3}
	seg := SegmentMetadata{
		ID:          SegmentID{TopicIDPartition: TopicIDPartition{TopicID: UuidFromBits(1, 2), Topic: "foo", Partition: 0}, ID: UuidFromBits(3, 4)},
		StartOffset: 0, EndOffset: 100, BrokerID: 1, MaxTimestampMs: -1, EventTimestampMs: 123,
		LeaderEpochs: []EpochStart{{0, 0}, {1, 20}, {2, 80}}, SizeInBytes: 1024,
		CustomMetadata: make([]byte, 10), State: CopySegmentStarted,
	}
	cases := []struct {
		name string
		got  string
		want string
	}{
		{"TopicIDPartition", tp.String(), "AAAAAAAAAAEAAAAAAAAAAg:foo-3"},
		{"SegmentID", SegmentID{TopicIDPartition: tp, ID: UuidFromBits(3, 4)}.String(),
			"RemoteLogSegmentId{topicIdPartition=AAAAAAAAAAEAAAAAAAAAAg:foo-3, id=AAAAAAAAAAMAAAAAAAAABA}"},
		// §3.4 and §6.10, with 4.x's txnIdxEmpty.
		{"SegmentMetadata", seg.String(),
			"RemoteLogSegmentMetadata{remoteLogSegmentId=RemoteLogSegmentId{topicIdPartition=AAAAAAAAAAEAAAAAAAAAAg:foo-0, id=AAAAAAAAAAMAAAAAAAAABA}, " +
				"startOffset=0, endOffset=100, brokerId=1, maxTimestampMs=-1, eventTimestampMs=123, segmentLeaderEpochs={0=0, 1=20, 2=80}, " +
				"segmentSizeInBytes=1024, customMetadata=Optional[CustomMetadata{10 bytes}], state=COPY_SEGMENT_STARTED, txnIdxEmpty=false}"},
		{"SegmentUpdate", SegmentUpdate{ID: SegmentID{TopicIDPartition: tp, ID: UuidFromBits(3, 4)}, EventTimestampMs: 3000, State: CopySegmentFinished, BrokerID: 2}.String(),
			"RemoteLogSegmentMetadataUpdate{remoteLogSegmentId=RemoteLogSegmentId{topicIdPartition=AAAAAAAAAAEAAAAAAAAAAg:foo-3, id=AAAAAAAAAAMAAAAAAAAABA}, " +
				"customMetadata=Optional.empty, state=COPY_SEGMENT_FINISHED, eventTimestampMs=3000, brokerId=2}"},
		{"PartitionDelete", PartitionDelete{TopicIDPartition: tp, State: DeletePartitionMarked, EventTimestampMs: 4000, BrokerID: 5}.String(),
			"RemotePartitionDeleteMetadata{topicPartition=AAAAAAAAAAEAAAAAAAAAAg:foo-3, state=DELETE_PARTITION_MARKED, eventTimestampMs=4000, brokerId=5}"},
		{"empty custom metadata", FormatCustomMetadata([]byte{}), "Optional[CustomMetadata{0 bytes}]"},
		{"absent custom metadata", FormatCustomMetadata(nil), "Optional.empty"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, c.got, c.want)
		}
	}
}

func TestUpdateAndDeleteValidate(t *testing.T) {
	for st := SegmentState(-1); st <= 4; st++ {
		u := SegmentUpdate{State: st}
		valid := st == CopySegmentFinished || st == DeleteSegmentStarted || st == DeleteSegmentFinished
		if err := u.Validate(); (err == nil) != valid || (err != nil && !errors.Is(err, ErrInvalidArgument)) {
			t.Errorf("SegmentUpdate{State: %s}.Validate() = %v", st, err)
		}
	}
	for st := PartitionDeleteState(-1); st <= 3; st++ {
		d := PartitionDelete{State: st}
		if err := d.Validate(); (err == nil) != st.Valid() || (err != nil && !errors.Is(err, ErrInvalidArgument)) {
			t.Errorf("PartitionDelete{State: %s}.Validate() = %v", st, err)
		}
	}
}

func TestErrors(t *testing.T) {
	id := SegmentID{TopicIDPartition: TopicIDPartition{TopicID: UuidFromBits(1, 2), Topic: "foo", Partition: 3}, ID: UuidFromBits(3, 4)}
	te := &TransitionError{Segment: id, From: CopySegmentFinished, Exists: true, To: CopySegmentStarted}
	if !errors.Is(te, ErrInvalidTransition) {
		t.Errorf("TransitionError does not match ErrInvalidTransition")
	}
	for _, want := range []string{"COPY_SEGMENT_FINISHED", "COPY_SEGMENT_STARTED", id.String()} {
		if !strings.Contains(te.Error(), want) {
			t.Errorf("%q does not name %q", te.Error(), want)
		}
	}
	none := &TransitionError{Segment: id, To: CopySegmentFinished}
	if !strings.Contains(none.Error(), "(none)") {
		t.Errorf("a missing segment's transition error: %q", none.Error())
	}
	for _, c := range []struct {
		err       error
		retriable bool
	}{{ErrNotReady, true}, {ErrTimeout, true}, {ErrNotLeader, true}, {ErrInvalidArgument, false}, {te, false}, {ErrClosed, false}} {
		if got := IsRetriable(c.err); got != c.retriable {
			t.Errorf("IsRetriable(%v) = %t", c.err, got)
		}
	}
}
