package eventlogtest_test

import (
	"context"
	"sync"

	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/memlog"
)

// A mutant is a deliberately broken log: memlog with one rule of the
// contract violated. The suite must fail on each, in the named subtest.
type mutant struct {
	name string
	// failsIn is the conformance subtest that must catch it.
	failsIn string
	wrap    func(*memlog.Log) eventlog.Log
}

var mutants = []mutant{
	{"OffsetsFromOne", "OffsetsDenseFromZero", func(l *memlog.Log) eventlog.Log { return offsetsFromOne{l} }},
	{"HighWaterMarkOffByOne", "HighWaterMarks", func(l *memlog.Log) eventlog.Log { return hwmOffByOne{l} }},
	{"StoresCallersSlice", "ValuesNotAliased", func(l *memlog.Log) eventlog.Log { return &storesCallersSlice{Log: l} }},
	{"RemoveIgnored", "RemoveStopsDelivery", func(l *memlog.Log) eventlog.Log {
		return subWrapped{l, func(s eventlog.Subscription) eventlog.Subscription { return removeIgnored{s} }}
	}},
	{"AddFromZero", "AddReplaysThenFollows", func(l *memlog.Log) eventlog.Log {
		return subWrapped{l, func(s eventlog.Subscription) eventlog.Subscription { return addFromZero{s} }}
	}},
	{"BadPartitionToZero", "InvalidArguments", func(l *memlog.Log) eventlog.Log { return badPartitionToZero{l} }},
	{"StartAlwaysZero", "StartOffsets", func(l *memlog.Log) eventlog.Log { return startAlwaysZero{l} }},
}

type offsetsFromOne struct{ *memlog.Log }

func (m offsetsFromOne) Publish(ctx context.Context, p int32, v []byte) (int64, error) {
	off, err := m.Log.Publish(ctx, p, v)
	return off + 1, err
}

type hwmOffByOne struct{ *memlog.Log }

func (m hwmOffByOne) HighWaterMarks(ctx context.Context, ps []int32) ([]int64, error) {
	hw, err := m.Log.HighWaterMarks(ctx, ps)
	for i := range hw {
		if hw[i] > 0 {
			hw[i]++
		}
	}
	return hw, err
}

// storesCallersSlice keeps the publisher's slice and hands it out as is.
type storesCallersSlice struct {
	*memlog.Log
	mu   sync.Mutex
	kept [][]byte // by offset; the mutant's tests use one partition
}

func (m *storesCallersSlice) Publish(ctx context.Context, p int32, v []byte) (int64, error) {
	off, err := m.Log.Publish(ctx, p, v)
	m.mu.Lock()
	m.kept = append(m.kept, v)
	m.mu.Unlock()
	return off, err
}

func (m *storesCallersSlice) Subscribe(ctx context.Context) (eventlog.Subscription, error) {
	s, err := m.Log.Subscribe(ctx)
	return aliasing{s, m}, err
}

type aliasing struct {
	eventlog.Subscription
	m *storesCallersSlice
}

func (a aliasing) Poll(ctx context.Context) ([]eventlog.Record, error) {
	recs, err := a.Subscription.Poll(ctx)
	a.m.mu.Lock()
	defer a.m.mu.Unlock()
	for i := range recs {
		if int(recs[i].Offset) < len(a.m.kept) {
			recs[i].Value = a.m.kept[recs[i].Offset]
		}
	}
	return recs, err
}

type subWrapped struct {
	*memlog.Log
	wrap func(eventlog.Subscription) eventlog.Subscription
}

func (m subWrapped) Subscribe(ctx context.Context) (eventlog.Subscription, error) {
	s, err := m.Log.Subscribe(ctx)
	if err != nil {
		return nil, err
	}
	return m.wrap(s), nil
}

type removeIgnored struct{ eventlog.Subscription }

func (removeIgnored) Remove(int32) error { return nil }

type addFromZero struct{ eventlog.Subscription }

func (a addFromZero) Add(p int32, _ int64) error { return a.Subscription.Add(p, 0) }

type badPartitionToZero struct{ *memlog.Log }

func (m badPartitionToZero) Publish(ctx context.Context, p int32, v []byte) (int64, error) {
	if p < 0 || p >= m.Partitions() {
		p = 0
	}
	return m.Log.Publish(ctx, p, v)
}

// startAlwaysZero ignores deleted records in StartOffsets.
type startAlwaysZero struct{ *memlog.Log }

func (m startAlwaysZero) StartOffsets(_ context.Context, ps []int32) ([]int64, error) {
	return make([]int64, len(ps)), nil
}
