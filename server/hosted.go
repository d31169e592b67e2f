package server

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/rpc/rlmmpb"
)

// HostedFileName is the hosted set's file in the snapshot directory.
const HostedFileName = "hosted.pb"

// Hosted is the broker's assignment as this server recorded it: every user
// partition a leadership change named and no stop removed since. The
// server is its one owner. Each change is written to the file (beside the
// snapshot) before the change is acknowledged, so a server restarted after
// a crash knows the broker's partitions before its first call and hands
// them to its manager as it comes up; the plugin keeps no copy to replay.
//
// The file is a LeadershipChangesRequest whose leaders are the set: the one
// change that restores it. It is replaced whole (written beside, synced,
// renamed), so a crash leaves the old set or the new one.
type Hosted struct {
	path string // "" keeps the set in memory only

	mu  sync.Mutex
	set map[rlmm.TopicIDPartition]struct{}
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

// record adds add to the set and removes remove from it, and writes the
// set when it changed; the set is unchanged when the write fails.
func (h *Hosted) record(add, remove []rlmm.TopicIDPartition) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	next := make(map[rlmm.TopicIDPartition]struct{}, len(h.set)+len(add))
	for tp := range h.set {
		next[tp] = struct{}{}
	}
	for _, tp := range add {
		next[tp] = struct{}{}
	}
	for _, tp := range remove {
		delete(next, tp)
	}
	if len(next) == len(h.set) && subset(next, h.set) {
		return nil
	}
	if err := h.write(next); err != nil {
		return err
	}
	h.set = next
	return nil
}

func subset(a, b map[rlmm.TopicIDPartition]struct{}) bool {
	for tp := range a {
		if _, ok := b[tp]; !ok {
			return false
		}
	}
	return true
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

// write replaces the file with set: written beside it, synced, renamed
// over it, and the directory synced.
func (h *Hosted) write(set map[rlmm.TopicIDPartition]struct{}) error {
	if h.path == "" {
		return nil
	}
	req := &rlmmpb.LeadershipChangesRequest{Leaders: make([]*rlmmpb.TopicIdPartition, 0, len(set))}
	for tp := range set {
		req.Leaders = append(req.Leaders, tpToProto(tp))
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	if err != nil {
		return fmt.Errorf("server: encoding the hosted set: %w", err)
	}
	tmp := h.path + ".new"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("server: writing the hosted set: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, h.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("server: writing the hosted set %s: %w", h.path, err)
	}
	if d, err := os.Open(filepath.Dir(h.path)); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("server: syncing the directory of the hosted set %s: %w", h.path, err)
		}
	}
	return nil
}
