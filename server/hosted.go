package server

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/internal/atomicfile"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// HostedFileName is the hosted set's file in the snapshot directory.
const HostedFileName = "hosted.pb"

// Hosted is the broker's assignment as this server recorded it: every user
// partition a leadership change named and no stop removed since. The
// server is its one owner. A change is applied at once (in memory and to
// the manager) and acknowledged once the set is written to the file
// beside the snapshot, so a server restarted after a crash knows the
// broker's partitions before its first call and hands them to its manager
// as it comes up; the plugin keeps no copy to replay, only the changes not
// acknowledged yet, which it sends again in order.
//
// A restored set may name a partition that moved to another broker while
// this server's broker was down: Kafka's broker, at start, names what it
// hosts (one leadership change made from its first metadata image) and
// never stops a partition it no longer has. The plugin marks that change
// (broker_start), and the server replaces the set with it, stopping the
// rest in the manager; until it arrives, the restored set serves the
// broker's reads.
//
// When the file cannot be written (a full or read-only disk) the change is
// served all the same but not acknowledged: the plugin sends it again, each
// try writes again, and the first write that succeeds acknowledges it. So a
// full disk delays acknowledgements, never a read, and a crash meanwhile
// loses nothing: what the file lacks is still in the plugin's outbox.
//
// The file is a LeadershipChangesRequest whose leaders are the set: the one
// change that restores it. It is replaced whole (internal/atomicfile), so a
// crash leaves the old set or the new one.
type Hosted struct {
	path string // "" keeps the set in memory only

	mu       sync.Mutex
	set      map[rlmm.TopicIDPartition]struct{}
	unsaved  bool   // set differs from the file
	failures uint64 // writes of the file that failed
}

// OpenHosted reads the hosted set at path (none yet: empty). "" is a set
// kept in memory only. A file that does not decode, or names an invalid
// partition, is an error wrapping rlmm.ErrCorrupt naming the file.
func OpenHosted(path string) (*Hosted, error) {
	h := &Hosted{path: path, set: map[rlmm.TopicIDPartition]struct{}{}}
	if path == "" {
		return h, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return nil, fmt.Errorf("server: reading the hosted set: %w", err)
	}
	var req rlmmpb.LeadershipChangesRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		return nil, fmt.Errorf("%w: the hosted set %s (%d bytes) does not decode: %v", rlmm.ErrCorrupt, path, len(b), err)
	}
	tps, err := tpsFromProto(req.GetLeaders(), "leaders")
	if err != nil {
		return nil, fmt.Errorf("%w: the hosted set %s: %v", rlmm.ErrCorrupt, path, err)
	}
	for _, tp := range tps {
		h.set[tp] = struct{}{}
	}
	return h, nil
}

// update adds add to the set and removes remove from it, in memory.
func (h *Hosted) update(add, remove []rlmm.TopicIDPartition) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, tp := range add {
		if _, ok := h.set[tp]; !ok {
			h.set[tp] = struct{}{}
			h.unsaved = true
		}
	}
	for _, tp := range remove {
		if _, ok := h.set[tp]; ok {
			delete(h.set, tp)
			h.unsaved = true
		}
	}
}

// notIn returns the partitions of the set that named does not hold.
func (h *Hosted) notIn(named []rlmm.TopicIDPartition) []rlmm.TopicIDPartition {
	keep := make(map[rlmm.TopicIDPartition]struct{}, len(named))
	for _, tp := range named {
		keep[tp] = struct{}{}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []rlmm.TopicIDPartition
	for tp := range h.set {
		if _, ok := keep[tp]; !ok {
			out = append(out, tp)
		}
	}
	return out
}

// save writes the set to the file when it differs from it; after a failed
// write the set stays unsaved, and the next save writes it again.
func (h *Hosted) save() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.unsaved || h.path == "" {
		return nil
	}
	req := &rlmmpb.LeadershipChangesRequest{Leaders: make([]*rlmmpb.TopicIdPartition, 0, len(h.set))}
	for tp := range h.set {
		req.Leaders = append(req.Leaders, tpToProto(tp))
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	if err != nil {
		return fmt.Errorf("server: encoding the hosted set: %w", err)
	}
	if err := atomicfile.WriteFile(h.path, b, 0o600); err != nil {
		h.failures++
		return fmt.Errorf("server: writing the hosted set %s: %w", h.path, err)
	}
	h.unsaved = false
	return nil
}

// Failures is the number of writes of the file that failed.
func (h *Hosted) Failures() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failures
}

// List returns the partitions of the set.
func (h *Hosted) List() []rlmm.TopicIDPartition {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]rlmm.TopicIDPartition, 0, len(h.set))
	for tp := range h.set {
		out = append(out, tp)
	}
	return out
}
