# The one test command is `make test`: formatting, vet, staticcheck, the race
# detector over every package (with a real Apache Kafka broker started from
# Maven Central jars), and short fuzzing of every decoder.
GO ?= go

.PHONY: test lint fault-test memory-targets cluster-faults soak unit fuzz-short bench bench-compare simulate vectors kafka-fetch build proto plugin plugin-test broker-test broker-test-kafka broker-test-versions bench-broker bench-curve

test:
	bash scripts/test.sh

lint:
	bash scripts/test.sh lint

# The fault tests alone: each single fault (partitions, a slow or lossy link, a
# full or read-only snapshot disk, a frozen broker or sidecar, a killed broker) on a
# 3-broker tiered cluster with rlmm's plugin under load, and its SASL_SSL listener
# (as root: the snapshot disks are tmpfs mounts).
fault-test:
	bash scripts/test.sh faults

# Only the single faults of fault-test (TestFaultsAlone), as root.
cluster-faults:
	bash scripts/test.sh cluster-faults

# Random schedules of several faults at once on that cluster, for MINUTES (10 by
# default) from SEED (the time by default; logged, so a failure can be repeated).
soak:
	RLMM_SOAK_SEED=$(SEED) RLMM_SOAK_MINUTES=$(MINUTES) bash scripts/test.sh soak

# The memory targets alone (part of make test): benchmarks that fail above their bound.
memory-targets:
	bash scripts/test.sh memory

unit:
	$(GO) test -race ./...

# The broker tests: Kafka 4.3.1 brokers with tiered storage, rlmm's plugin as
# the RLMM (broker-test, part of make test) or Kafka's own (the control);
# broker-test-versions: the lifecycle on 4.0.1 and 4.4.0, the short tiering
# check on 4.1.1 and 4.2.1 (part of make test).
broker-test:
	bash scripts/broker-test.sh rlmm

broker-test-kafka:
	bash scripts/broker-test.sh kafka

broker-test-versions:
	bash scripts/broker-test.sh versions rlmm

fuzz-short:
	bash scripts/fuzz-short.sh

build:
	$(GO) build -o bin/rlmm ./cmd/rlmm

# Regenerates rpc/rlmmpb (committed) from proto/ with buf, run at a pinned
# version; the protoc-gen-go plugin is a go tool of go.mod. No protoc needed.
BUF_VERSION ?= v1.75.0
proto:
	GOFLAGS= $(GO) run github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION) generate

simulate:
	$(GO) run ./cmd/rlmm simulate

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./... | tee /tmp/rlmm-bench.txt

# Kafka's Java RLMM and rlmm side by side on fresh brokers; writes the tables
# into docs/bench/compare.md (and docs/bench/broker.md) between their markers.
bench-compare:
	bash scripts/bench-compare.sh

# Only the broker workload of bench-compare (Kafka 4.3.1 + tiered storage).
bench-broker:
	bash scripts/bench-broker.sh

# The restart curve (1M, 10M, 30M metadata events; Kafka's RLMM, rlmm's plugin,
# no tiered storage): table and plot into docs/bench/broker.md and
# docs/bench/restart-curve.svg. Hours, and several GiB of disk: see that page.
bench-curve:
	bash scripts/bench-broker.sh curve

# Regenerates testdata/kafka-vectors.json with Apache Kafka's own serializer.
vectors:
	bash scripts/interop.sh vectors

kafka-fetch:
	go run ./test/kafkatest/cmd/kafkatest fetch

# Apache Kafka's own tiered-storage integration suite (kafka-storage 4.3.1 test jar, 74 runs) with
# rlmm's broker plugin as the RLMM (part of make test), with Kafka's own RLMM (the control), or one
# class of it: make kafka-suite-one CLASS=DeleteTopicTest [RLMM=kafka]. Results: docs/COMPATIBILITY.md.
.PHONY: kafka-suite kafka-suite-control kafka-suite-one
kafka-suite:
	bash scripts/kafkasuite.sh rlmm

kafka-suite-control:
	bash scripts/kafkasuite.sh kafka

kafka-suite-one:
	@test -n "$(CLASS)" || { echo "usage: make kafka-suite-one CLASS=DeleteTopicTest [RLMM=kafka]"; exit 2; }
	bash scripts/kafkasuite.sh one $(CLASS) $(or $(RLMM),rlmm)

# The Kafka broker plugin (plugin/): the rlmm binary and the shaded jar; prints the jar's path.
plugin:
	bash scripts/plugin.sh build

# The release files in dist/: rlmm-plugin-<version>.jar (the plugin, with the rlmm binaries for
# linux/amd64 and linux/arm64 inside), rlmm-<version>-linux-{amd64,arm64}.tar.gz and SHA256SUMS.
.PHONY: dist
dist:
	bash scripts/plugin.sh dist

# The plugin's tests (mvn verify) against a real rlmm serve, and against the broker of
# RLMM_KAFKA_BOOTSTRAP when it is set.
plugin-test:
	bash scripts/plugin.sh test
