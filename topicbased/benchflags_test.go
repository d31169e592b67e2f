package topicbased

import "flag"

// The sizes of the benchmarks of docs/bench/topicbased.md and
// docs/bench/scale.md, flags of the test binary because the largest take
// minutes and gigabytes: go test -run '^$' -bench Restart ./topicbased/
// -args -restart-segments 1000000.
var (
	restartSegmentsFlag = flag.Int("restart-segments", 100_000,
		"live segments of the restart benchmarks' fixture (the target: 1000000)")
	restartHistoryFlag = flag.Int("restart-history", 0,
		"deleted segments per live one in the restart fixture's history")
	restartShapeFlag = flag.String("restart-shape", "reupload",
		"where the restart fixture's deleted segments lie: reupload or retention")
	restartDirFlag = flag.String("restart-dir", "",
		"a directory where the restart fixtures (filelog, kafka) outlive the run")
	hostingEventsFlag = flag.Int("hosting-events", 200_000,
		"events of the hosting benchmarks' log (the target: 1000000)")
	snapshotSegmentsFlag = flag.Int("snapshot-segments", 1_000_000,
		"finished segments of BenchmarkSnapshotWriteMemory")
)
