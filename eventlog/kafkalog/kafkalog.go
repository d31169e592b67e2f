package kafkalog

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrTopicNotFound is returned by Open when the topic does not exist and
// Config.SkipTopicCreation is set. It matches rlmm.ErrInvalidArgument too.
var ErrTopicNotFound = fmt.Errorf("%w: metadata topic does not exist", rlmm.ErrInvalidArgument)

// hwmRetryWait bounds how long HighWaterMarks retries partitions whose
// leader is moving (NOT_LEADER_OR_FOLLOWER and other retriable errors)
// before it gives up with ErrTimeout.
const hwmRetryWait = 30 * time.Second

// deliveryTimeout is Kafka's producer default delivery.timeout.ms.
const deliveryTimeout = 2 * time.Minute

// Log is an eventlog.Log over a Kafka topic. Create it with Open.
type Log struct {
	cfg        Config
	partitions int32
	topicID    rlmm.Uuid // the topic's id when Open found it
	producer   *kgo.Client
	admin      *kadm.Client
	log        *slog.Logger
	hooks      *trafficHooks // shared by the producer and every subscription's client
	// epochs holds, per partition, the highest leader epoch this log has
	// seen (leaderepoch.go): ListOffsets carries it, so a deposed leader
	// that has not learnt it yet refuses instead of answering a stale end.
	epochs *leaderEpochs
	// openBound is how long Open waited for the cluster at most:
	// ConnectTimeout or less when the caller's deadline came first.
	openBound time.Duration

	mu     sync.Mutex
	closed bool
	subs   map[*subscription]struct{}
	// pending are the published records the committer has not taken yet
	// and round says who has records in flight (roundX, under mu); kick
	// (buffered 1) wakes the committer, stop ends it, and it closes
	// committerDone when it returns (commit.go).
	pending       []pendingRecord
	round         int
	kick          chan struct{}
	stop          chan struct{}
	committerDone chan struct{}
}

var _ eventlog.Log = (*Log)(nil)

// Open connects to the cluster, creates the topic if it is absent (unless
// cfg.SkipTopicCreation), and returns a log over it. The cluster must answer
// within cfg.ConnectTimeout (or ctx's deadline, if earlier); otherwise the
// error names the addresses tried and wraps rlmm.ErrTimeout.
func Open(ctx context.Context, cfg Config) (*Log, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	opts, err := cfg.clientOpts("producer")
	if err != nil {
		return nil, err
	}
	hooks := &trafficHooks{}
	opts = append(opts,
		kgo.WithHooks(hooks),
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), // idempotence is kgo's default and needs acks=all
		// The committer flushes each round of published records itself,
		// one round in flight at a time (commit.go says why).
		kgo.ManualFlushing(),
		// Kafka's delivery.timeout.ms: a record the cluster cannot take
		// fails after 2 minutes even when the caller's ctx has no deadline.
		kgo.RecordDeliveryTimeout(deliveryTimeout),
		// Kafka's manager produces with compression.type=none (its
		// producer default); kgo would pick snappy, which only costs CPU
		// on batches of a few small records.
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RetryTimeoutFn(producerRetryTimeout),
	)
	producer, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafkalog: %w: %w", rlmm.ErrInvalidArgument, err)
	}
	l := &Log{
		cfg:      cfg,
		producer: producer,
		admin:    kadm.NewClient(producer),
		log:      cfg.Logger.With("topic", cfg.Topic),
		hooks:    hooks,
		epochs:   &leaderEpochs{},
		subs:     make(map[*subscription]struct{}),
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),

		committerDone: make(chan struct{}),
	}
	l.openBound = cfg.ConnectTimeout
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < l.openBound {
		// Rounded for the message: the caller's bound less the moments
		// spent before Open ("2s", not "1.998s").
		l.openBound = max(time.Until(deadline), 0).Round(100 * time.Millisecond)
	}
	openCtx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	if l.partitions, err = l.prepareTopic(ctx, openCtx); err != nil {
		producer.Close()
		return nil, err
	}
	go l.committer()
	l.log.Info("kafkalog opened", "bootstrap", strings.Join(cfg.BootstrapServers, ","), "partitions", l.partitions, "topic_id", l.topicID)
	return l, nil
}

// openError explains a failure of Open's cluster calls: a deadline that ran
// out is the unreachable-cluster case, which names the addresses tried.
func (l *Log) openError(parent, openCtx context.Context, what string, err error) error {
	if parent.Err() != nil && !errors.Is(parent.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("kafkalog: %s: %w", what, parent.Err())
	}
	if openCtx.Err() != nil {
		// The bound ran out: ConnectTimeout or the caller's deadline,
		// whichever came first (openBound). Both wrap as the caller's
		// error would, and say which cluster did not answer.
		return fmt.Errorf("kafkalog: %s: no answer from the Kafka cluster at %s within %s: %w: %w (last error: %v)",
			what, strings.Join(l.cfg.BootstrapServers, ","), l.openBound, rlmm.ErrTimeout, openCtx.Err(), err)
	}
	return fmt.Errorf("kafkalog: %s at %s: %w", what, strings.Join(l.cfg.BootstrapServers, ","), err)
}

// prepareTopic finds or creates the topic and returns its partition count.
func (l *Log) prepareTopic(parent, ctx context.Context) (int32, error) {
	brokers, err := l.listBrokers(ctx)
	if err != nil {
		return 0, l.openError(parent, ctx, "listing brokers", err)
	}
	for {
		n, id, exists, err := l.describeTopic(ctx)
		if err != nil {
			return 0, l.openError(parent, ctx, "describing topic "+l.cfg.Topic, err)
		}
		if exists {
			if l.cfg.NumPartitions != 0 && n != l.cfg.NumPartitions {
				return 0, fmt.Errorf("kafkalog: %w: topic %s has %d partitions but remote.log.metadata.topic.num.partitions is %d; "+
					"the count decides where each partition's metadata lives, so it must match the existing topic",
					rlmm.ErrInvalidArgument, l.cfg.Topic, n, l.cfg.NumPartitions)
			}
			l.topicID = id
			return n, l.waitLeaders(parent, ctx)
		}
		if l.cfg.SkipTopicCreation {
			return 0, fmt.Errorf("kafkalog: topic %s at %s: %w", l.cfg.Topic, strings.Join(l.cfg.BootstrapServers, ","), ErrTopicNotFound)
		}
		if err := l.createTopic(ctx, len(brokers)); err != nil {
			return 0, l.openError(parent, ctx, "creating topic "+l.cfg.Topic, err)
		}
		// Describe again: the count now comes from the cluster.
	}
}

// listBrokers asks for the cluster's brokers until one answers or ctx ends:
// a broker that is starting refuses connections for a while, as does one
// that is restarting.
func (l *Log) listBrokers(ctx context.Context) (kadm.BrokerDetails, error) {
	// Not up to a second between tries (openRetryWait): a sidecar started
	// before its broker's listener opens is waiting here, and the broker's
	// partitions wait for it once the listener is up.
	for tries := 1; ; tries++ {
		brokers, err := l.admin.ListBrokers(ctx)
		if err == nil && len(brokers) > 0 {
			return brokers, nil
		}
		if err == nil {
			err = errors.New("the metadata answer lists no broker")
		}
		if isPermanent(err) {
			return nil, err // bad credentials or certificates do not get better
		}
		l.log.Debug("cluster not reachable yet", "err", err)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(openRetryWait(tries, err)):
		}
	}
}

// openRetryWait is the pause before Open lists the brokers again after err:
// 50 ms while the address refuses connections (nobody listens there yet,
// typically the starting broker whose plugin started this sidecar, which
// opens its listener any moment; a refused dial costs nothing), else
// retryBackoff's steps.
func openRetryWait(tries int, err error) time.Duration {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return 50 * time.Millisecond
	}
	return retryBackoff(tries)
}

// isPermanent reports whether err is one that retrying cannot fix: a
// non-retriable Kafka error (authentication, authorization) or a TLS
// certificate or handshake failure.
func isPermanent(err error) bool {
	var kafkaErr *kerr.Error
	if errors.As(err, &kafkaErr) {
		return !kafkaErr.Retriable
	}
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var header tls.RecordHeaderError
	return errors.As(err, &unknownAuthority) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &verify) || errors.As(err, &header)
}

// describeTopic returns the topic's partition count, its id and whether it
// exists.
func (l *Log) describeTopic(ctx context.Context) (int32, rlmm.Uuid, bool, error) {
	topics, err := l.admin.ListTopics(ctx, l.cfg.Topic)
	if err != nil {
		return 0, rlmm.Uuid{}, false, err
	}
	d, ok := topics[l.cfg.Topic]
	if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		return 0, rlmm.Uuid{}, false, nil
	}
	if d.Err != nil {
		return 0, rlmm.Uuid{}, false, d.Err
	}
	return int32(len(d.Partitions)), rlmm.Uuid(d.ID), true, nil
}

// createTopic creates the topic with Kafka's settings. Another client
// creating it first is success too.
func (l *Log) createTopic(ctx context.Context, brokers int) error {
	partitions := l.cfg.NumPartitions
	if partitions == 0 {
		partitions = DefaultNumPartitions
	}
	rf := l.cfg.ReplicationFactor
	if rf == 0 {
		rf = int16(min(3, max(brokers, 1)))
	}
	minISR := l.cfg.MinInSyncReplicas
	if minISR == 0 {
		minISR = min(2, rf)
	}
	retention := strconv.FormatInt(l.cfg.RetentionMs, 10)
	deletePolicy, minISRText, noRemote := "delete", strconv.Itoa(int(minISR)), "false"
	configs := map[string]*string{
		"cleanup.policy":        &deletePolicy,
		"retention.ms":          &retention,
		"min.insync.replicas":   &minISRText,
		"remote.storage.enable": &noRemote,
	}
	resp, err := l.admin.CreateTopic(ctx, partitions, rf, configs, l.cfg.Topic)
	if err == nil {
		err = resp.Err
	}
	switch {
	case err == nil:
		l.log.Info("created metadata topic", "partitions", partitions, "replication_factor", rf,
			"retention_ms", l.cfg.RetentionMs, "min_insync_replicas", minISR)
		return nil
	case errors.Is(err, kerr.TopicAlreadyExists):
		return nil
	default:
		if resp.ErrMessage != "" {
			err = fmt.Errorf("%w (%s)", err, resp.ErrMessage)
		}
		return fmt.Errorf("%d partitions, replication factor %d: %w", partitions, rf, err)
	}
}

// waitLeaders waits until every partition of the topic has a leader, so the
// first publishes do not race the topic's creation.
func (l *Log) waitLeaders(parent, ctx context.Context) error {
	for {
		topics, err := l.admin.ListTopics(ctx, l.cfg.Topic)
		if err == nil {
			d := topics[l.cfg.Topic]
			ready := d.Err == nil && len(d.Partitions) > 0
			for _, p := range d.Partitions {
				if p.Err != nil || p.Leader < 0 {
					ready = false
				}
			}
			if ready {
				return nil
			}
			err = fmt.Errorf("partitions without a leader yet")
		}
		select {
		case <-ctx.Done():
			return l.openError(parent, ctx, "waiting for leaders of topic "+l.cfg.Topic, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Partitions returns the topic's partition count.
func (l *Log) Partitions() int32 { return l.partitions }

// ID returns the topic's id as the cluster gave it when Open found the
// topic: a topic deleted and created again under the same name has another.
// rlmm.ZeroUuid from a cluster that does not give topic ids.
func (l *Log) ID() rlmm.Uuid { return l.topicID }

// Topic returns the name of the topic the log uses.
func (l *Log) Topic() string { return l.cfg.Topic }

// ConsumeWait returns remote.log.metadata.consume.wait.ms, for the manager.
func (l *Log) ConsumeWait() time.Duration { return l.cfg.ConsumeWait }

// Client is the log's producer client, for the cluster's metadata (the
// leader fence asks it who leads a user partition); the log owns it, so
// it is closed with the log.
func (l *Log) Client() *kgo.Client { return l.producer }

func (l *Log) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

func (l *Log) checkPartition(p int32) error {
	if p < 0 || p >= l.partitions {
		return fmt.Errorf("kafkalog: %w: partition %d of topic %s is out of range [0, %d)", rlmm.ErrInvalidArgument, p, l.cfg.Topic, l.partitions)
	}
	return nil
}

// Publish produces value to partition (null key) and returns its offset once
// every in-sync replica has it (acks=all).
func (l *Log) Publish(ctx context.Context, partition int32, value []byte) (int64, error) {
	if err := l.checkPartition(partition); err != nil {
		return 0, err
	}
	if l.isClosed() {
		return 0, fmt.Errorf("kafkalog: publish to %s-%d: %w", l.cfg.Topic, partition, rlmm.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("kafkalog: publish to %s-%d: %w", l.cfg.Topic, partition, err)
	}
	if value == nil {
		value = []byte{} // a null value would be a tombstone; the log stores bytes
	}
	p := pendingRecord{
		ctx:  ctx,
		rec:  &kgo.Record{Topic: l.cfg.Topic, Partition: partition, Value: value},
		done: make(chan produced, 1),
	}
	if !l.publishAlone(p) {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return 0, fmt.Errorf("kafkalog: publish to %s-%d: %w", l.cfg.Topic, partition, rlmm.ErrClosed)
		}
		l.pending = append(l.pending, p)
		l.mu.Unlock()
		l.kickCommitter()
	}
	select {
	case res := <-p.done:
		if res.err != nil {
			return 0, l.produceError(partition, res.err)
		}
		return res.offset, nil
	case <-ctx.Done():
		// The record may still be written; the committer sends into the
		// buffered channel and nobody waits for it.
		return 0, fmt.Errorf("kafkalog: publish to %s-%d: %w", l.cfg.Topic, partition, ctx.Err())
	}
}

func (l *Log) produceError(partition int32, err error) error {
	if errors.Is(err, kgo.ErrClientClosed) || l.isClosed() {
		return fmt.Errorf("kafkalog: publish to %s-%d: %w (%v)", l.cfg.Topic, partition, rlmm.ErrClosed, err)
	}
	err = fmt.Errorf("kafkalog: publish to %s-%d: %w", l.cfg.Topic, partition, err)
	if refusedBeforeAppend(err) {
		return &eventlog.RefusedError{Err: err}
	}
	return err
}

// refusedBeforeAppend reports whether a produce error is one with which the
// cluster refused the record without appending it: a write it does not
// authorize (InitProducerId or Produce), a login that failed, a record or
// batch it will never take. Every other error (a timeout, a lost
// connection, a retriable error past its retries) leaves the record's fate
// unknown.
func refusedBeforeAppend(err error) bool {
	for _, refused := range []error{
		kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed,
		kerr.TransactionalIDAuthorizationFailed, kerr.SaslAuthenticationFailed,
		kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidRecord,
	} {
		if errors.Is(err, refused) {
			return true
		}
	}
	return false
}

// HighWaterMarks lists the end offsets of the given partitions. Partitions
// whose leader is moving are retried for a bounded time.
func (l *Log) HighWaterMarks(ctx context.Context, partitions []int32) ([]int64, error) {
	return l.listOffsets(ctx, "high-water marks", partitions, listLatest)
}

// StartOffsets lists the log start offsets of the given partitions (Kafka's
// ListOffsets for the earliest timestamp), retried like HighWaterMarks.
func (l *Log) StartOffsets(ctx context.Context, partitions []int32) ([]int64, error) {
	return l.listOffsets(ctx, "start offsets", partitions, listEarliest)
}

// The special timestamps of a ListOffsets request: the end offset (the
// high-water mark, read uncommitted) and the log start offset.
const (
	listLatest   int64 = -1
	listEarliest int64 = -2
)

// listOffsets asks the leaders of partitions for the offset at timestamp
// (listLatest or listEarliest), one ListOffsets request naming only those
// partitions (kgo sends each leader its share), and retries the partitions
// whose answer is a retriable error, paced by listOffsetsPause, for up to
// hwmRetryWait. kgo does not retry ListOffsets itself (producerRetryTimeout):
// its backoff of 50 ms and more is too coarse for the moment it matters,
// a broker restarting, when a partition's readiness waits for this answer
// and its leader comes up any millisecond. what names the offsets in errors.
func (l *Log) listOffsets(ctx context.Context, what string, partitions []int32, timestamp int64) ([]int64, error) {
	for _, p := range partitions {
		if err := l.checkPartition(p); err != nil {
			return nil, err
		}
	}
	if l.isClosed() {
		return nil, fmt.Errorf("kafkalog: %s of %s: %w", what, l.cfg.Topic, rlmm.ErrClosed)
	}
	out := make([]int64, len(partitions))
	if len(partitions) == 0 {
		return out, nil
	}
	began := time.Now()
	deadline := began.Add(hwmRetryWait)
	left := slices.Clone(partitions) // the partitions without an answer yet
	for tries := 1; ; tries++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("kafkalog: %s of %s: %w", what, l.cfg.Topic, err)
		}
		got, retry, err := l.listOffsetsOnce(ctx, left, timestamp)
		if err != nil {
			return nil, fmt.Errorf("kafkalog: %s of %s: %w", what, l.cfg.Topic, err)
		}
		for i, p := range partitions {
			if o, ok := got[p]; ok {
				out[i] = o
			}
		}
		left = slices.DeleteFunc(left, func(p int32) bool { _, ok := got[p]; return ok })
		if len(left) == 0 {
			if tries > 1 {
				l.log.Debug("listed "+what+" after retries", "tries", tries, "took", time.Since(began))
			}
			return out, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("kafkalog: %s of %s: still failing after %s: %w: %w", what, l.cfg.Topic, hwmRetryWait, rlmm.ErrTimeout, retry)
		}
		l.log.Debug("retrying "+what, "partitions", left, "err", retry)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("kafkalog: %s of %s: %w", what, l.cfg.Topic, ctx.Err())
		case <-time.After(listOffsetsPause(tries)):
		}
	}
}

// listOffsetsOnce sends one ListOffsets request for partitions and returns
// the offsets answered, and for the rest the last retriable error (a
// partition's, or the request's). err is set only when retrying cannot help:
// a partition's non-retriable error, or the log closed.
func (l *Log) listOffsetsOnce(ctx context.Context, partitions []int32, timestamp int64) (got map[int32]int64, retry, err error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	req.IsolationLevel = 0    // read uncommitted: the end offset is the high-water mark
	req.TimeoutMillis = 15000 // kadm's default; a broker answers ListOffsets at once
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = l.cfg.Topic
	for _, p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = p
		rp.Timestamp = timestamp
		// Fenced by the newest epoch known: without it a leader deposed
		// while it was frozen or cut off answers its own, stale end
		// offset until it learns of its successor (KIP-320).
		rp.CurrentLeaderEpoch = l.leaderEpoch(p)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	got = make(map[int32]int64, len(partitions))
	for _, shard := range l.producer.RequestSharded(ctx, req) {
		resp, _ := shard.Resp.(*kmsg.ListOffsetsResponse)
		if resp == nil {
			switch {
			case errors.Is(shard.Err, kgo.ErrClientClosed) || l.isClosed():
				return nil, nil, rlmm.ErrClosed
			case ctx.Err() != nil:
				return nil, nil, ctx.Err()
			}
			retry = shard.Err
			continue
		}
		for _, t := range resp.Topics {
			for _, rp := range t.Partitions {
				perr := kerr.ErrorForCode(rp.ErrorCode)
				switch {
				case t.Topic != l.cfg.Topic:
				case perr == nil:
					got[rp.Partition] = rp.Offset
					l.epochs.note(rp.Partition, rp.LeaderEpoch)
				case errors.Is(perr, kerr.FencedLeaderEpoch):
					// The broker leads at a newer epoch than known here:
					// learn it, then ask again.
					l.learnEpochs(ctx)
					retry = fmt.Errorf("partition %d: %w", rp.Partition, perr)
				case kerr.IsRetriable(perr):
					retry = fmt.Errorf("partition %d: %w", rp.Partition, perr)
				default:
					return nil, nil, fmt.Errorf("partition %d: %w", rp.Partition, perr)
				}
			}
		}
	}
	if retry == nil && len(got) < len(partitions) {
		retry = fmt.Errorf("partitions %v missing from the ListOffsets answer", slices.DeleteFunc(slices.Clone(partitions), func(p int32) bool { _, ok := got[p]; return ok }))
	}
	return got, retry, nil
}

// producerRetryTimeout is how long the producer's client retries a request
// (kgo.RetryTimeoutFn): ListOffsets not at all, as listOffsets retries it at
// its own pace (kgo retries only while the time spent is under this bound,
// and a nanosecond is never), everything else kgo's default of 30 s.
func producerRetryTimeout(key int16) time.Duration {
	if key == kmsg.ListOffsets.Int16() {
		return time.Nanosecond
	}
	return 30 * time.Second
}

// listOffsetsPause is the wait before ListOffsets try number tries+1: 10 ms
// for the first 20 tries (a restarting broker's leaders come up within a
// few hundred milliseconds of its listener, and a partition's readiness
// waits for the answer), then doubling to 250 ms, the clients' cap.
func listOffsetsPause(tries int) time.Duration {
	const fast = 20
	if tries <= fast {
		return 10 * time.Millisecond
	}
	return min(10*time.Millisecond<<min(tries-fast, 5), 250*time.Millisecond)
}

// Subscribe returns a subscription with a kgo consumer client of its own,
// consuming no partition yet.
func (l *Log) Subscribe(ctx context.Context) (eventlog.Subscription, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("kafkalog: subscribe to %s: %w", l.cfg.Topic, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, fmt.Errorf("kafkalog: subscribe to %s: %w", l.cfg.Topic, rlmm.ErrClosed)
	}
	s, err := newSubscription(l)
	if err != nil {
		return nil, err
	}
	l.subs[s] = struct{}{}
	return s, nil
}

// forget drops a closed subscription from the log's set.
func (l *Log) forget(s *subscription) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.subs, s)
}

// Close closes every subscription still open and the producer. Publishes
// in flight fail with rlmm.ErrClosed. Close is idempotent.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	subs := make([]*subscription, 0, len(l.subs))
	for s := range l.subs {
		subs = append(subs, s)
	}
	l.subs = nil
	l.mu.Unlock()
	for _, s := range subs {
		s.closeClient()
	}
	close(l.stop)
	// Fails what the committer's flush waits for, which ends its round.
	l.producer.Close()
	<-l.committerDone
	return nil
}
