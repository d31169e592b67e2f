package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"

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
		if err := decodeLine(w, line, jsonOut); err != nil {
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

// decodeLine decodes one hex value and writes its event line.
func decodeLine(w *bufio.Writer, line []byte, jsonOut bool) error {
	if len(line) >= 2 && line[0] == '0' && (line[1] == 'x' || line[1] == 'X') {
		line = line[2:]
	}
	value := make([]byte, hex.DecodedLen(len(line)))
	if _, err := hex.Decode(value, line); err != nil {
		return fmt.Errorf("not a hex record value: %w", err)
	}
	e, err := wire.DecodeEvent(value)
	if err != nil {
		return err
	}
	if jsonOut {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		w.Write(b)
	} else {
		w.WriteString(e.String())
	}
	return w.WriteByte('\n')
}
