package memlog_test

import (
	"testing"

	"github.com/rlmm-go/rlmm/eventlog"
	"github.com/rlmm-go/rlmm/eventlog/eventlogtest"
	"github.com/rlmm-go/rlmm/eventlog/memlog"
)

func TestConformance(t *testing.T) {
	eventlogtest.Run(t, func(t *testing.T, partitions int32) eventlog.Log {
		return memlog.New(partitions)
	})
}
