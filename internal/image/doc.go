// Package image makes an operator's OCI image from its binaries, with no
// docker daemon and nothing pulled: what `kopfgo build --image` writes.
//
// An operator built by kopfgo is one static binary. All it needs around it
// is what a distroless "static" base gives: the CA certificates to verify
// the API server and webhooks' peers, a non-root user (uid 65532 "nonroot",
// as distroless names it) in /etc/passwd and /etc/group, and a writable
// /tmp. So the base is made here, from the build machine's CA bundle, as
// one layer; the binary is a second layer per platform. Several platforms
// make an OCI image index.
//
// Images are reproducible: the same binaries and CA bundle give the same
// digest. Every timestamp is one fixed time (SOURCE_DATE_EPOCH, else the
// Unix epoch), tar entries are sorted with fixed owners and modes, and gzip
// writes no time or name. go-containerregistry assembles, pushes and writes
// the images (mutate, remote, layout, tarball): its manifests are the ones
// registries and docker are tested against.
package image
