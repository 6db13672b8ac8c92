# layover's durable host in a container (docs/operating.md):
#   docker build -t layover .
#   docker run -d -v layover-state:/var/lib/layover layover serve --listen 0.0.0.0:9464 --token-file /run/secrets/layover-token
# A static build (CGO_ENABLED=0: the SQLite store is pure Go) on a
# distroless base that holds CA certificates and a non-root user, nothing
# more. Jobs run inside this image: give it the tools they need by building
# FROM a fuller base instead.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/layover ./cmd/layover \
 && mkdir -p /out/state

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/layover /usr/local/bin/layover
# The state directory exists, owned by nonroot, so that a new volume
# mounted there starts writable.
COPY --from=build --chown=65532:65532 /out/state /var/lib/layover
USER nonroot:nonroot
ENV LAYOVER_STORE=/var/lib/layover/layover.db
VOLUME ["/var/lib/layover"]
WORKDIR /var/lib/layover
EXPOSE 9464
ENTRYPOINT ["/usr/local/bin/layover"]
CMD ["serve"]
