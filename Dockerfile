# syntax=docker/dockerfile:1

# Build: pg_query_go compiles PostgreSQL's parser with cgo.
FROM golang:1.26-bookworm AS build
WORKDIR /src
ENV CGO_ENABLED=1
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN go build -trimpath -ldflags="-s -w" -o /out/deeplaked ./cmd/deeplaked

# Run.
FROM debian:bookworm-slim
RUN apt-get update \
	&& apt-get install -y --no-install-recommends ca-certificates \
	&& rm -rf /var/lib/apt/lists/* \
	&& useradd --system --home-dir /data --shell /usr/sbin/nologin deeplaked \
	&& mkdir -p /data \
	&& chown deeplaked:deeplaked /data \
	&& chmod 0700 /data
COPY --from=build /out/deeplaked /usr/local/bin/deeplaked
ENV DEEPLAKED_DATA_DIR=/data \
	DEEPLAKED_LISTEN=0.0.0.0:5433
VOLUME /data
EXPOSE 5433
USER deeplaked
ENTRYPOINT ["/usr/local/bin/deeplaked"]
