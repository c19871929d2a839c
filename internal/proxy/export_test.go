package proxy

import "time"

// SetConnectTimeout sets the upstream connect timeout of the proxies an
// in-process server creates from now on.
func SetConnectTimeout(s Server, d time.Duration) {
	s.(*inProcess).timeout = d
}
