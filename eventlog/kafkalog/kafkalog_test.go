package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/eventlogtest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestConformanceKfake(t *testing.T) {
	for _, brokers := range []int{1, 3} {
		t.Run(fmt.Sprintf("brokers=%d", brokers), func(t *testing.T) {
			addrs := fakeCluster(t, brokers).ListenAddrs()
			eventlogtest.Run(t, func(t *testing.T, partitions int32) eventlog.Log {
				return truncatingLog{openLog(t, testConfig(t, addrs, partitions))}
			})
		})
	}
}

// adminFor returns a kadm client on addrs, closed when the test ends.
func adminFor(t *testing.T, addrs []string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func TestOpenCreatesTopicWithKafkaSettings(t *testing.T) {
	tests := []struct {
		name      string
		brokers   int
		cfg       Config
		wantParts int32
		wantRF    int
		wantRet   string
		wantISR   string
	}{
		{"defaults on 1 broker", 1, Config{}, DefaultNumPartitions, 1, "-1", "1"},
		{"defaults on 3 brokers", 3, Config{}, DefaultNumPartitions, 3, "-1", "2"},
		{"explicit", 3, Config{NumPartitions: 7, ReplicationFactor: 2, MinInSyncReplicas: 1, RetentionMs: 86400000}, 7, 2, "86400000", "1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addrs := fakeCluster(t, tc.brokers).ListenAddrs()
			cfg := tc.cfg
			cfg.BootstrapServers, cfg.Topic, cfg.ConnectTimeout = addrs, uniqueTopic(t), testTimeout
			l := openLog(t, cfg)
			if l.Partitions() != tc.wantParts {
				t.Errorf("Partitions() = %d, want %d", l.Partitions(), tc.wantParts)
			}
			ctx := context.Background()
			adm := adminFor(t, addrs)
			topics, err := adm.ListTopics(ctx, cfg.Topic)
			if err != nil {
				t.Fatalf("ListTopics: %v", err)
			}
			d := topics[cfg.Topic]
			if int32(len(d.Partitions)) != tc.wantParts {
				t.Errorf("topic has %d partitions, want %d", len(d.Partitions), tc.wantParts)
			}
			for p, pd := range d.Partitions {
				if len(pd.Replicas) != tc.wantRF {
					t.Errorf("partition %d has %d replicas, want %d", p, len(pd.Replicas), tc.wantRF)
				}
			}
			rcs, err := adm.DescribeTopicConfigs(ctx, cfg.Topic)
			if err != nil {
				t.Fatalf("DescribeTopicConfigs: %v", err)
			}
			rc, err := rcs.On(cfg.Topic, nil)
			if err != nil {
				t.Fatalf("configs of %s: %v", cfg.Topic, err)
			}
			got := map[string]string{}
			for _, c := range rc.Configs {
				got[c.Key] = c.MaybeValue()
			}
			want := map[string]string{"cleanup.policy": "delete", "retention.ms": tc.wantRet, "min.insync.replicas": tc.wantISR}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("topic config %s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestOpenExistingTopic(t *testing.T) {
	addrs := fakeCluster(t, 1).ListenAddrs()
	topic := uniqueTopic(t)
	if _, err := adminFor(t, addrs).CreateTopic(context.Background(), 7, 1, nil, topic); err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
	tests := []struct {
		name       string
		configured int32
		wantErr    bool
	}{
		{"count not configured: uses the topic's", 0, false},
		{"count configured and equal", 7, false},
		{"count configured and different", 50, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{BootstrapServers: addrs, Topic: topic, NumPartitions: tc.configured, ConnectTimeout: testTimeout}
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			l, err := Open(ctx, cfg)
			if tc.wantErr {
				if err == nil {
					_ = l.Close()
					t.Fatal("Open succeeded, want a partition count mismatch error")
				}
				if !errors.Is(err, rlmm.ErrInvalidArgument) || !strings.Contains(err.Error(), "7") || !strings.Contains(err.Error(), "50") {
					t.Fatalf("Open: %v; want rlmm.ErrInvalidArgument naming both counts 7 and 50", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer func() { _ = l.Close() }()
			if l.Partitions() != 7 {
				t.Fatalf("Partitions() = %d, want the existing topic's 7", l.Partitions())
			}
		})
	}
}

func TestOpenSkipTopicCreation(t *testing.T) {
	addrs := fakeCluster(t, 1).ListenAddrs()
	cfg := testConfig(t, addrs, 0)
	cfg.SkipTopicCreation = true
	l, err := Open(context.Background(), cfg)
	if err == nil {
		_ = l.Close()
		t.Fatal("Open of a missing topic without creation succeeded")
	}
	if !errors.Is(err, ErrTopicNotFound) || !strings.Contains(err.Error(), cfg.Topic) {
		t.Fatalf("Open: %v; want ErrTopicNotFound naming %s", err, cfg.Topic)
	}
	topics, err := adminFor(t, addrs).ListTopics(context.Background(), cfg.Topic)
	if err != nil {
		t.Fatalf("ListTopics: %v", err)
	}
	if topics.Has(cfg.Topic) {
		t.Fatalf("topic %s was created although SkipTopicCreation was set", cfg.Topic)
	}
}

func TestOpenUnreachableBroker(t *testing.T) {
	// A port that was just free: nothing listens there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	const timeout = 700 * time.Millisecond
	cfg := Config{BootstrapServers: []string{addr}, ConnectTimeout: timeout}
	start := time.Now()
	l, err := Open(context.Background(), cfg)
	if err == nil {
		_ = l.Close()
		t.Fatalf("Open against %s succeeded with nothing listening", addr)
	}
	t.Logf("Open: %v", err)
	if !errors.Is(err, rlmm.ErrTimeout) || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), timeout.String()) {
		t.Fatalf("Open: %v; want rlmm.ErrTimeout naming %s and %s", err, addr, timeout)
	}
	// Bounded: the timeout, not kgo's retry schedule (a generous margin,
	// this is not a speed check).
	if elapsed := time.Since(start); elapsed > timeout+20*time.Second {
		t.Fatalf("Open took %s with a %s connect timeout", elapsed, timeout)
	}
}

// TestOpenUnreachableBrokerCallerDeadline: a caller's deadline earlier than
// ConnectTimeout bounds Open, and the error still says which cluster did not
// answer within which bound (rlmm verify --timeout 2s relies on it).
func TestOpenUnreachableBrokerCallerDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	const bound = 700 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	start := time.Now()
	l, err := Open(ctx, Config{BootstrapServers: []string{addr}}) // ConnectTimeout: the default 10 s
	if err == nil {
		_ = l.Close()
		t.Fatalf("Open against %s succeeded with nothing listening", addr)
	}
	elapsed := time.Since(start)
	t.Logf("Open after %s: %v", elapsed.Round(time.Millisecond), err)
	if !errors.Is(err, rlmm.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) ||
		!strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), bound.String()) {
		t.Fatalf("Open: %v; want rlmm.ErrTimeout and context.DeadlineExceeded naming %s and %s", err, addr, bound)
	}
	if elapsed >= DefaultConnectTimeout {
		t.Fatalf("Open took %s: the caller's %s deadline did not bound it", elapsed, bound)
	}
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no bootstrap servers", Config{}},
		{"only blanks", Config{BootstrapServers: []string{" , "}}},
		{"negative partitions", Config{BootstrapServers: []string{"x:1"}, NumPartitions: -1}},
		{"negative replication factor", Config{BootstrapServers: []string{"x:1"}, ReplicationFactor: -1}},
		{"negative min isr", Config{BootstrapServers: []string{"x:1"}, MinInSyncReplicas: -2}},
		{"retention below -1", Config{BootstrapServers: []string{"x:1"}, RetentionMs: -2}},
		{"negative consume wait", Config{BootstrapServers: []string{"x:1"}, ConsumeWait: -time.Second}},
		{"cert without key", Config{BootstrapServers: []string{"x:1"}, TLSCertFile: "c.pem"}},
		{"unknown sasl mechanism", Config{BootstrapServers: []string{"x:1"}, SASLMechanism: "GSSAPI", SASLUser: "u"}},
		{"sasl without user", Config{BootstrapServers: []string{"x:1"}, SASLMechanism: "PLAIN"}},
		{"credentials without mechanism", Config{BootstrapServers: []string{"x:1"}, SASLUser: "u"}},
		{"missing CA file", Config{BootstrapServers: []string{"x:1"}, TLSCAFile: "/nonexistent/ca.pem"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Open(context.Background(), tc.cfg)
			if err == nil {
				_ = l.Close()
				t.Fatal("Open accepted an invalid config")
			}
			if !errors.Is(err, rlmm.ErrInvalidArgument) {
				t.Fatalf("Open: %v, want rlmm.ErrInvalidArgument", err)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	cfg, err := Config{BootstrapServers: []string{"a:1,b:2", " c:3 "}, SASLMechanism: "scram-sha-512", SASLUser: "u"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	mech, err := cfg.saslMechanism()
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"servers", strings.Join(cfg.BootstrapServers, " "), "a:1 b:2 c:3"},
		{"topic", cfg.Topic, DefaultTopic},
		{"retention", cfg.RetentionMs, DefaultRetentionMs},
		{"consume wait", cfg.ConsumeWait, DefaultConsumeWait},
		{"connect timeout", cfg.ConnectTimeout, DefaultConnectTimeout},
		{"sasl mechanism", cfg.SASLMechanism, SASLScramSHA512},
		{"sasl built", mech.Name(), SASLScramSHA512},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
}

// TestSubscriptionAddedWhileProducing adds subscriptions (from the start and
// from the current high-water mark) while publishers are appending, and
// checks every subscription sees a gap-free run of the published values.
func TestSubscriptionAddedWhileProducing(t *testing.T) {
	for _, brokers := range []int{1, 3} {
		t.Run(fmt.Sprintf("brokers=%d", brokers), func(t *testing.T) {
			l := openLog(t, testConfig(t, fakeCluster(t, brokers).ListenAddrs(), 4))
			testSubscriptionAddedWhileProducing(t, l)
		})
	}
}

func testSubscriptionAddedWhileProducing(t *testing.T, l *Log) {
	const perPartition = 150
	parts := l.Partitions()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	var wg sync.WaitGroup
	errs := make(chan error, parts)
	for p := range parts {
		wg.Go(func() {
			for i := range perPartition {
				off, err := l.Publish(ctx, p, recordValue(p, i))
				if err != nil {
					errs <- fmt.Errorf("publish %d to partition %d: %w", i, p, err)
					return
				}
				if off != int64(i) {
					errs <- fmt.Errorf("publish %d to partition %d got offset %d", i, p, off)
					return
				}
			}
		})
	}
	// Subscriptions join while the publishers run.
	type joined struct {
		sub   eventlog.Subscription
		start []int64
	}
	var subs []joined
	for round := range 3 {
		time.Sleep(time.Duration(round*15) * time.Millisecond)
		sub := subscribeLog(t, l)
		start := make([]int64, parts)
		all := make([]int32, parts)
		for p := range parts {
			all[p] = p
		}
		if round%2 == 1 { // from the current end: only what comes next
			hw, err := l.HighWaterMarks(ctx, all)
			if err != nil {
				t.Fatalf("HighWaterMarks: %v", err)
			}
			start = hw
		}
		for p := range parts {
			if err := sub.Add(p, start[p]); err != nil {
				t.Fatalf("Add(%d, %d): %v", p, start[p], err)
			}
		}
		subs = append(subs, joined{sub, start})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for n, j := range subs {
		want := 0
		for p := range parts {
			want += perPartition - int(j.start[p])
		}
		next := append([]int64(nil), j.start...)
		for _, r := range pollN(t, j.sub, want) {
			if r.Offset != next[r.Partition] {
				t.Fatalf("subscription %d: partition %d delivered offset %d, want %d", n, r.Partition, r.Offset, next[r.Partition])
			}
			if string(r.Value) != string(recordValue(r.Partition, int(r.Offset))) {
				t.Fatalf("subscription %d: %d/%d has value %q", n, r.Partition, r.Offset, r.Value)
			}
			next[r.Partition]++
		}
	}
}

// TestHighWaterMarksAfterLeaderMoves moves every partition's leader and
// checks the marks are still exact (kadm reports NOT_LEADER per partition,
// which the log retries).
func TestHighWaterMarksAfterLeaderMoves(t *testing.T) {
	c := fakeCluster(t, 3)
	l := openLog(t, testConfig(t, c.ListenAddrs(), 6))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	all := []int32{0, 1, 2, 3, 4, 5}
	for round := range 5 {
		for _, p := range all {
			for range int(p) + round {
				if _, err := l.Publish(ctx, p, []byte("v")); err != nil {
					t.Fatalf("Publish: %v", err)
				}
			}
		}
		c.ShufflePartitionLeaders()
		hw, err := l.HighWaterMarks(ctx, all)
		if err != nil {
			t.Fatalf("HighWaterMarks after leader shuffle %d: %v", round, err)
		}
		for i, p := range all {
			want := int64(0)
			for r := range round + 1 {
				want += int64(int(p) + r)
			}
			if hw[i] != want {
				t.Fatalf("round %d: partition %d high-water mark %d, want %d", round, p, hw[i], want)
			}
		}
	}
}

// TestDeliveredValuesDoNotShareCapacity checks a receiver can append to a
// delivered value without changing the next record of the same fetch (kgo
// slices both out of one buffer).
func TestDeliveredValuesDoNotShareCapacity(t *testing.T) {
	addrs := fakeCluster(t, 1).ListenAddrs()
	l := openLog(t, testConfig(t, addrs, 1))
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// One ProduceSync call: both records travel in one batch.
	if err := cl.ProduceSync(context.Background(),
		&kgo.Record{Topic: l.Topic(), Partition: 0, Value: []byte("first")},
		&kgo.Record{Topic: l.Topic(), Partition: 0, Value: []byte("second")},
	).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}
	sub := subscribeLog(t, l)
	if err := sub.Add(0, 0); err != nil {
		t.Fatal(err)
	}
	got := pollN(t, sub, 2)
	_ = append(got[0].Value, "XXXXXXXX"...)
	if string(got[1].Value) != "second" {
		t.Fatalf("appending to the first value changed the second to %q", got[1].Value)
	}
}

// TestClusterRestartWhilePublishingKfake is the broker-restart test on a
// persistent kfake cluster of its own: the whole cluster closes and comes
// back on the same port and data while publishers run.
func TestClusterRestartWhilePublishingKfake(t *testing.T) {
	dir := t.TempDir()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(dir), kfake.SyncWrites())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	addr := c.ListenAddrs()[0]
	_, portText, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatal(err)
	}
	l := openLog(t, testConfig(t, []string{addr}, 4))
	testRestartWhilePublishing(t, l, func() {
		c.Close()
		time.Sleep(200 * time.Millisecond) // publishers meet a dead cluster
		c, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.DataDir(dir), kfake.SyncWrites())
		if err != nil {
			t.Fatalf("restarting kfake on port %d: %v", port, err)
		}
	})
}
