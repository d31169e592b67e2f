// Package cursor is the subscription shared by the logs that read their
// records in place (memlog and filelog): a Set of consumed partitions with
// the next offset to deliver from each, and the Poll loop that waits for an
// append or a change to the set. Each log supplies only its partition check
// and the function that reads its records.
//
// Because a Set buffers nothing (a log's collect function reads straight
// from its storage at the Set's offsets), Add and Remove are exact: the next
// Poll delivers from the added offset and nothing of a removed partition.
//
// It uses only the standard library: a mutex, a map, and a broadcast channel
// closed and replaced on every change.
package cursor
