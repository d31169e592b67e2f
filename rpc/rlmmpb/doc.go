// Package rlmmpb is the generated Go code of proto/rlmm/v1/rlmm.proto: the
// messages and the gRPC service (RemoteLogMetadata) between a Kafka broker's
// rlmm plugin and `rlmm serve`. Everything here but this file is generated
// by `make proto` (buf with protoc-gen-go and protoc-gen-go-grpc, the go
// tools of go.mod); edit the .proto, never the .pb.go files. The server is
// package server.
package rlmmpb
