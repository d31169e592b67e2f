// Package atomicfile replaces a file so that a crash leaves either the old
// content or the new one, never a mix: the new content goes to a temporary
// file in the same directory, which is fsynced, renamed over the target,
// and then the directory is fsynced so that the rename itself is durable.
//
// It is the one copy of that sequence in the module: the snapshot writer
// (topicbased, through the snapshot package's Writer) and filelog's MANIFEST
// and journal use it.
//
// Why not github.com/google/renameio/v2 (v2.0.2 resolves): its
// PendingFile.CloseAtomicallyReplace fsyncs the file and renames it but
// never fsyncs the directory, so the rename may not survive a power
// failure; it also closes the file, while filelog keeps its journal open
// after installing it. The sequence is a dozen lines, so it is written
// here rather than wrapped.
//
// Temporary files are named "<target>.<random>.tmp"; a caller that may
// crash mid-write removes "<target>.*.tmp" (or any "*.tmp" of a directory it
// owns) when it starts.
package atomicfile
