package proxy

import "errors"

// ErrProxyExists means a proxy with that name already exists.
var ErrProxyExists = errors.New("proxy already exists")

// ErrProxyNotFound means no proxy has that name.
var ErrProxyNotFound = errors.New("proxy not found")

// ErrToxicExists means the proxy already has a toxic with that name.
var ErrToxicExists = errors.New("toxic already exists")

// ErrToxicNotFound means the proxy has no toxic with that name.
var ErrToxicNotFound = errors.New("toxic not found")

// ErrBadToxic means the toxic's type, stream or attributes were rejected.
var ErrBadToxic = errors.New("invalid toxic")

// ErrClosed is returned by every method after [Server.Close].
var ErrClosed = errors.New("proxy server closed")

// ErrUnreachable means an external toxiproxy-server did not answer.
var ErrUnreachable = errors.New("toxiproxy server unreachable")
