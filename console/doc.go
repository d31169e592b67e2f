// Package console is the engine of `rlmm console`: a read-only web page,
// with its JSON API, over the view of a remote log metadata log (package
// internal/view) and, when remote storage is given, scrub's findings
// (package scrub).
//
// The page shows the topics with remote bytes (view.Sizes), per user
// partition a timeline of its remote segments by offset (coloured by leader
// epoch, hatched while COPY_SEGMENT_STARTED or DELETE_SEGMENT_STARTED, with
// the gaps, overlaps and stuck segments of view.CheckSegments marked), and
// the lists of anomalies (verify's) and of scrub's findings. Nothing here
// decides what a gap, an overlap or a size is: those rules are the view's,
// and the console only lays out what they found.
//
// A Snapshot is one reading of the log, immutable once made (NewSnapshot,
// pure: no I/O); a Server serves the newest one it was given (Set) over
// HTTP: GET only, no endpoint changes anything, in the log, the storage or
// the console. Refresh re-reads on an interval with a caller's load
// function, keeping the served snapshot until the next one is complete, so
// at most two views are in memory at once, each the size of `rlmm inspect`'s
// (the segments not yet DELETE_SEGMENT_FINISHED); a partition's API answer
// lists at most MaxSegments segments.
//
// The page is plain HTML, CSS and JavaScript drawing SVG, embedded in the
// binary (embed.FS): no CDN, no build step, nothing fetched at run time, so
// it works on an offline machine. The HTTP side is the standard library's
// net/http (its method-and-path patterns route the API); no web framework
// is needed for six read-only GET endpoints.
package console
