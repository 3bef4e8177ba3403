# For users with a container engine; hack/images.sh builds the same images without one.
#   docker build --build-arg BINARY=olm-operator     -t olm-rs/olm-operator .
#   docker build --build-arg BINARY=catalog-operator -t olm-rs/catalog-operator .
#   docker build --build-arg BINARY=package-server   -t olm-rs/package-server .
#   docker build --build-arg BINARY=registry --target registry -t olm-rs/registry .
ARG BINARY=olm-operator

FROM rust:1.89-bookworm AS build
ARG BINARY
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p ${BINARY} && cp target/release/${BINARY} /out-binary

# The registry with the sample catalog (deploy/samples/catalog) baked in at /catalog.
FROM gcr.io/distroless/cc-debian12:nonroot AS registry
COPY --from=build /out-binary /usr/local/bin/registry
COPY deploy/samples/catalog /catalog
USER 65532:65532
EXPOSE 50051
ENTRYPOINT ["/usr/local/bin/registry"]
CMD ["serve", "/catalog"]

# olm-operator, catalog-operator or package-server (distroless cc: glibc + libgcc_s, which is all the binaries link).
FROM gcr.io/distroless/cc-debian12:nonroot
ARG BINARY
# Owned by the image user and writable by group 0, so the kernel lets the operator page out its own code under
# that user or any UID run with group 0 (docs/pod-security.md); the pods mount the root filesystem read-only.
COPY --from=build --chown=65532:0 --chmod=0575 /out-binary /usr/local/bin/operator
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/operator"]
CMD ["run"]
