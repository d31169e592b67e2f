package main

import (
	"slices"
	"sync"
	"time"

	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
	"github.com/rlmm-go/rlmm/topicbased"
)

// splits is the manager's Metrics for the mutations run: it keeps every
// mutation's split (topicbased.SplitMetrics), for the "split" part of the
// result.
type splits struct {
	topicbased.NopMetrics
	mu  sync.Mutex
	all []topicbased.MutationSplit
}

func (s *splits) MutationSplit(_ topicbased.Op, sp topicbased.MutationSplit) {
	s.mu.Lock()
	s.all = append(s.all, sp)
	s.mu.Unlock()
}

// reset forgets the splits kept so far (those of the warm-up).
func (s *splits) reset() {
	s.mu.Lock()
	s.all = nil
	s.mu.Unlock()
}

// summary is the p50 of each phase (µs), the share of mutations whose
// record the pump fetched before Publish returned, the mean records per
// pump batch, and the log's batching since before (records per produce
// request and per fetch, mean produce and fetch round trips in µs).
func (s *splits) summary(before, after kafkalog.Stats) map[string]any {
	s.mu.Lock()
	all := slices.Clone(s.all)
	s.mu.Unlock()
	out := map[string]any{"mutations": len(all)}
	if len(all) == 0 {
		return out
	}
	p50 := func(of func(topicbased.MutationSplit) time.Duration) float64 {
		d := make([]time.Duration, len(all))
		for i, sp := range all {
			d[i] = of(sp)
		}
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds()) / 1e3
	}
	out["readyP50Us"] = p50(func(s topicbased.MutationSplit) time.Duration { return s.Ready })
	out["encodeP50Us"] = p50(func(s topicbased.MutationSplit) time.Duration { return s.Encode })
	out["publishP50Us"] = p50(func(s topicbased.MutationSplit) time.Duration { return s.Publish })
	out["fetchP50Us"] = p50(func(s topicbased.MutationSplit) time.Duration { return s.Fetch })
	out["applyP50Us"] = p50(func(s topicbased.MutationSplit) time.Duration { return s.Apply })
	out["wakeP50Us"] = p50(func(s topicbased.MutationSplit) time.Duration { return s.Wake })
	first, records := 0, 0
	for _, sp := range all {
		if sp.FetchedFirst {
			first++
		}
		records += sp.Batch
	}
	out["fetchedFirst"] = float64(first) / float64(len(all))
	out["recordsPerPoll"] = float64(records) / float64(len(all))
	if n := after.ProduceRequests - before.ProduceRequests; n > 0 {
		out["produceRequests"] = n
		out["recordsPerProduce"] = float64(after.ProducedRecords-before.ProducedRecords) / float64(n)
		out["produceRttUs"] = float64((after.ProduceTime - before.ProduceTime).Nanoseconds()) / float64(n) / 1e3
	}
	if n := after.Fetches - before.Fetches; n > 0 {
		out["fetches"] = n
		out["recordsPerFetch"] = float64(after.FetchedRecords-before.FetchedRecords) / float64(n)
		out["fetchRttUs"] = float64((after.FetchTime - before.FetchTime).Nanoseconds()) / float64(n) / 1e3
	}
	return out
}
