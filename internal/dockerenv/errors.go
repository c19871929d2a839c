package dockerenv

import "errors"

// ErrDaemonUnreachable means the Docker Engine did not answer. Its text is
// one line saying how to start it.
var ErrDaemonUnreachable = errors.New("docker daemon unreachable: start it (e.g. `sudo systemctl start docker` or `sudo dockerd &`), or set DOCKER_HOST")

// ErrImageMissing means an image is neither present locally nor pullable;
// the wrapping error names it and says how to build local images.
var ErrImageMissing = errors.New("image not available")

// ErrNoPostgres means no PostgreSQL server binaries were found to build the
// local Postgres image from.
var ErrNoPostgres = errors.New("no PostgreSQL server binaries to build the Postgres image from")
