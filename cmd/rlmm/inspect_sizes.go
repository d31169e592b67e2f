package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rlmm-go/rlmm/internal/view"
)

// maxPricePerGiBMonth bounds --price-per-gb-month: far above any object
// store's price, low enough that no estimate overflows.
const maxPricePerGiBMonth = 1e6

func addSizesFlags(f *pflag.FlagSet, o *inspectOptions) {
	f.BoolVar(&o.sizes, "sizes", false, "show the remote storage per topic: partitions, segments, remote bytes, oldest remote offset and data (with --topic/--partition filters)")
	f.BoolVar(&o.byPartition, "by-partition", false, "with --sizes: a row per partition too")
	f.Float64Var(&o.price, "price-per-gb-month", 0, fmt.Sprintf("with --sizes: price of one GiB (2^30 bytes) stored for a month, for a monthly estimate (0 to %g; default no estimate)", float64(maxPricePerGiBMonth)))
}

// checkSizes refuses the size flags where they mean nothing or a price
// that is not a price.
func (o *inspectOptions) checkSizes(cmd *cobra.Command) error {
	f := cmd.Flags()
	if !o.sizes && (f.Changed("by-partition") || f.Changed("price-per-gb-month")) {
		return usageErrorf("--by-partition and --price-per-gb-month go with --sizes")
	}
	if o.sizes && (o.segments || o.events) {
		return usageErrorf("--sizes shows totals: leave out --segments and --events")
	}
	if math.IsNaN(o.price) || o.price < 0 || o.price > maxPricePerGiBMonth {
		return usageErrorf("--price-per-gb-month %v: must be between 0 and %g", o.price, float64(maxPricePerGiBMonth))
	}
	return nil
}

// sizesJSON is the document inspect --sizes --json prints.
type sizesJSON struct {
	Source           string      `json:"source"`
	PricePerGiBMonth float64     `json:"pricePerGiBMonth,omitempty"`
	Total            view.Size   `json:"total"`
	Rows             []view.Size `json:"rows"`
}

// writeSizes prints the size view of b: a row per topic (and partition),
// then the total.
func writeSizes(out io.Writer, src *source, b *view.Builder, o *inspectOptions) error {
	rows := view.Sizes(b, o.byPartition, o.price, o.keep)
	total := view.Size{Topic: "(all)", Partition: -1, OldestOffset: -1, OldestTimestampMs: -1}
	for _, r := range rows {
		if r.Partition >= 0 {
			continue
		}
		total.Partitions += r.Partitions
		total.Segments += r.Segments
		total.RemoteBytes += r.RemoteBytes
		total.MonthlyCost += r.MonthlyCost
		if r.OldestTimestampMs >= 0 && (total.OldestTimestampMs < 0 || r.OldestTimestampMs < total.OldestTimestampMs) {
			total.OldestTimestampMs = r.OldestTimestampMs
		}
	}
	if o.jsonOut {
		if rows == nil {
			rows = []view.Size{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(sizesJSON{Source: src.name, PricePerGiBMonth: o.price, Total: total, Rows: rows})
	}
	fmt.Fprintf(out, "%s: remote storage held by segments not yet DELETE_SEGMENT_FINISHED\n", src.name)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "TOPIC\tPARTITION\tPARTITIONS\tSEGMENTS\tREMOTE BYTES\t\tOLDEST OFFSET\tOLDEST DATA\t"
	if o.price > 0 {
		header += "PER MONTH\t"
	}
	fmt.Fprintln(tw, header)
	for _, r := range append(rows, total) {
		part := "-"
		if r.Partition >= 0 {
			part = fmt.Sprint(r.Partition)
		}
		oldest := "-"
		if r.OldestOffset >= 0 {
			oldest = fmt.Sprint(r.OldestOffset)
		}
		line := fmt.Sprintf("%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t", r.Topic, part, r.Partitions, r.Segments, r.RemoteBytes,
			humanBytes(r.RemoteBytes), oldest, timeOrDash(r.OldestTimestampMs))
		if o.price > 0 {
			line += fmt.Sprintf("%.4f\t", r.MonthlyCost)
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// humanBytes prints n in binary units.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// timeOrDash prints a millisecond timestamp in RFC 3339, or "-" for none.
func timeOrDash(ms int64) string {
	if ms < 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}
