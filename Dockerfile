# idemchaos as a small image: one static binary FROM scratch.
#
#   docker build -t idemchaos .
#   docker run --rm --network host idemchaos run -s /scenarios/my.yaml --target http://127.0.0.1:8080
#
# The image runs the external environment (your service at a URL, Toxiproxy
# in-process) and `idemchaos check`. The local environment needs PostgreSQL
# server binaries, which this image leaves out; --env docker needs the host's
# Docker socket (-v /var/run/docker.sock:/var/run/docker.sock) and images built
# by `idemchaos images build` on the host.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/idemchaos ./cmd/idemchaos

FROM scratch
COPY --from=build /out/idemchaos /idemchaos
# Histories and reports are written here by default (mount it to keep them).
WORKDIR /work
ENV TMPDIR=/work
ENTRYPOINT ["/idemchaos"]
CMD ["--help"]
