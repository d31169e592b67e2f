package kafkalog

import (
	"context"
	"sync"
)

// leaderEpochs is the highest leader epoch seen of each partition, from
// ListOffsets answers. It only grows: an answer of a deposed leader (a lower
// epoch) does not take it back.
type leaderEpochs struct {
	mu sync.Mutex
	m  map[int32]int32
}

// note records epoch for partition p if it is higher than the one known.
func (e *leaderEpochs) note(p, epoch int32) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = make(map[int32]int32)
	}
	if old, ok := e.m[p]; !ok || epoch > old {
		e.m[p] = epoch
	}
}

// get is the epoch known of p, -1 when none.
func (e *leaderEpochs) get(p int32) int32 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if epoch, ok := e.m[p]; ok {
		return epoch
	}
	return -1
}

// leaderEpoch is the newest leader epoch of partition p that this log
// knows: the highest of its ListOffsets answers and of what the producer's
// and every subscription's client learnt from metadata (kgo never lets a
// client's epoch go back on a stale metadata answer). -1 when none is known:
// the broker then checks nothing.
//
// It is what makes a high-water mark current: a leader deposed while it was
// frozen or cut off still believes it leads until it reads the controller's
// news, and meanwhile answers its own end offset, older than what its
// successor acknowledged; kgo routes ListOffsets by a metadata answer that
// the deposed leader itself may have given. Told the newer epoch, it refuses
// (UNKNOWN_LEADER_EPOCH, retried) instead.
func (l *Log) leaderEpoch(p int32) int32 {
	epoch := l.epochs.get(p)
	if _, e, err := l.producer.PartitionLeader(l.cfg.Topic, p); err == nil {
		epoch = max(epoch, e)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for s := range l.subs {
		if _, e, err := s.client.PartitionLeader(l.cfg.Topic, p); err == nil {
			epoch = max(epoch, e)
		}
	}
	return epoch
}

// learnEpochs notes the leader epochs of a metadata answer: a broker said
// it leads at an epoch newer than this log knows. Whichever broker answers,
// the known epochs only grow (a deposed leader's answer changes nothing).
func (l *Log) learnEpochs(ctx context.Context) {
	md, err := l.admin.Metadata(ctx, l.cfg.Topic)
	if err != nil {
		return // the next try asks again
	}
	for _, pd := range md.Topics[l.cfg.Topic].Partitions {
		if pd.Err == nil {
			l.epochs.note(pd.Partition, pd.LeaderEpoch)
		}
	}
}
