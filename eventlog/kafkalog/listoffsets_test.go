package kafkalog

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestHighWaterMarksWhileLeadersComeUp answers the first ListOffsets
// requests NOT_LEADER_FOR_PARTITION for one partition, as a restarting
// broker does until it leads it: the log retries that partition alone, at
// its own pace (kgo does not retry ListOffsets underneath), and the marks
// are exact.
func TestHighWaterMarksWhileLeadersComeUp(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	l := openLog(t, testConfig(t, c.ListenAddrs(), 3))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for p := range int32(3) {
		for range int(p) + 1 {
			if _, err := l.Publish(ctx, p, []byte("v")); err != nil {
				t.Fatalf("Publish: %v", err)
			}
		}
	}
	const refusals = 3
	var requests, refused atomic.Int32
	var mu sync.Mutex
	var asked [][]int32
	c.ControlKey(int16(kmsg.ListOffsets), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		requests.Add(1)
		req := kreq.(*kmsg.ListOffsetsRequest)
		var ps []int32
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				ps = append(ps, rp.Partition)
			}
		}
		mu.Lock()
		asked = append(asked, ps)
		mu.Unlock()
		if refused.Load() >= refusals {
			return nil, nil, false
		}
		refused.Add(1)
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition = rp.Partition
				if rp.Partition == 1 {
					sp.ErrorCode = kerr.NotLeaderForPartition.Code
				} else {
					sp.Offset = int64(rp.Partition) + 1
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	hw, err := l.HighWaterMarks(ctx, []int32{0, 1, 2})
	if err != nil {
		t.Fatalf("HighWaterMarks: %v", err)
	}
	for i, want := range []int64{1, 2, 3} {
		if hw[i] != want {
			t.Fatalf("HighWaterMarks = %v, want [1 2 3]", hw)
		}
	}
	if got := requests.Load(); got != refusals+1 {
		t.Fatalf("%d ListOffsets requests, want %d (the refused ones and one that answered)", got, refusals+1)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked[0]) != 3 {
		t.Fatalf("first request asked for partitions %v, want all three", asked[0])
	}
	for _, ps := range asked[1:] {
		if len(ps) != 1 || ps[0] != 1 {
			t.Fatalf("a retry asked for partitions %v, want only the refused partition 1", ps)
		}
	}
}

// TestHighWaterMarksRefusedByADeposedLeader answers the first ListOffsets
// requests as a leader deposed while it was frozen does before it learns of
// its successor: it still believes it leads at the epoch before, and its end
// offset is older than the one its successor acknowledged. Asked with no
// epoch, it answers that stale end (a Sync built on it would miss
// acknowledged events); asked with the newest epoch this log knows (the
// producer's, from its metadata), it refuses with UNKNOWN_LEADER_EPOCH, and
// the log asks again until the real leader answers.
func TestHighWaterMarksRefusedByADeposedLeader(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	l := openLog(t, testConfig(t, c.ListenAddrs(), 1))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	const published, stale = 5, 2
	for range published {
		if _, err := l.Publish(ctx, 0, []byte("v")); err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	md, err := l.admin.Metadata(ctx, l.cfg.Topic)
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	current := md.Topics[l.cfg.Topic].Partitions[0].LeaderEpoch
	deposed := current - 1
	const zombieAnswers = 3
	var answered atomic.Int32
	var epochs []int32
	var mu sync.Mutex
	c.ControlKey(int16(kmsg.ListOffsets), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if answered.Add(1) > zombieAnswers {
			return nil, nil, false // the deposed leader has learnt; the real one answers
		}
		req := kreq.(*kmsg.ListOffsetsRequest)
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				mu.Lock()
				epochs = append(epochs, rp.CurrentLeaderEpoch)
				mu.Unlock()
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition = rp.Partition
				switch {
				case rp.CurrentLeaderEpoch > deposed:
					sp.ErrorCode = kerr.UnknownLeaderEpoch.Code
				case rp.CurrentLeaderEpoch < deposed && rp.CurrentLeaderEpoch >= 0:
					sp.ErrorCode = kerr.FencedLeaderEpoch.Code
				default: // no epoch asked, or the deposed one: its own end
					sp.Offset = stale
					sp.LeaderEpoch = deposed
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	hw, err := l.HighWaterMarks(ctx, []int32{0})
	if err != nil {
		t.Fatalf("HighWaterMarks: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if hw[0] != published {
		t.Fatalf("HighWaterMarks = %d, want %d: the deposed leader's stale end was taken (epochs asked %v, the current one %d)", hw[0], published, epochs, current)
	}
	for _, e := range epochs {
		if e != current {
			t.Fatalf("ListOffsets asked with leader epochs %v, want the current one %d each time", epochs, current)
		}
	}
}
