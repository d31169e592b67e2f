package kafkatest

import "fmt"

// FreePorts returns n distinct free TCP ports of 127.0.0.1 (1 <= n <= 100),
// chosen as a cluster's are: for a script that starts a server of its own
// beside the brokers (scripts/seaweedfs.sh, through `kafkatest ports N`).
func FreePorts(n int) ([]int, error) {
	if n < 1 || n > 100 {
		return nil, fmt.Errorf("kafkatest: the number of ports must be 1..100, got %d", n)
	}
	return freePorts(n)
}
