package layout

import (
	"encoding/base64"

	"github.com/rlmm-go/rlmm"
)

// The pieces of file names both built-in layouts share: Kafka's 20-digit
// zero-padded offsets and its 22-character ids.

const (
	offsetDigits = 20
	idChars      = 22
)

// b64 maps a URL-safe base64 character to its 6 bits, 0xff for others.
var b64 = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := range len(alphabet) {
		t[alphabet[i]] = byte(i)
	}
	return t
}()

// parseID decodes Kafka's 22-character id without allocating. It accepts
// only the canonical form (the 4 unused bits of the last character zero), so
// one id has one spelling.
func parseID(s string) (u rlmm.Uuid, ok bool) {
	if len(s) != idChars {
		return u, false
	}
	var acc uint32
	bits, o := 0, 0
	for i := 0; i < idChars; i++ {
		v := b64[s[i]]
		if v == 0xff {
			return rlmm.Uuid{}, false
		}
		acc = acc<<6 | uint32(v)
		bits += 6
		if bits >= 8 {
			bits -= 8
			u[o] = byte(acc >> bits)
			o++
		}
	}
	if acc&(1<<bits-1) != 0 {
		return rlmm.Uuid{}, false
	}
	return u, true
}

// parseOffset decodes Kafka's 20-digit zero-padded offset; it rejects any
// other length, non-digits and values beyond int64.
func parseOffset(s string) (int64, bool) {
	if len(s) != offsetDigits {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (1<<63-1-uint64(c-'0'))/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return int64(v), true
}

// parsePartition decodes a non-negative decimal int32 without leading zeros.
func parsePartition(s string) (int32, bool) {
	if len(s) == 0 || len(s) > 10 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if v > 1<<31-1 {
		return 0, false
	}
	return int32(v), true
}

// appendOffset appends off as 20 zero-padded digits (negative offsets never
// reach here: rlmm validates start offsets).
func appendOffset(b []byte, off int64) []byte {
	var d [offsetDigits]byte
	v := uint64(max(off, 0))
	for i := offsetDigits - 1; i >= 0; i-- {
		d[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, d[:]...)
}

// parseFile splits "<20-digit offset>-<22-char id>.<ext>".
func parseFile(name string) (off int64, id rlmm.Uuid, ext string, ok bool) {
	const head = offsetDigits + 1 + idChars
	if len(name) < head+2 || name[offsetDigits] != '-' || name[head] != '.' {
		return 0, id, "", false
	}
	if off, ok = parseOffset(name[:offsetDigits]); !ok {
		return 0, id, "", false
	}
	if id, ok = parseID(name[offsetDigits+1 : head]); !ok {
		return 0, id, "", false
	}
	return off, id, name[head+1:], true
}

// splitTopicID splits "<topic>-<22-char topic id>" (a topic name may hold
// '-', an id too: the id is the last 22 characters).
func splitTopicID(s string) (topic string, id rlmm.Uuid, ok bool) {
	if len(s) < idChars+2 || s[len(s)-idChars-1] != '-' {
		return "", id, false
	}
	if id, ok = parseID(s[len(s)-idChars:]); !ok {
		return "", id, false
	}
	return s[:len(s)-idChars-1], id, true
}

// appendID appends Kafka's text form of id.
func appendID(b []byte, id rlmm.Uuid) []byte { return base64.RawURLEncoding.AppendEncode(b, id[:]) }
