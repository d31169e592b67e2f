package topicbased

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/kafkalog"
)

// The same tests over kafkalog: against franz-go's in-process kfake cluster
// always, and the main paths against a real Apache Kafka broker when
// RLMM_KAFKA_BOOTSTRAP is set (make test starts one).

const envBootstrap = "RLMM_KAFKA_BOOTSTRAP"

// kafkaTests run over kfake: every test of the manager that takes its log
// from newLog.
var kafkaTests = []namedTest{
	{"SegmentLifecycle", TestKafkaSegmentLifecycle},
	{"TransitionSequence", TestKafkaTransitionSequence},
	{"OverlapAndOrder", TestKafkaOverlapAndOrder},
	{"RemoteLogSize", TestKafkaRemoteLogSize},
	{"NeverAssigned", TestKafkaNeverAssigned},
	{"SharedMetadataPartition", TestKafkaSharedMetadataPartition},
	{"NotReadyWhileCatchingUp", TestKafkaNotReadyWhileCatchingUp},
	{"PartitionDelete", TestKafkaPartitionDelete},
	{"BadRecordsDoNotStopThePump", TestKafkaBadRecordsDoNotStopThePump},
	{"ConcurrentConflictVerdict", TestConcurrentConflictVerdict},
	{"BrokersShareOneLog", TestBrokersShareOneLog},
	{"RestartFromSnapshotReplaysOnlyTheTail", TestRestartFromSnapshotReplaysOnlyTheTail},
	{"ShutdownAndFlushThenRestartReplaysNothing", TestShutdownAndFlushThenRestartReplaysNothing},
	{"RestartWithoutUsableSnapshotReplaysAll", TestRestartWithoutUsableSnapshotReplaysAll},
	{"SnapshotOfAnotherPartitionCountIsIgnored", TestSnapshotOfAnotherPartitionCountIsIgnored},
	{"SnapshotAheadOfTheLogIsDropped", TestSnapshotAheadOfTheLogIsDropped},
	{"SnapshotOfAnotherLogIsDropped", TestSnapshotOfAnotherLogIsDropped},
	{"SnapshotStateOfUnhostedPartitionsIsDropped", TestSnapshotStateOfUnhostedPartitionsIsDropped},
	{"ReassignAfterRemovalReplaysFromZero", TestReassignAfterRemovalReplaysFromZero},
	{"LinearizableAcrossTwoManagers", TestLinearizableAcrossTwoManagers},
	{"NewlyHostedPartitionsRebuiltInOnePass", TestNewlyHostedPartitionsRebuiltInOnePass},
	{"PartitionsHostedDuringAPassWaitForTheNext", TestPartitionsHostedDuringAPassWaitForTheNext},
	{"RestartKeepsHostedPartitionsWithoutEvents", TestRestartKeepsHostedPartitionsWithoutEvents},
	{"KIP1266RecordsAreApplied", TestKIP1266RecordsAreApplied},
	{"WritesRecordVersionZeroWithoutKey", TestWritesRecordVersionZeroWithoutKey},
}

// realKafkaTests are the main paths, run against a real broker.
var realKafkaTests = []namedTest{
	{"SegmentLifecycle", TestKafkaSegmentLifecycle},
	{"SharedMetadataPartition", TestKafkaSharedMetadataPartition},
	{"BadRecordsDoNotStopThePump", TestKafkaBadRecordsDoNotStopThePump},
	{"BrokersShareOneLog", TestBrokersShareOneLog},
	{"RestartFromSnapshotReplaysOnlyTheTail", TestRestartFromSnapshotReplaysOnlyTheTail},
	{"ReassignAfterRemovalReplaysFromZero", TestReassignAfterRemovalReplaysFromZero},
	{"LinearizableAcrossTwoManagers", TestLinearizableAcrossTwoManagers},
	{"NewlyHostedPartitionsRebuiltInOnePass", TestNewlyHostedPartitionsRebuiltInOnePass},
}

func TestOverKfake(t *testing.T) {
	c := fakeCluster(t)
	runOver(t, kafkaBackend("kfake", c.ListenAddrs()), kafkaTests)
}

func TestOverRealKafka(t *testing.T) {
	runOver(t, kafkaBackend("kafka", realKafka(t)), realKafkaTests)
}

var topicSeq atomic.Int64

// kafkaBackend opens a fresh topic per log at addrs.
func kafkaBackend(name string, addrs []string) logBackend {
	return logBackend{name, func(t testing.TB, partitions int32) eventlog.Log {
		t.Helper()
		return openKafkaTopic(t, addrs, kafkaTopicName(t), partitions)
	}}
}

// kafkaTopicName returns a topic name no other test uses.
func kafkaTopicName(t testing.TB) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r == '/':
			return '.'
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_' // Kafka's topic names allow only [a-zA-Z0-9._-]
	}, t.Name())
	topic := fmt.Sprintf("rlmm-topicbased.%d.%d.%s", time.Now().UnixNano()%1e9, topicSeq.Add(1), name)
	if len(topic) > 200 {
		topic = topic[:200]
	}
	return topic
}

// openKafkaTopic opens topic at addrs with kafkalog (creating it with
// partitions partitions if it does not exist). The caller closes it.
func openKafkaTopic(t testing.TB, addrs []string, topic string, partitions int32) *kafkalog.Log {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	l, err := kafkalog.Open(ctx, kafkalog.Config{BootstrapServers: addrs, Topic: topic, NumPartitions: partitions,
		ReplicationFactor: 1, ConnectTimeout: testTimeout})
	if err != nil {
		t.Fatalf("kafkalog.Open(%v, %s): %v", addrs, topic, err)
	}
	return l
}

var (
	fakeMu     sync.Mutex
	sharedFake *kfake.Cluster
)

// fakeCluster returns the package's kfake cluster, started on first use and
// closed by TestMain.
func fakeCluster(t testing.TB) *kfake.Cluster {
	t.Helper()
	fakeMu.Lock()
	defer fakeMu.Unlock()
	if sharedFake == nil {
		c, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			t.Fatalf("starting kfake: %v", err)
		}
		sharedFake = c
	}
	return sharedFake
}

func closeFakeCluster() {
	fakeMu.Lock()
	defer fakeMu.Unlock()
	if sharedFake != nil {
		sharedFake.Close()
		sharedFake = nil
	}
}
