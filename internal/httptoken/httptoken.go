// Package httptoken says whether a string is an HTTP token (RFC 9110
// §5.6.2): the form of a method and of a header field name. The driver
// refuses a request that is not one before it reaches the wire, and the
// CLI refuses a flag naming a header that could never match.
package httptoken

import "strings"

// Valid reports whether s is a non-empty RFC 9110 token.
func Valid(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
