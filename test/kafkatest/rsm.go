package kafkatest

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
)

// RSMSettings are the lines a remote storage manager adds to every node's
// server.properties.
type RSMSettings struct {
	// Class is remote.log.storage.manager.class.name.
	Class string `json:"class"`
	// ClassPath is remote.log.storage.manager.class.path (its jars).
	ClassPath []string `json:"class_path"`
	// Props are more lines (rsm.config.* and the like), written in key
	// order.
	Props map[string]string `json:"props,omitempty"`
}

// RSMEnv is what an RSM's resolver may use to get ready.
type RSMEnv struct {
	// Version is the cluster's Kafka version.
	Version string
	// RemoteDir is a directory every node shares: the root of a file-system
	// RSM (the cluster's "remote storage").
	RemoteDir string
	// Cache resolves and builds jars.
	Cache *Cache
}

// RSMResolver makes an RSM ready for a cluster (its jars resolved or
// built, its storage made) and returns its settings. It runs once, at the
// cluster's first start.
type RSMResolver func(ctx context.Context, env RSMEnv) (RSMSettings, error)

// The built-in RSMs.
const (
	// RSMLocal is Kafka's LocalTieredStorage, from
	// kafka-storage:VERSION:jar:test (served for 4.0.1, 4.1.1, 4.2.1 and
	// 4.3.1; not for 4.4.0, and 4.3.1's does not load into a 4.4.0 broker).
	RSMLocal = "local"
	// RSMFixture is the project's file-system RSM (test/broker/fixture-rsm,
	// built with Maven).
	RSMFixture = "fixture"
)

const (
	localRSMClass   = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
	fixtureRSMClass = "org.rlmm.fixture.FileSystemRemoteStorageManager"
)

var (
	rsmMu        sync.Mutex
	rsmResolvers = map[string]RSMResolver{
		RSMLocal:   resolveLocalRSM,
		RSMFixture: resolveFixtureRSM,
	}
)

// RegisterRSM adds a remote storage manager that Config.RSM (and the
// command's --rsm) can name: the hook for an RSM on S3 or any other. A
// name registered again replaces the earlier resolver.
func RegisterRSM(name string, r RSMResolver) {
	rsmMu.Lock()
	defer rsmMu.Unlock()
	rsmResolvers[name] = r
}

func lookupRSM(name string) (RSMResolver, bool) {
	rsmMu.Lock()
	defer rsmMu.Unlock()
	r, ok := rsmResolvers[name]
	return r, ok
}

func rsmNames() []string {
	rsmMu.Lock()
	defer rsmMu.Unlock()
	return slices.Sorted(maps.Keys(rsmResolvers))
}

// DefaultRSM is the RSM a tiered cluster of version gets when Config.RSM
// is empty: LocalTieredStorage where Maven Central serves its test jar
// (4.0 to 4.3), the fixture after.
func DefaultRSM(version string) string {
	for _, v := range []string{"4.0.", "4.1.", "4.2.", "4.3."} {
		if strings.HasPrefix(version, v) {
			return RSMLocal
		}
	}
	return RSMFixture
}

// fileRSMProps are the settings of both file-system RSMs: their root, kept
// when the broker closes it.
func fileRSMProps(root string) map[string]string {
	return map[string]string{"rsm.config.dir": root, "rsm.config.delete.on.close": "false"}
}

func resolveLocalRSM(ctx context.Context, env RSMEnv) (RSMSettings, error) {
	jar, err := env.Cache.LocalTieredStorageJar(ctx, env.Version)
	if err != nil {
		return RSMSettings{}, err
	}
	return RSMSettings{Class: localRSMClass, ClassPath: []string{jar}, Props: fileRSMProps(env.RemoteDir)}, nil
}

func resolveFixtureRSM(ctx context.Context, env RSMEnv) (RSMSettings, error) {
	jar, err := env.Cache.FixtureRSMJar(ctx)
	if err != nil {
		return RSMSettings{}, err
	}
	return RSMSettings{Class: fixtureRSMClass, ClassPath: []string{jar}, Props: fileRSMProps(env.RemoteDir)}, nil
}
