package server

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// TestHostedPersists: every change is in the file when save returns, and
// a set opened from it is the set recorded.
func TestHostedPersists(t *testing.T) {
	path := filepath.Join(t.TempDir(), HostedFileName)
	h, err := OpenHosted(path)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := newTP(), newTP(), newTP()
	steps := []struct {
		name        string
		add, remove []rlmm.TopicIDPartition
		want        []rlmm.TopicIDPartition
	}{
		{"leaders", []rlmm.TopicIDPartition{a, b}, nil, []rlmm.TopicIDPartition{a, b}},
		{"a follower", []rlmm.TopicIDPartition{c}, nil, []rlmm.TopicIDPartition{a, b, c}},
		{"a stop", nil, []rlmm.TopicIDPartition{b}, []rlmm.TopicIDPartition{a, c}},
		{"no change", []rlmm.TopicIDPartition{a}, nil, []rlmm.TopicIDPartition{a, c}},
		{"all stopped", nil, []rlmm.TopicIDPartition{a, c}, nil},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			h.update(st.add, st.remove)
			if err := h.save(); err != nil {
				t.Fatal(err)
			}
			again, err := OpenHosted(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, got := range [][]rlmm.TopicIDPartition{h.List(), again.List()} {
				if !sameTPs(got, st.want) {
					t.Fatalf("hosted %v, want %v", got, st.want)
				}
			}
		})
	}
}

func sameTPs(a, b []rlmm.TopicIDPartition) bool {
	key := func(tp rlmm.TopicIDPartition) string { return tp.String() }
	ka, kb := make([]string, len(a)), make([]string, len(b))
	for i := range a {
		ka[i] = key(a[i])
	}
	for i := range b {
		kb[i] = key(b[i])
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(ka, kb)
}

// TestHostedCorrupt: a file that does not decode, or names an invalid
// partition, is ErrCorrupt naming the file.
func TestHostedCorrupt(t *testing.T) {
	tests := []struct {
		name string
		body []byte
	}{
		{"not protobuf", []byte{0xff, 0xff}},
		{"invalid partition", []byte{0x0a, 0x02, 0x18, 0x01}}, // a leader without topic id or name
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), HostedFileName)
			if err := os.WriteFile(path, tc.body, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := OpenHosted(path)
			if !errors.Is(err, rlmm.ErrCorrupt) {
				t.Fatalf("OpenHosted error %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestRestartedServerKnowsTheHostedSet: a change acknowledged before the
// manager is up is recorded; a new server on the same file hands its
// manager the set as it comes up, so a read of the partition is answered
// without any change sent to it.
func TestRestartedServerKnowsTheHostedSet(t *testing.T) {
	dir := shortDir(t)
	path := filepath.Join(dir, HostedFileName)
	h, err := OpenHosted(path)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, fixtureOpts{noManager: true, hosted: h})
	tp := newTP()
	if _, err := f.client.OnPartitionLeadershipChanges(testCtx(t), &rlmmpb.LeadershipChangesRequest{
		Leaders: []*rlmmpb.TopicIdPartition{tpToProto(tp)}}); err != nil {
		t.Fatalf("a leadership change before the manager is up: %v", err)
	}
	again, err := OpenHosted(path)
	if err != nil {
		t.Fatal(err)
	}
	g := newFixture(t, fixtureOpts{hosted: again})
	if _, err := g.client.ListSegments(testCtx(t), &rlmmpb.ListSegmentsRequest{TopicIdPartition: tpToProto(tp)}); err != nil {
		// NOT_READY while it catches up is fine; NOT_ASSIGNED is what must not come.
		if info := errorInfo(t, err); info.GetKind() == rlmmpb.ErrorKind_NOT_ASSIGNED {
			t.Fatalf("the restarted server does not host the recorded partition: %v", err)
		}
	}
	g.waitReady(t, tp)
}

// TestUnwritableHostedSetServesButDoesNotAcknowledge: while the hosted set
// cannot be written, a leadership change is served (a read of its
// partition is never NOT_ASSIGNED) but refused as retriable (NOT_READY), so
// the plugin keeps it and sends it again; the failed write is counted, and
// the first change sent after the disk is back is acknowledged and in the
// file.
func TestUnwritableHostedSetServesButDoesNotAcknowledge(t *testing.T) {
	dir := shortDir(t)
	// A file where the hosted set's directory should be: every write fails
	// (as root too, whom a read-only mode would not stop).
	blocked := filepath.Join(dir, "snapshots")
	path := filepath.Join(blocked, HostedFileName)
	h, err := OpenHosted(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, fixtureOpts{hosted: h})
	tp := newTP()
	change := &rlmmpb.LeadershipChangesRequest{Leaders: []*rlmmpb.TopicIdPartition{tpToProto(tp)}}
	_, err = f.client.OnPartitionLeadershipChanges(testCtx(t), change)
	if err == nil {
		t.Fatal("a change whose hosted set cannot be written was acknowledged")
	}
	if info := errorInfo(t, err); info.GetKind() != rlmmpb.ErrorKind_NOT_READY {
		t.Fatalf("unwritable hosted set: %v (kind %v), want NOT_READY, which the plugin sends again", err, info.GetKind())
	}
	if h.Failures() == 0 {
		t.Fatal("the failed write is not counted")
	}
	f.waitReady(t, tp) // served all the same
	if _, err := f.client.ListSegments(testCtx(t), &rlmmpb.ListSegmentsRequest{TopicIdPartition: tpToProto(tp)}); err != nil {
		t.Fatalf("a read of the partition while its change is not acknowledged: %v", err)
	}

	if err := os.Remove(blocked); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.OnPartitionLeadershipChanges(testCtx(t), change); err != nil {
		t.Fatalf("the change sent again once the disk is back: %v", err)
	}
	again, err := OpenHosted(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.List(); !sameTPs(got, []rlmm.TopicIDPartition{tp}) {
		t.Fatalf("hosted set on disk %v, want [%v]", got, tp)
	}
}

// TestBrokerStartChangeReplacesTheHostedSet: a server restored a set of two
// partitions from its predecessor's file; one moved away while the broker
// was down. The broker's first change since it started (broker_start) names
// the one it still hosts: the other is dropped from the set, its file and
// the manager. A change without the mark only adds.
func TestBrokerStartChangeReplacesTheHostedSet(t *testing.T) {
	tests := []struct {
		name        string
		brokerStart bool
		wantKept    bool // the moved partition is still hosted
	}{
		{"the broker's first change since it started", true, false},
		{"a later change", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(shortDir(t), HostedFileName)
			before, err := OpenHosted(path)
			if err != nil {
				t.Fatal(err)
			}
			stays, moved := newTP(), newTP()
			before.update([]rlmm.TopicIDPartition{stays, moved}, nil)
			if err := before.save(); err != nil {
				t.Fatal(err)
			}
			restored, err := OpenHosted(path)
			if err != nil {
				t.Fatal(err)
			}
			f := newFixture(t, fixtureOpts{hosted: restored})
			f.waitReady(t, stays, moved) // the predecessor's set, before any change
			if _, err := f.client.OnPartitionLeadershipChanges(testCtx(t), &rlmmpb.LeadershipChangesRequest{
				Followers: []*rlmmpb.TopicIdPartition{tpToProto(stays)}, BrokerStart: tt.brokerStart}); err != nil {
				t.Fatalf("leadership change: %v", err)
			}
			want := []rlmm.TopicIDPartition{stays}
			if tt.wantKept {
				want = append(want, moved)
			}
			if got := restored.List(); !sameTPs(got, want) {
				t.Errorf("hosted set %v, want %v", got, want)
			}
			onDisk, err := OpenHosted(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := onDisk.List(); !sameTPs(got, want) {
				t.Errorf("hosted set on disk %v, want %v", got, want)
			}
			if got := f.srv.Manager().IsReady(moved); got != tt.wantKept {
				t.Errorf("the manager hosts the moved partition: %v, want %v", got, tt.wantKept)
			}
			if !f.srv.Manager().IsReady(stays) {
				t.Error("the partition the change names is no longer hosted")
			}
		})
	}
}
