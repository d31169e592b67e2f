// Command probe is the small Go helper of scripts/kafka.sh: it picks free TCP
// ports on 127.0.0.1, generates a Kafka cluster id, and waits until a Kafka
// broker answers a metadata request. It uses franz-go's kadm (the client the
// project already depends on) so "ready" means "a real Kafka client can list
// the brokers", not merely "the port accepts connections".
//
// Usage:
//
//	probe ports N            print N free ports, one per line
//	probe cluster-id         print a random Kafka Uuid (base64url, 22 chars)
//	probe wait ADDR TIMEOUT [NODE]
//	                         wait until the broker at ADDR lists its brokers
//	                         (with NODE: until the list holds that node id)
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: probe ports N | cluster-id | wait ADDR TIMEOUT")
	}
	switch args[0] {
	case "ports":
		if len(args) != 2 {
			return errors.New("usage: probe ports N")
		}
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 1 || n > 16 {
			return fmt.Errorf("ports: N must be 1..16, got %q", args[1])
		}
		ports, err := freePorts(n)
		if err != nil {
			return err
		}
		for _, p := range ports {
			fmt.Println(p)
		}
		return nil
	case "cluster-id":
		id, err := clusterID()
		if err != nil {
			return err
		}
		fmt.Println(id)
		return nil
	case "wait":
		if len(args) != 3 && len(args) != 4 {
			return errors.New("usage: probe wait ADDR TIMEOUT [NODE]")
		}
		timeout, err := time.ParseDuration(args[2])
		if err != nil {
			return fmt.Errorf("wait: bad timeout %q: %w", args[2], err)
		}
		node := int32(-1)
		if len(args) == 4 {
			n, err := strconv.ParseInt(args[3], 10, 32)
			if err != nil || n < 0 {
				return fmt.Errorf("wait: bad node id %q", args[3])
			}
			node = int32(n)
		}
		return waitBroker(args[1], timeout, node)
	default:
		return fmt.Errorf("unknown command %q", args[0])
	}
}

// freePorts binds n listeners at once (so the ports are distinct), notes
// their ports and releases them. Another process could take a port before
// the broker binds it; the broker then fails to start and says so.
func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("ports: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// clusterID returns a random Kafka Uuid in Kafka's text form. Kafka rejects
// the all-zero and the reserved value 1, and ids starting with '-' confuse
// its command-line tools, so those are drawn again.
func clusterID() (string, error) {
	for {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("cluster-id: %w", err)
		}
		s := base64.RawURLEncoding.EncodeToString(b[:])
		reserved := true
		for i, v := range b {
			if (i < 15 && v != 0) || (i == 15 && v > 1) {
				reserved = false
			}
		}
		if !reserved && s[0] != '-' {
			return s, nil
		}
	}
}

// waitBroker retries a ListBrokers call until it succeeds (and, when node is
// not -1, lists that node id) or timeout passes.
func waitBroker(addr string, timeout time.Duration, node int32) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		last = listBrokers(ctx, addr, node)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("broker at %s did not answer within %s: %w", addr, timeout, last)
		case <-time.After(50 * time.Millisecond): // the start is timed by benchmarks: look often
		}
	}
}

func listBrokers(ctx context.Context, addr string, node int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTimeout(2*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	attempt, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	brokers, err := kadm.NewClient(cl).ListBrokers(attempt)
	if err != nil {
		return err
	}
	if len(brokers) == 0 {
		return errors.New("metadata lists no broker")
	}
	if node >= 0 && !slices.Contains(brokers.NodeIDs(), node) {
		return fmt.Errorf("metadata lists nodes %v, not yet %d", brokers.NodeIDs(), node)
	}
	return nil
}
