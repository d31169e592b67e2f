// Package faultnet puts a proxy on 127.0.0.1 in front of every listener of
// a test cluster and breaks the traffic through it on demand: cut (both
// ways or one way), delay, loss, the partition of one node, and restore.
// The fault tests use it to give a cluster the network a cluster meets in
// years of service (a partition, a slow or lossy link) in seconds, without
// root, iptables or a network namespace.
//
// The proxies are Shopify's toxiproxy run in this process (its Go library;
// no toxiproxy server binary, no HTTP API). Net.Proxy has the shape of
// kafkatest.Config.Proxy: the harness asks it once per listener of each
// node, and every client (the other nodes, the controllers' quorum, each
// sidecar's Kafka client, the test's clients) then connects through it.
// Finding a client's process reads /proc: Linux only, as the harness is.
//
// What each fault is at this level (TCP streams, not packets):
//
//   - Cut: the link's bytes are dropped (a toxic of faultnet's that does
//     what toxiproxy's timeout toxic does with no timeout, without leaving
//     a chain blocked when it is removed) in one direction or both;
//     connections stay open and new ones are accepted, so a client sees
//     what a partition looks like to it: requests that never get an
//     answer, until its own timeout. Restore closes every connection that
//     was open across the cut, because dropping bytes from the middle of a
//     TCP stream leaves a stream no protocol can resume; a real partition
//     that outlasts the clients' timeouts ends the same way, in new
//     connections.
//   - Delay: every chunk of bytes waits latency ± jitter (toxiproxy's
//     latency toxic), in one direction or both; order and content are kept.
//   - Loss: TCP has no packet loss above it: a lost segment is sent again,
//     so what a 5% loss does to the application is latency, not missing
//     bytes. Loss(rate) models that: each chunk is lost with probability
//     rate, and each loss costs one retransmission timeout (RTO, 200 ms,
//     Linux's minimum) doubled for every further loss of the same chunk, in
//     order (the stream waits behind the lost chunk, as TCP's in-order
//     delivery does). Connection resets (toxiproxy's reset_peer, whose
//     toxicity is decided once per connection, not per packet) are a
//     different fault and not what "5% loss" means; a reset is what Cut
//     followed by Restore gives.
//   - Partition(node): node is cut off from the other nodes, both ways:
//     every link into node from any other client, and every link into
//     another node from node's own processes. Every node reaches a
//     listener at the one address the listener advertises, so a link's
//     front finds each connection's client process from its socket
//     (/proc/net/tcp and the processes' descriptors) and Options.NodeOf
//     names its node (the harness knows each broker's process group, which
//     its sidecar joins); each (link, client node) pair gets its own
//     toxiproxy proxy, and a fault is a rule over pairs, applied also to a
//     pair whose first connection comes later. Without NodeOf every client
//     is 0 and a partition cuts only the links into node: as follower it
//     could still fetch, as controller voter still send. CutFrom cuts one
//     client's connections to one link (a sidecar, if NodeOf gives it an
//     id apart from its broker's, from the metadata topic's leader).
//
// A connection's two directions run through toxiproxy's links (its toxic
// chains) without toxiproxy's own listener: the front dials the upstream
// and hands both ends to the pair's links, each destination wrapped so that
// once it fails the link keeps draining its chain (toxiproxy's link would
// stop reading it and leave every stage behind blocked for ever).
//
// Every Net ends with Close, which stops every front, removes every fault,
// closes every connection through the proxies and waits until every
// goroutine, faultnet's and toxiproxy's links', has ended.
package faultnet
