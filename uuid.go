package rlmm

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
)

// Uuid is a Kafka Uuid: 16 bytes, most significant byte first (the big-endian
// most significant 64 bits followed by the least significant 64 bits).
type Uuid [16]byte

// ZeroUuid is Kafka's reserved all-zero Uuid (Uuid.ZERO_UUID).
var ZeroUuid = Uuid{}

// OneUuid is Kafka's reserved Uuid with most significant bits 0 and least
// significant bits 1 (Uuid.ONE_UUID, the metadata topic id).
var OneUuid = UuidFromBits(0, 1)

// UuidFromBits builds a Uuid from Kafka's two 64-bit halves.
func UuidFromBits(msb, lsb int64) Uuid {
	var u Uuid
	binary.BigEndian.PutUint64(u[:8], uint64(msb))
	binary.BigEndian.PutUint64(u[8:], uint64(lsb))
	return u
}

// MostSignificantBits returns the high 64 bits as Java's long.
func (u Uuid) MostSignificantBits() int64 { return int64(binary.BigEndian.Uint64(u[:8])) }

// LeastSignificantBits returns the low 64 bits as Java's long.
func (u Uuid) LeastSignificantBits() int64 { return int64(binary.BigEndian.Uint64(u[8:])) }

// String returns Kafka's text form: URL-safe base64 of the 16 bytes without
// padding, always 22 characters.
func (u Uuid) String() string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// MarshalText encodes the Uuid in Kafka's text form.
func (u Uuid) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// UnmarshalText parses Kafka's text form.
func (u *Uuid) UnmarshalText(b []byte) error {
	v, err := ParseUuid(string(b))
	if err != nil {
		return err
	}
	*u = v
	return nil
}

// ParseUuid parses Kafka's text form of a Uuid (22 characters of URL-safe
// base64 without padding). The error wraps ErrInvalidArgument.
func ParseUuid(s string) (Uuid, error) {
	var u Uuid
	if len(s) != 22 {
		return u, fmt.Errorf("%w: uuid %q: want 22 characters of URL-safe base64, got %d", ErrInvalidArgument, s, len(s))
	}
	n, err := base64.RawURLEncoding.Strict().Decode(u[:], []byte(s))
	if err != nil || n != 16 {
		return Uuid{}, fmt.Errorf("%w: uuid %q: not URL-safe base64 of 16 bytes", ErrInvalidArgument, s)
	}
	return u, nil
}

// RandomUuid returns a random Uuid that, like Kafka's Uuid.randomUuid, is
// never one of the reserved values (ZeroUuid, OneUuid) and never prints with
// a leading '-', which command-line tools would take for a flag.
func RandomUuid() Uuid {
	for {
		var u Uuid
		if _, err := rand.Read(u[:]); err != nil {
			// crypto/rand.Read never fails on supported platforms (Go 1.24+).
			panic(err)
		}
		// Version 4, IETF variant, as java.util.UUID.randomUUID sets them.
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
		if u == ZeroUuid || u == OneUuid || u.String()[0] == '-' {
			continue
		}
		return u
	}
}
