package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/rlmm-go/rlmm/wire"
)

// maxDecodeLine bounds one input line; a record value is far smaller (a few
// hundred bytes, custom metadata at most 128 by default).
const maxDecodeLine = 16 << 20

func newDecodeCmd() *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "decode [file]",
		Short: "Decode __remote_log_metadata record values given as hex, one per line",
		Long: `decode reads record values of Kafka's __remote_log_metadata topic as hex, one
per line, from the file or from standard input (no file, or "-"), and prints
each decoded event on one line.

Blank lines and lines starting with # are skipped; spaces around a value and a
0x prefix are ignored. Take the values from the topic with any Kafka tool that
prints values as hex, for example franz-go's kcl:
kcl consume __remote_log_metadata -f '%v{hex}\n'. (rlmm inspect --events reads
the topic itself and prints every event with its partition and offset.)

A line may also hold the record's key and its value, both as hex and
separated by spaces, "-" standing for null (kcl: -f '%k{hex} %v{hex}\n'
prints an empty field for null: write "-" there): the keys KIP-1266 (not
final) gives records, topicId:topicName:partition:endOffset:brokerLeaderEpoch
with :UPDATE for updates and partition deletes, and its tombstones (a null
value). Such a line prints "key: <key>, value: <event>" ("value: null (a
tombstone)"), and --json prints {"key":..., "recordKey":{...parts},
"value":<event or null>}. A key that is not such a key, or that names
another partition, end offset or broker leader epoch than its record, is
reported like a value that does not decode (after its line).

Records of version 1 (KIP-1266) decode too: their tagged BrokerLeaderEpoch
and EndOffset, and any tagged field rlmm does not know, follow Kafka's text
in brackets ("[recordVersion=1, brokerLeaderEpoch=3, unknownTaggedFields={5=aabb}]")
and are JSON fields (recordVersion, brokerLeaderEpoch, endOffset,
unknownTaggedFields). A record version above 1 does not decode.

The text form is exactly Kafka 4.x's toString of the event, which is the
"value:" part of the line Kafka's RemoteLogMetadataFormatter prints
(kafka-console-consumer --formatter ...RemoteLogMetadataSerde$RemoteLogMetadataFormatter);
its "partition:" and "offset:" parts are not printed, since a bare value
does not carry them. --json prints one JSON object per line instead, with
Kafka's field names.

A line that does not decode prints "line N: <why, at which byte>" on standard
error; decoding goes on, and the exit status is then 1 (2 when the input
cannot be read).`,
		Example: `  echo 01020004666f6f000000000000000100000000000000020000000300000000050000000000000fa00000 | rlmm decode
  rlmm decode values.hex --json | jq .state`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := cmd.InOrStdin()
			name := "standard input"
			if len(args) == 1 && args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return couldNotRun(fmt.Errorf("decode: %w", err))
				}
				defer f.Close()
				in, name = f, args[0]
			}
			return runDecode(in, name, cmd.OutOrStdout(), cmd.ErrOrStderr(), jsonOut)
		},
	}
	cmd.SetFlagErrorFunc(flagError)
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print each event as one JSON object per line")
	return cmd
}

// runDecode decodes every value line of in, printing events to out and the
// failures of single lines to errOut.
func runDecode(in io.Reader, name string, out, errOut io.Writer, jsonOut bool) error {
	w := bufio.NewWriter(out)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), maxDecodeLine)
	var lineNo, values, failed int
	for sc.Scan() {
		lineNo++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		values++
		if _, err := decodeLine(w, line, jsonOut); err != nil {
			failed++
			// Keep stdout and stderr in input order when they share a terminal.
			if err := w.Flush(); err != nil {
				return couldNotRun(fmt.Errorf("decode: write: %w", err))
			}
			fmt.Fprintf(errOut, "line %d: %v\n", lineNo, err)
		}
	}
	if err := sc.Err(); err != nil {
		w.Flush()
		return couldNotRun(fmt.Errorf("decode: read %s after line %d: %w", name, lineNo, err))
	}
	if err := w.Flush(); err != nil {
		return couldNotRun(fmt.Errorf("decode: write: %w", err))
	}
	if failed > 0 {
		return findings("decode: %d of %d values in %s did not decode", failed, values, name)
	}
	return nil
}

// decodedRecord is the JSON decode --json prints for a line with a key or
// a null value: the key's text, its parts when it is a KIP-1266 key, and
// the event (null for a tombstone).
type decodedRecord struct {
	Key       *string        `json:"key"`
	RecordKey *jsonRecordKey `json:"recordKey,omitempty"`
	Value     *wire.Event    `json:"value"`
}

// jsonRecordKey is a wire.RecordKey's parts.
type jsonRecordKey struct {
	TopicID           string `json:"topicId"`
	Topic             string `json:"topic"`
	Partition         int32  `json:"partition"`
	EndOffset         int64  `json:"endOffset"`
	BrokerLeaderEpoch int32  `json:"brokerLeaderEpoch"`
	Update            bool   `json:"update"`
}

// decodeLine decodes one line (a hex value, or a hex key and a hex value,
// "-" for null) and writes its event line. A key that is not a KIP-1266
// key, or does not match its record, is printed and reported (the error
// returned then, printed is true).
func decodeLine(w *bufio.Writer, line []byte, jsonOut bool) (printed bool, err error) {
	fields := bytes.Fields(line)
	var keyHex, valueHex []byte
	switch len(fields) {
	case 1:
		valueHex = fields[0]
	case 2:
		keyHex, valueHex = fields[0], fields[1]
	default:
		return false, fmt.Errorf("%d fields: want a record value, or a record key and a value, as hex (- for null)", len(fields))
	}
	value, null, err := decodeHex(valueHex)
	if err != nil {
		return false, fmt.Errorf("not a hex record value: %w", err)
	}
	var e wire.Event
	if !null {
		if e, err = wire.DecodeEvent(value); err != nil {
			return false, err
		}
	}
	key, nullKey := []byte(nil), true
	if keyHex != nil {
		if key, nullKey, err = decodeHex(keyHex); err != nil {
			return false, fmt.Errorf("not a hex record key: %w", err)
		}
	}
	if nullKey && !null {
		// What released Kafka writes: the event alone, as before keys.
		if jsonOut {
			b, err := json.Marshal(e)
			if err != nil {
				return false, err
			}
			w.Write(b)
		} else {
			w.WriteString(e.String())
		}
		return true, w.WriteByte('\n')
	}
	var keyErr error
	rec := decodedRecord{}
	if !nullKey {
		text := string(key)
		rec.Key = &text
		k, perr := wire.ParseRecordKey(key)
		switch {
		case perr != nil:
			keyErr = fmt.Errorf("record key %q: %w", key, perr)
		case !null && e.KeyMismatch(k) != "":
			keyErr = fmt.Errorf("record key %q does not match its %s: %s", key, e.Key, e.KeyMismatch(k))
		}
		if perr == nil {
			rec.RecordKey = &jsonRecordKey{TopicID: k.TopicIDPartition.TopicID.String(), Topic: k.TopicIDPartition.Topic,
				Partition: k.TopicIDPartition.Partition, EndOffset: k.EndOffset, BrokerLeaderEpoch: k.BrokerLeaderEpoch, Update: k.Update}
		}
	}
	if !null {
		rec.Value = &e
	}
	if jsonOut {
		b, err := json.Marshal(rec)
		if err != nil {
			return false, err
		}
		w.Write(b)
	} else {
		if rec.Key != nil {
			fmt.Fprintf(w, "key: %s, ", strconv.QuoteToGraphic(*rec.Key))
		} else {
			w.WriteString("key: null, ")
		}
		if null {
			w.WriteString("value: null (a tombstone)")
		} else {
			w.WriteString("value: " + e.String())
		}
	}
	if err := w.WriteByte('\n'); err != nil {
		return true, err
	}
	return true, keyErr
}

// decodeHex decodes a hex field: "-" is null; a 0x prefix is dropped.
func decodeHex(field []byte) (b []byte, null bool, err error) {
	if string(field) == "-" {
		return nil, true, nil
	}
	if len(field) >= 2 && field[0] == '0' && (field[1] == 'x' || field[1] == 'X') {
		field = field[2:]
	}
	b = make([]byte, hex.DecodedLen(len(field)))
	if _, err := hex.Decode(b, field); err != nil {
		return nil, false, err
	}
	return b, false, nil
}
