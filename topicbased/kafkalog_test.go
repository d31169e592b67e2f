package topicbased

import (
	"context"
	"fmt"
	"os"
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
	{"SnapshotKeepsHeldUnassignedPartitions", TestSnapshotKeepsHeldUnassignedPartitions},
	{"ReassignAfterRemovalReplaysFromZero", TestReassignAfterRemovalReplaysFromZero},
	{"LinearizableAcrossTwoManagers", TestLinearizableAcrossTwoManagers},
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
}

func TestOverKfake(t *testing.T) {
	c := fakeCluster(t)
	runOver(t, kafkaBackend("kfake", c.ListenAddrs()), kafkaTests)
}

func TestOverRealKafka(t *testing.T) {
	addr := os.Getenv(envBootstrap)
	if addr == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(envBootstrap + " is unset in CI: make test starts a real Kafka broker and sets it")
		}
		t.Skip(envBootstrap + " is unset: no real Kafka broker to run against; `scripts/kafka.sh start <dir>` starts one and prints the variable (make test does this)")
	}
	runOver(t, kafkaBackend("kafka", strings.Split(addr, ",")), realKafkaTests)
}

var topicSeq atomic.Int64

// kafkaBackend opens a fresh topic per log at addrs.
func kafkaBackend(name string, addrs []string) logBackend {
	return logBackend{name, func(t testing.TB, partitions int32) eventlog.Log {
		t.Helper()
		topic := fmt.Sprintf("rlmm-topicbased.%d.%d.%s", time.Now().UnixNano()%1e9, topicSeq.Add(1),
			strings.NewReplacer("/", ".", " ", "_", "#", "_").Replace(t.Name()))
		if len(topic) > 200 {
			topic = topic[:200]
		}
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		l, err := kafkalog.Open(ctx, kafkalog.Config{BootstrapServers: addrs, Topic: topic, NumPartitions: partitions,
			ReplicationFactor: 1, ConnectTimeout: testTimeout})
		if err != nil {
			t.Fatalf("kafkalog.Open(%v, %s): %v", addrs, topic, err)
		}
		return l
	}}
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
