// Package consoletest holds the known metadata log the console's tests draw:
// one user partition with two leader epochs, a segment spanning both, two
// gaps, an overlap, a stuck copy and a deletion in progress, and a second
// topic with one segment. The handler tests (package console) apply its
// records to a view; the browser test (test/browser) writes them to
// an embedded log and has `rlmm console --dir` read them. Both then compare
// what they get with the expectations here, so the fixture and its answers
// live in one place.
package consoletest
