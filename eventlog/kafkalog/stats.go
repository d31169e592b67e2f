package kafkalog

import (
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Stats are counters of a log's Kafka traffic since Open: how many records
// each produce request and each fetch carried, and how long the produce
// round trips took. ProducedRecords/ProduceRequests is the batching the
// producer achieved (the group commit); PublishTime/ProducedRecords less
// ProduceTime/ProduceRequests is the time a record waited in the producer
// for a request to go out.
type Stats struct {
	// ProduceRequests counts the produce requests answered; ProducedRecords
	// the records their batches held; ProduceTime sums the requests' round
	// trips, from the write to the end of the response.
	ProduceRequests, ProducedRecords int64
	ProduceTime                      time.Duration
	// Fetches counts the fetch responses of the log's subscriptions (a
	// long poll that ended without a record included); FetchedRecords the
	// records they carried; FetchTime sums their round trips, the broker's
	// wait for records (up to the fetch's MaxWait) included.
	Fetches, FetchedRecords int64
	FetchTime               time.Duration
}

// Stats returns the log's counters.
func (l *Log) Stats() Stats {
	h := l.hooks
	return Stats{
		ProduceRequests: h.produceRequests.Load(),
		ProducedRecords: h.producedRecords.Load(),
		ProduceTime:     time.Duration(h.produceNanos.Load()),
		Fetches:         h.fetches.Load(),
		FetchedRecords:  h.fetchedRecords.Load(),
		FetchTime:       time.Duration(h.fetchNanos.Load()),
	}
}

// trafficHooks count the traffic of every kgo client of a log (kgo calls
// them on its own goroutines; a hook is a few atomic adds).
type trafficHooks struct {
	produceRequests, producedRecords, produceNanos atomic.Int64
	fetches, fetchedRecords, fetchNanos            atomic.Int64
}

var (
	_ kgo.HookBrokerE2E           = (*trafficHooks)(nil)
	_ kgo.HookProduceBatchWritten = (*trafficHooks)(nil)
	_ kgo.HookFetchBatchRead      = (*trafficHooks)(nil)
)

// OnBrokerE2E counts a produce request's round trip and a fetch response.
func (h *trafficHooks) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if e2e.Err() != nil {
		return
	}
	switch kmsg.Key(key) {
	case kmsg.Produce:
		h.produceRequests.Add(1)
		h.produceNanos.Add(int64(e2e.DurationE2E()))
	case kmsg.Fetch:
		h.fetches.Add(1)
		h.fetchNanos.Add(int64(e2e.DurationE2E()))
	}
}

// OnProduceBatchWritten counts the records of one partition's batch of a
// produce request.
func (h *trafficHooks) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	h.producedRecords.Add(int64(m.NumRecords))
}

// OnFetchBatchRead counts the records of one batch of a fetch response.
func (h *trafficHooks) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	h.fetchedRecords.Add(int64(m.NumRecords))
}
