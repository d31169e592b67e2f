package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/rlmm-go/rlmm"
	"github.com/rlmm-go/rlmm/eventlog"
)

// A produce error is a refusal (nothing appended) only when the cluster
// denied the write or will never take the record; every other error leaves
// the record's fate unknown.
func TestProduceErrorsThatRefuse(t *testing.T) {
	tests := []struct {
		err     error
		refused bool
	}{
		{kerr.TopicAuthorizationFailed, true},
		{kerr.ClusterAuthorizationFailed, true},
		{kerr.SaslAuthenticationFailed, true},
		{kerr.MessageTooLarge, true},
		{kerr.RecordListTooLarge, true},
		{fmt.Errorf("after retries: %w", kerr.TopicAuthorizationFailed), true},
		{kerr.RequestTimedOut, false},
		{kerr.NotLeaderForPartition, false},
		{kerr.NotEnoughReplicas, false},
		{kerr.OutOfOrderSequenceNumber, false},
		{context.DeadlineExceeded, false},
		{errors.New("connection reset by peer"), false},
	}
	l := &Log{cfg: Config{Topic: "meta"}}
	for _, tc := range tests {
		t.Run(tc.err.Error(), func(t *testing.T) {
			err := l.produceError(3, tc.err)
			_, refused := errors.AsType[*eventlog.RefusedError](err)
			if refused != tc.refused {
				t.Errorf("produceError(%v) = %v: refused %v, want %v", tc.err, err, refused, tc.refused)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("produceError(%v) = %v does not wrap the cause", tc.err, err)
			}
			if errors.Is(err, rlmm.ErrClosed) {
				t.Errorf("produceError(%v) = %v claims the log is closed", tc.err, err)
			}
		})
	}
}
