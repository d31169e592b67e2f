package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/wire"
)

// Record values of the worked examples of kafka-rlmm.md 6.6 and 6.7.
const (
	segmentHex = "01000004666f6f00000000000000010000000000000002000000030000000000000000030000000000000004000000000000000000000000000000006300000001" +
		"00000000000003e800000000000007d0020000000000000000000000000000000400000000"
	updateHex   = "01010004666f6f000000000000000100000000000000020000000300000000000000000300000000000000040000000002" + "0000000000000bb8000100"
	deleteHex   = "01020004666f6f000000000000000100000000000000020000000300000000050000000000000fa00000"
	snapshotHex = "01030000000000000000030000000000000004000000000000000000000000000000630000000100000000000003e800000000000007d0020000000000000000000000000000000400000100"
)

// wantLine is the text rlmm decode prints for a value: the event's toString
// (checked against Kafka's exact forms in package wire).
func wantLine(t *testing.T, h string) string {
	t.Helper()
	b, err := hex.DecodeString(h)
	if err != nil {
		t.Fatal(err)
	}
	e, err := wire.DecodeEvent(b)
	if err != nil {
		t.Fatal(err)
	}
	return e.String() + "\n"
}

// decodeInput has every kind of line decode must skip or accept.
func decodeInput() string {
	return "# values from __remote_log_metadata\n" +
		segmentHex + "\n" +
		"\n" +
		"   0x" + updateHex + "  \r\n" +
		"\t# an indented comment\n" +
		"0X" + strings.ToUpper(deleteHex) + "\n" +
		snapshotHex // no final newline
}

func TestDecodeText(t *testing.T) {
	stdout, stderr, status := runInProcess(t, decodeInput(), "decode")
	if status != 0 || stderr != "" {
		t.Fatalf("status %d, stderr %q", status, stderr)
	}
	want := wantLine(t, segmentHex) + wantLine(t, updateHex) + wantLine(t, deleteHex) + wantLine(t, snapshotHex)
	if stdout != want {
		t.Errorf("stdout\n%s\nwant\n%s", stdout, want)
	}
	// The worked example, spelled out: Kafka 4.x's toString.
	const first = "RemoteLogSegmentMetadata{remoteLogSegmentId=RemoteLogSegmentId{topicIdPartition=AAAAAAAAAAEAAAAAAAAAAg:foo-3, id=AAAAAAAAAAMAAAAAAAAABA}, startOffset=0, endOffset=99, brokerId=1, maxTimestampMs=1000, eventTimestampMs=2000, segmentLeaderEpochs={0=0}, segmentSizeInBytes=1024, customMetadata=Optional.empty, state=COPY_SEGMENT_STARTED, txnIdxEmpty=false}\n"
	if !strings.HasPrefix(stdout, first) {
		t.Errorf("first line %q, want %q", strings.SplitAfter(stdout, "\n")[0], first)
	}
}

func TestDecodeJSON(t *testing.T) {
	stdout, stderr, status := runInProcess(t, decodeInput(), "decode", "--json")
	if status != 0 || stderr != "" {
		t.Fatalf("status %d, stderr %q", status, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	wantKeys := []wire.APIKey{wire.KeySegment, wire.KeyUpdate, wire.KeyPartitionDelete, wire.KeySnapshot}
	if len(lines) != len(wantKeys) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(wantKeys), stdout)
	}
	for i, h := range []string{segmentHex, updateHex, deleteHex, snapshotHex} {
		var got wire.Event
		if err := json.Unmarshal([]byte(lines[i]), &got); err != nil {
			t.Fatalf("line %d is not an event's JSON: %v\n%s", i+1, err, lines[i])
		}
		b, _ := hex.DecodeString(h)
		want, err := wire.DecodeEvent(b)
		if err != nil {
			t.Fatal(err)
		}
		if got.Key != wantKeys[i] || !got.Equal(&want) {
			t.Errorf("line %d: %s, want %s", i+1, got.String(), want.String())
		}
	}
	var partitionDelete map[string]any
	if err := json.Unmarshal([]byte(lines[2]), &partitionDelete); err != nil {
		t.Fatal(err)
	}
	if partitionDelete["state"] != rlmm.DeletePartitionMarked.String() || partitionDelete["type"] != "RemotePartitionDeleteMetadata" {
		t.Errorf("JSON does not use Kafka's names: %s", lines[2])
	}
}

// TestDecodeBadLines: each failing line is reported with its number, the
// others still print, and the status is 1.
func TestDecodeBadLines(t *testing.T) {
	in := segmentHex + "\n" +
		"not hex\n" +
		"# fine\n" +
		segmentHex + "00\n" + // trailing garbage
		"abc\n" + // odd length
		deleteHex + "\n"
	stdout, stderr, status := runInProcess(t, in, "decode")
	if status != 1 {
		t.Errorf("status %d, want 1", status)
	}
	if want := wantLine(t, segmentHex) + wantLine(t, deleteHex); stdout != want {
		t.Errorf("stdout\n%s\nwant\n%s", stdout, want)
	}
	for _, want := range []string{
		"line 2: not a hex record value",
		"line 4: corrupt data: RemoteLogSegmentMetadataRecord: end of record at byte 102: 1 byte(s) of garbage",
		"line 5: not a hex record value",
		"rlmm: decode: 3 of 5 values in standard input did not decode",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "goroutine") || strings.Contains(stderr, "Usage:") {
		t.Errorf("stderr has a stack trace or usage:\n%s", stderr)
	}
}

func TestDecodeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "values.hex")
	if err := os.WriteFile(path, []byte(deleteHex+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, status := runInProcess(t, "ignored stdin", "decode", path)
	if status != 0 || stdout != wantLine(t, deleteHex) {
		t.Errorf("decode %s: status %d, stdout %q, stderr %q", path, status, stdout, stderr)
	}
	// "-" is standard input.
	stdout, _, status = runInProcess(t, deleteHex, "decode", "-")
	if status != 0 || stdout != wantLine(t, deleteHex) {
		t.Errorf("decode -: status %d, stdout %q", status, stdout)
	}
}

// TestCouldNotRun: usage mistakes and unreadable input exit 2 with one
// clear line and no usage dump or stack trace.
func TestCouldNotRun(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.hex")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"decode", missing}, "decode: open " + missing + ": no such file or directory"},
		{[]string{"decode", "a", "b"}, "accepts at most 1 arg(s), received 2"},
		{[]string{"decode", "--bogus"}, "unknown flag: --bogus (see rlmm decode --help)"},
		{[]string{"--bogus"}, "unknown flag: --bogus (see rlmm --help)"},
		{[]string{"no-such-command"}, `unknown command "no-such-command" for "rlmm"`},
	}
	for _, tc := range tests {
		stdout, stderr, status := runInProcess(t, "", tc.args...)
		if status != 2 {
			t.Errorf("rlmm %v: status %d, want 2", tc.args, status)
		}
		if stderr != "rlmm: "+tc.want+"\n" {
			t.Errorf("rlmm %v: stderr %q, want %q", tc.args, stderr, "rlmm: "+tc.want+"\n")
		}
		if stdout != "" {
			t.Errorf("rlmm %v: stdout %q", tc.args, stdout)
		}
	}
}

// TestHelpAndCompletion: --help works on the root and on decode, and cobra's
// shell completion is there.
func TestHelpAndCompletion(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "decode"},
		{[]string{"decode", "--help"}, `"value:" part`},
		{[]string{"help", "decode"}, "--json"},
		{[]string{"completion", "bash"}, "bash completion"},
		{[]string{"completion", "zsh"}, "compdef"},
		{[]string{"--version"}, "rlmm version"},
	}
	for _, tc := range tests {
		stdout, stderr, status := runInProcess(t, "", tc.args...)
		if status != 0 || !strings.Contains(stdout, tc.want) {
			t.Errorf("rlmm %v: status %d, stdout lacks %q (stderr %q)", tc.args, status, tc.want, stderr)
		}
	}
}

// TestBinary builds rlmm and runs decode as an operator would: a pipe in,
// text out, each exit status.
func TestBinary(t *testing.T) {
	stdout, stderr, status := runBinary(t, decodeInput(), "decode")
	if status != 0 || stderr != "" {
		t.Fatalf("decode: status %d, stderr %q", status, stderr)
	}
	if want := wantLine(t, segmentHex) + wantLine(t, updateHex) + wantLine(t, deleteHex) + wantLine(t, snapshotHex); stdout != want {
		t.Errorf("decode stdout\n%s\nwant\n%s", stdout, want)
	}
	stdout, stderr, status = runBinary(t, deleteHex+"\n0100\n", "decode", "--json")
	if status != 1 || !strings.Contains(stdout, `"DELETE_PARTITION_MARKED"`) || !strings.Contains(stderr, "line 2: corrupt data") {
		t.Errorf("decode --json with a bad line: status %d, stdout %q, stderr %q", status, stdout, stderr)
	}
	_, stderr, status = runBinary(t, "", "decode", "--no-such-flag")
	if status != 2 || !strings.HasPrefix(stderr, "rlmm: unknown flag") {
		t.Errorf("bad flag: status %d, stderr %q", status, stderr)
	}
}

// TestDecodeKIP1266 decodes what a KIP-1266 writer puts in the topic:
// keyed records of version 1 (its tagged fields and an unknown one shown),
// a tombstone, a key that does not match its record (printed, then
// reported), and a record version above 1 (refused, naming it).
func TestDecodeKIP1266(t *testing.T) {
	keyHex := func(s string) string { return hex.EncodeToString([]byte(s)) }
	const key = "AAAAAAAAAAEAAAAAAAAAAg:foo:3:99:7"
	// The worked example as version 1: version byte 1, tags BrokerLeaderEpoch
	// (tag 1) = 7 and an unknown tag 5 = aabb.
	v1 := segmentHex[:4] + "01" + segmentHex[6:len(segmentHex)-2] + "02" + "010400000007" + "0502aabb"
	in := keyHex(key) + " " + v1 + "\n" +
		keyHex(key+":UPDATE") + " -\n" +
		keyHex("AAAAAAAAAAEAAAAAAAAAAg:foo:3:98:7") + " " + v1 + "\n" +
		segmentHex[:4] + "02" + segmentHex[6:] + "\n" +
		"- " + segmentHex + "\n"
	stdout, stderr, status := runInProcess(t, in, "decode")
	if status != 1 {
		t.Errorf("status %d, want 1", status)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	wantEvent := strings.TrimSuffix(wantLine(t, segmentHex), "\n")
	want := []string{
		`key: "` + key + `", value: ` + wantEvent + " [recordVersion=1, brokerLeaderEpoch=7, unknownTaggedFields={5=aabb}]",
		`key: "` + key + `:UPDATE", value: null (a tombstone)`,
		`key: "AAAAAAAAAAEAAAAAAAAAAg:foo:3:98:7", value: ` + wantEvent + " [recordVersion=1, brokerLeaderEpoch=7, unknownTaggedFields={5=aabb}]",
		wantEvent,
	}
	if !slices.Equal(lines, want) {
		t.Errorf("stdout\n%s\nwant\n%s", stdout, strings.Join(want, "\n"))
	}
	for _, w := range []string{
		"line 3: record key \"AAAAAAAAAAEAAAAAAAAAAg:foo:3:98:7\" does not match its RemoteLogSegmentMetadataRecord: the key's end offset is 98, the record's 99",
		"line 4: corrupt data: RemoteLogSegmentMetadataRecord: record version at byte 2: unsupported record version 2",
		"2 of 5 values",
	} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr does not say %q:\n%s", w, stderr)
		}
	}

	stdout, _, _ = runInProcess(t, keyHex(key)+" "+v1+"\n"+keyHex(key+":UPDATE")+" -\n", "decode", "--json")
	lines = strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	var rec struct {
		Key       *string
		RecordKey *struct {
			TopicID           string
			Topic             string
			EndOffset         int64
			BrokerLeaderEpoch int32
			Update            bool
		}
		Value *struct {
			RecordVersion       int
			BrokerLeaderEpoch   *int32
			UnknownTaggedFields []struct {
				Tag  int
				Data []byte
			}
		}
	}
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("%v: %s", err, lines[0])
	}
	if rec.Key == nil || *rec.Key != key || rec.RecordKey == nil || rec.RecordKey.EndOffset != 99 || rec.RecordKey.BrokerLeaderEpoch != 7 ||
		rec.Value == nil || rec.Value.RecordVersion != 1 || rec.Value.BrokerLeaderEpoch == nil || *rec.Value.BrokerLeaderEpoch != 7 ||
		len(rec.Value.UnknownTaggedFields) != 1 || rec.Value.UnknownTaggedFields[0].Tag != 5 || string(rec.Value.UnknownTaggedFields[0].Data) != "\xaa\xbb" {
		t.Errorf("JSON of a keyed version 1 record: %s", lines[0])
	}
	rec.Value = nil
	if err := json.Unmarshal([]byte(lines[1]), &rec); err != nil || rec.Value != nil || rec.RecordKey == nil || !rec.RecordKey.Update {
		t.Errorf("JSON of a tombstone: %s (%v)", lines[1], err)
	}
}

// FuzzDecodeLine: a line of rlmm decode (a hex value, or a hex key and
// value, "-" for null) never panics; it either fails printing nothing, or
// prints exactly one line, in text and in JSON (where it is one JSON value).
func FuzzDecodeLine(f *testing.F) {
	key := hex.EncodeToString([]byte("AAAAAAAAAAEAAAAAAAAAAg:foo:3:99:7"))
	for _, s := range []string{
		segmentHex, updateHex, deleteHex, snapshotHex,
		key + " " + segmentHex[:4] + "01" + segmentHex[6:len(segmentHex)-2] + "02010400000007" + "0502aabb",
		key + " -", "- -", "- " + segmentHex, "0x" + segmentHex, "a b c", "zz",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, jsonOut := range []bool{false, true} {
			var buf bytes.Buffer
			w := bufio.NewWriter(&buf)
			printed, err := decodeLine(w, line, jsonOut)
			if werr := w.Flush(); werr != nil {
				t.Fatal(werr)
			}
			out := buf.String()
			if !printed {
				if err == nil || out != "" {
					t.Fatalf("%q: not printed, err %v, output %q", line, err, out)
				}
				continue
			}
			if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
				t.Fatalf("%q printed %q: want one line", line, out)
			}
			if jsonOut && !json.Valid([]byte(out)) {
				t.Fatalf("%q printed invalid JSON %q", line, out)
			}
		}
	})
}
