package wire

import "strconv"

// AppendText appends the line Kafka 4.x's RemoteLogMetadataFormatter (the
// kafka-console-consumer formatter for __remote_log_metadata) prints for a
// record, including the final newline:
//
//	partition: <metadataPartition>, offset: <offset>, value: <event toString>
func AppendText(dst []byte, metadataPartition int32, offset int64, e *Event) []byte {
	dst = append(dst, "partition: "...)
	dst = strconv.AppendInt(dst, int64(metadataPartition), 10)
	dst = append(dst, ", offset: "...)
	dst = strconv.AppendInt(dst, offset, 10)
	dst = append(dst, ", value: "...)
	dst = append(dst, e.String()...)
	return append(dst, '\n')
}
