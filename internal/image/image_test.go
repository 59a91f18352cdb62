package image

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const testCA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

// binary writes a file standing for an operator's binary.
func binary(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "operator")
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func spec(t *testing.T, platforms ...string) Spec {
	s := Spec{CABundle: []byte(testCA), Cmd: []string{"run"}, Source: "https://example.com/op", Revision: "abc123", Version: "v1.2.3"}
	for _, p := range platforms {
		pl, err := v1.ParsePlatform(p)
		if err != nil {
			t.Fatal(err)
		}
		s.Binaries = append(s.Binaries, Binary{Platform: *pl, Path: binary(t, "binary for "+p)})
	}
	return s
}

// files reads a layer's tar: name → header and content.
func files(t *testing.T, l v1.Layer) ([]string, map[string]*tar.Header, map[string]string) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	headers, contents := map[string]*tar.Header{}, map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		headers[h.Name], contents[h.Name] = h, string(data)
	}
	return names, headers, contents
}

func TestImageConfig(t *testing.T) {
	a, err := Build(spec(t, "linux/arm64"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Index != nil {
		t.Fatal("one platform made an index")
	}
	mt, err := a.Image.MediaType()
	if err != nil || mt != types.OCIManifestSchema1 {
		t.Errorf("media type %q, %v", mt, err)
	}
	cf, err := a.Image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if !slices.Equal(c.Entrypoint, []string{"/operator"}) || !slices.Equal(c.Cmd, []string{"run"}) {
		t.Errorf("entrypoint %q cmd %q", c.Entrypoint, c.Cmd)
	}
	if c.User != "65532:65532" || c.WorkingDir != "/" {
		t.Errorf("user %q workdir %q", c.User, c.WorkingDir)
	}
	if cf.OS != "linux" || cf.Architecture != "arm64" {
		t.Errorf("platform %s/%s", cf.OS, cf.Architecture)
	}
	epoch := time.Unix(0, 0).UTC()
	if !cf.Created.Time.Equal(epoch) {
		t.Errorf("created %s", cf.Created)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.source": "https://example.com/op", "org.opencontainers.image.revision": "abc123",
		"org.opencontainers.image.version": "v1.2.3", "org.opencontainers.image.created": "1970-01-01T00:00:00Z",
	} {
		if c.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], want)
		}
	}
}

func TestImageLayers(t *testing.T) {
	a, err := Build(spec(t, "linux/amd64"))
	if err != nil {
		t.Fatal(err)
	}
	layers, err := a.Image.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("%d layers, %v", len(layers), err)
	}
	names, headers, contents := files(t, layers[0])
	if !slices.IsSorted(names) {
		t.Errorf("entries not sorted: %q", names)
	}
	if contents["etc/ssl/certs/ca-certificates.crt"] != testCA {
		t.Errorf("CA bundle: %q", contents["etc/ssl/certs/ca-certificates.crt"])
	}
	if !strings.Contains(contents["etc/passwd"], "nonroot:x:65532:65532:") || !strings.Contains(contents["etc/group"], "nonroot:x:65532:") {
		t.Errorf("passwd %q group %q", contents["etc/passwd"], contents["etc/group"])
	}
	if h := headers["tmp/"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode != 0o1777 {
		t.Errorf("/tmp: %+v", h)
	}
	for n, h := range headers {
		if !h.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("%s: time %s", n, h.ModTime)
		}
		if n != "home/nonroot/" && (h.Uid != 0 || h.Gid != 0) {
			t.Errorf("%s: owner %d:%d", n, h.Uid, h.Gid)
		}
	}
	_, headers, contents = files(t, layers[1])
	if contents["operator"] != "binary for linux/amd64" || headers["operator"].Mode != 0o755 {
		t.Errorf("binary layer: %q mode %o", contents["operator"], headers["operator"].Mode)
	}
}

func TestImageReproducible(t *testing.T) {
	s := spec(t, "linux/amd64")
	a1, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	// Another copy of the same binary, read later: the same image.
	data, _ := os.ReadFile(s.Binaries[0].Path)
	s.Binaries[0].Path = binary(t, string(data))
	a2, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := a1.Digest()
	d2, _ := a2.Digest()
	if d1 != d2 {
		t.Errorf("two builds of one binary: %s and %s", d1, d2)
	}
	s.Created = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a3, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	if d3, _ := a3.Digest(); d3 == d1 {
		t.Error("another SOURCE_DATE_EPOCH gave the same digest: the time is not in the image")
	}
}

func TestImageIndex(t *testing.T) {
	a, err := Build(spec(t, "linux/amd64", "linux/arm64"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Index == nil {
		t.Fatal("two platforms made no index")
	}
	m, err := a.Index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIImageIndex || len(m.Manifests) != 2 {
		t.Fatalf("index %s with %d manifests", m.MediaType, len(m.Manifests))
	}
	for i, want := range []string{"linux/amd64", "linux/arm64"} {
		d := m.Manifests[i]
		if d.Platform == nil || d.Platform.String() != want {
			t.Errorf("manifest %d: platform %v, want %s", i, d.Platform, want)
			continue
		}
		img, err := a.Index.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, _ := img.ConfigFile()
		if cf.OS+"/"+cf.Architecture != want {
			t.Errorf("manifest %d: config says %s/%s", i, cf.OS, cf.Architecture)
		}
		layers, _ := img.Layers()
		_, _, contents := files(t, layers[1])
		if contents["operator"] != "binary for "+want {
			t.Errorf("manifest %d holds %q", i, contents["operator"])
		}
	}
	if err := WriteTarball(filepath.Join(t.TempDir(), "x.tar"), nil, a); !errors.Is(err, ErrTarballPlatforms) {
		t.Errorf("a tarball of an index: %v", err)
	}
}

func TestFindCABundle(t *testing.T) {
	t.Setenv("SSL_CERT_FILE", "")
	p := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p, []byte(testCA), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, from, err := FindCABundle(p); err != nil || string(data) != testCA || from != p {
		t.Errorf("--ca-bundle: %q %q %v", data, from, err)
	}
	t.Setenv("SSL_CERT_FILE", p)
	if _, from, err := FindCABundle(""); err != nil || from != p {
		t.Errorf("$SSL_CERT_FILE: %q %v", from, err)
	}
	saved := caBundlePaths
	defer func() { caBundlePaths = saved }()
	caBundlePaths = []string{filepath.Join(t.TempDir(), "none.crt")}
	t.Setenv("SSL_CERT_FILE", "")
	if _, _, err := FindCABundle(""); !errors.Is(err, ErrNoCABundle) || !strings.Contains(err.Error(), "--ca-bundle") {
		t.Errorf("no bundle: %v", err)
	}
	if _, err := Build(Spec{Binaries: []Binary{{Path: p}}}); err == nil {
		t.Error("an image without CA certificates was built")
	}
}

func TestParsePlatforms(t *testing.T) {
	got, err := ParsePlatforms("linux/amd64, linux/arm64,linux/amd64,linux/arm/v7")
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, p := range got {
		s = append(s, p.String())
	}
	if strings.Join(s, " ") != "linux/amd64 linux/arm64 linux/arm/v7" {
		t.Errorf("got %q", s)
	}
	for _, bad := range []string{"", "linux", ","} {
		if _, err := ParsePlatforms(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
