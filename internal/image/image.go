package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's layout: the binary, and its non-root user (distroless's).
const (
	BinaryPath = "/operator"
	UID        = 65532
	UserName   = "nonroot"
	CABundle   = "/etc/ssl/certs/ca-certificates.crt"
)

// Binary is an operator binary built for one platform.
type Binary struct {
	Platform v1.Platform
	Path     string
}

// Spec is what goes into the image besides the binaries.
type Spec struct {
	Binaries []Binary
	// CABundle is the PEM bundle installed as CABundle.
	CABundle []byte
	// Cmd is the default arguments (the Deployment's args replace them).
	Cmd []string
	// Created is every timestamp in the image; zero: the Unix epoch.
	Created time.Time
	// Source, Revision and Version become the OCI labels
	// org.opencontainers.image.*; empty ones are left out.
	Source, Revision, Version string
}

// Artifact is a built image: Image for one platform, Index for several.
type Artifact struct {
	Image v1.Image
	Index v1.ImageIndex
}

// Digest is the digest a registry names the artifact by.
func (a Artifact) Digest() (v1.Hash, error) {
	if a.Index != nil {
		return a.Index.Digest()
	}
	return a.Image.Digest()
}

// Build assembles the image of spec.
func Build(spec Spec) (Artifact, error) {
	if len(spec.Binaries) == 0 {
		return Artifact{}, errors.New("no binary to put into the image")
	}
	if len(spec.CABundle) == 0 {
		return Artifact{}, errors.New("no CA certificates for the image: give a PEM bundle (--ca-bundle)")
	}
	created := spec.Created
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	created = created.UTC()
	base, err := layerOf(baseFiles(spec.CABundle), created)
	if err != nil {
		return Artifact{}, err
	}
	var images []v1.Image
	for _, b := range spec.Binaries {
		img, err := build(spec, b, base, created)
		if err != nil {
			return Artifact{}, fmt.Errorf("the image for %s: %w", b.Platform, err)
		}
		images = append(images, img)
	}
	if len(images) == 1 {
		return Artifact{Image: images[0]}, nil
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for i, img := range images {
		p := spec.Binaries[i].Platform
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return Artifact{Index: idx}, nil
}

func build(spec Spec, b Binary, base v1.Layer, created time.Time) (v1.Image, error) {
	bin, err := os.ReadFile(b.Path)
	if err != nil {
		return nil, err
	}
	app, err := layerOf([]file{{name: BinaryPath, mode: 0o755, data: bin}}, created)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	history := func(by string) v1.History {
		return v1.History{Created: v1.Time{Time: created}, CreatedBy: by, Comment: "kopfgo build"}
	}
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: history("the base: CA certificates, user " + UserName + ", /tmp"), MediaType: types.OCILayer},
		mutate.Addendum{Layer: app, History: history("the operator's binary " + BinaryPath), MediaType: types.OCILayer})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: created}
	cf.OS, cf.Architecture, cf.Variant, cf.OSVersion = b.Platform.OS, b.Platform.Architecture, b.Platform.Variant, b.Platform.OSVersion
	labels := map[string]string{"org.opencontainers.image.created": created.Format(time.RFC3339)}
	for k, v := range map[string]string{"source": spec.Source, "revision": spec.Revision, "version": spec.Version} {
		if v != "" {
			labels["org.opencontainers.image."+k] = v
		}
	}
	uid := strconv.Itoa(UID)
	cf.Config = v1.Config{
		Entrypoint: []string{BinaryPath},
		Cmd:        spec.Cmd,
		User:       uid + ":" + uid,
		WorkingDir: "/",
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=" + CABundle},
		Labels:     labels,
	}
	return mutate.ConfigFile(img, cf)
}

// file is one entry of a layer: a directory if data is nil and dir is set.
type file struct {
	name string
	mode int64
	dir  bool
	data []byte
}

func baseFiles(ca []byte) []file {
	uid := strconv.Itoa(UID)
	passwd := "root:x:0:0:root:/root:/sbin/nologin\n" +
		UserName + ":x:" + uid + ":" + uid + ":" + UserName + ":/home/" + UserName + ":/sbin/nologin\n"
	group := "root:x:0:\n" + UserName + ":x:" + uid + ":\n"
	return []file{
		{name: "/etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "/etc/group", mode: 0o644, data: []byte(group)},
		{name: CABundle, mode: 0o644, data: ca},
		{name: "/tmp", mode: 0o1777, dir: true},
		{name: "/home/" + UserName, mode: 0o700, dir: true},
	}
}

// layerOf writes files, and the directories above them, as a gzipped tar
// layer that is the same for the same files: sorted, with one time and
// root's ownership, except the user's home, which is the user's.
func layerOf(files []file, created time.Time) (v1.Layer, error) {
	entries := map[string]file{}
	for _, f := range files {
		name := strings.TrimPrefix(f.name, "/")
		entries[name] = f
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if _, ok := entries[d]; !ok {
				entries[d] = file{name: d, mode: 0o755, dir: true}
			}
		}
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	slices.Sort(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		f := entries[n]
		h := &tar.Header{Name: n, Mode: f.mode, ModTime: created, Format: tar.FormatPAX, Uname: "root", Gname: "root"}
		if n == "home/"+UserName {
			h.Uid, h.Gid, h.Uname, h.Gname = UID, UID, UserName, UserName
		}
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, n+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// caBundlePaths are where Linux distributions keep the system's CA bundle,
// as Go's crypto/x509 looks for it.
var caBundlePaths = []string{
	"/etc/ssl/certs/ca-certificates.crt",                // Debian, Ubuntu, Gentoo, Arch
	"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora, RHEL 6
	"/etc/ssl/ca-bundle.pem",                            // openSUSE
	"/etc/pki/tls/cacert.pem",                           // OpenELEC
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // CentOS, RHEL 7
	"/etc/ssl/cert.pem",                                 // Alpine, macOS
}

// ErrNoCABundle: the build machine has no CA bundle where one is expected.
var ErrNoCABundle = errors.New("no CA certificate bundle found on this machine")

// FindCABundle reads path, or else $SSL_CERT_FILE, or else the system's
// bundle.
func FindCABundle(path string) ([]byte, string, error) {
	if path != "" {
		data, err := os.ReadFile(path)
		return data, path, err
	}
	candidates := caBundlePaths
	if env := os.Getenv("SSL_CERT_FILE"); env != "" {
		candidates = append([]string{env}, candidates...)
	}
	for _, p := range candidates {
		if data, err := os.ReadFile(p); err == nil && len(data) > 0 {
			return data, p, nil
		}
	}
	return nil, "", fmt.Errorf("%w (looked at $SSL_CERT_FILE and %s): give one with --ca-bundle PATH",
		ErrNoCABundle, strings.Join(caBundlePaths, ", "))
}

// ParsePlatforms parses "linux/amd64,linux/arm64,linux/arm/v7".
func ParsePlatforms(s string) ([]v1.Platform, error) {
	var out []v1.Platform
	for p := range strings.SplitSeq(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		parsed, err := v1.ParsePlatform(p)
		if err != nil || parsed.OS == "" || parsed.Architecture == "" {
			return nil, fmt.Errorf("invalid platform %q: want OS/ARCH[/VARIANT], e.g. linux/amd64", p)
		}
		if slices.ContainsFunc(out, func(o v1.Platform) bool { return o.Equals(*parsed) }) {
			continue
		}
		out = append(out, *parsed)
	}
	if len(out) == 0 {
		return nil, errors.New("no platform: give e.g. --platform linux/amd64,linux/arm64")
	}
	return out, nil
}
