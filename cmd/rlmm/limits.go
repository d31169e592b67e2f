package main

import "time"

// Limits of the command line's numeric flags that are not sizes of a
// simulation (those are sim.Max*). Each is far above what a real run needs
// and keeps the command from asking for what memory or the clock cannot
// give.
const (
	// maxMetadataPartitions bounds --metadata-partitions, as
	// kafkalog.MaxFlagPartitions bounds --kafka-partitions (Kafka's
	// default is 50).
	maxMetadataPartitions = 10_000
	// maxTimeout bounds every --timeout: a week.
	maxTimeout = 7 * 24 * time.Hour
	// maxStuckAfter bounds verify's --stuck-after: a year.
	maxStuckAfter = 365 * 24 * time.Hour
	// maxSizeSeries bounds serve's --metrics-topics-limit and
	// --metrics-partitions-limit: the series a scrape may carry per gauge.
	maxSizeSeries = 10_000
)

// checkTimeout refuses a --timeout that is not positive or longer than
// maxTimeout.
func checkTimeout(timeout time.Duration) error {
	if timeout <= 0 || timeout > maxTimeout {
		return usageErrorf("--timeout %s: must be positive and at most %s", timeout, maxTimeout)
	}
	return nil
}
