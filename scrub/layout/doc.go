// Package layout names the objects a remote storage manager (Kafka's
// RemoteStorageManager plugin) writes for each remote log segment, so that
// `rlmm scrub` can hold the remote log metadata against a listing of the
// remote storage.
//
// A remote storage manager chooses its own object names; a Layout captures
// one manager's choice in both directions: Expect says which objects a
// segment's metadata calls for (and the sizes the layout records), and Parse
// maps a listed object key back to the segment it names. Two layouts are
// built in:
//
//   - "local": Kafka's own LocalTieredStorage (the test storage manager of
//     Kafka 4.3.1): <topic>-<partition>-<topicId>/<20-digit start offset>-
//     <segment id>.<log|index|timeindex|snapshot|leader_epoch_checkpoint|txnindex>,
//     keys relative to <rsm.config.dir>/kafka-tiered-storage;
//   - "aiven": Aiven's tiered-storage-for-apache-kafka:
//     <prefix><topic>-<topicId>/<partition>/<20-digit start offset>-
//     <segment id>.<log|indexes|rsm-manifest>, where the segment's custom
//     metadata (tagged fields: 0 remote size, 1 object prefix, 2 object key)
//     takes precedence over the computed key. Checked against what the real
//     plugin (v1.0.0, S3Storage) writes for a Kafka 4.3.1 broker in
//     test/broker's Aiven tests, and in TestAivenRealObjects against one
//     segment it wrote (testdata/aiven-1.0.0): keys, custom metadata bytes
//     (the remote size the sum of the three objects' sizes, the manifest's
//     included), and ParseAivenFieldSet's fields encoded into the same bytes.
//     The plugin itself (1.0.0) reads a segment's log and indexes where the
//     custom metadata says, but its manifest, and deletes all three, under
//     its configured prefix: a layout for scrub says where objects are, not
//     where that plugin would look.
//
// Ids are in Kafka's text form (URL-safe base64 without padding). A third
// layout is one file: a type implementing Layout and an init function that
// calls Register. The package uses only the standard library and rlmm; Parse
// and Expect allocate nothing on the common path (scrub runs them once per
// listed object and per segment).
package layout
