package wire

import (
	"errors"
	"io/fs"
	"os"
	"testing"
)

// kafkaVectorsPath is the file of vectors captured from Apache Kafka 4.4.0's
// own RemoteLogMetadataSerde and partitioner (make vectors regenerates it).
const kafkaVectorsPath = "../testdata/kafka-vectors.json"

// TestKafkaVectors checks both directions of every record Kafka's own
// serializer wrote, and every partitioner result Kafka computed.
func TestKafkaVectors(t *testing.T) {
	if _, err := os.Stat(kafkaVectorsPath); errors.Is(err, fs.ErrNotExist) {
		msg := kafkaVectorsPath + " does not exist: run `make vectors` (Java and Maven) to capture it from Kafka's serializer"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	records, partitions := checkVectorsFile(t, kafkaVectorsPath)
	t.Logf("checked %d Kafka records both ways and %d partitioner rows", records, partitions)
}

// TestVectorsReader runs the same checker on a small fixture in the same
// schema, so the reader is known to work even where the Kafka file is absent.
func TestVectorsReader(t *testing.T) {
	records, partitions := checkVectorsFile(t, "testdata/vectors-fixture.json")
	if records != 4 || partitions != 3 {
		t.Fatalf("fixture: checked %d records and %d partitioner rows, want 4 and 3", records, partitions)
	}
}
