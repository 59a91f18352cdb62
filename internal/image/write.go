package image

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// ParseReference parses an image reference such as registry/repo:tag;
// insecure allows plain HTTP to the registry (a local one).
func ParseReference(ref string, insecure bool) (name.Reference, error) {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return nil, fmt.Errorf("invalid image reference %q (want e.g. ghcr.io/me/my-operator:v1): %w", ref, err)
	}
	return r, nil
}

// Push writes a to the registry of ref, with the credentials of the docker
// config (docker login, credential helpers), as docker push would.
func Push(ctx context.Context, ref name.Reference, a Artifact) error {
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	var err error
	if a.Index != nil {
		err = remote.WriteIndex(ref, a.Index, opts...)
	} else {
		err = remote.Write(ref, a.Image, opts...)
	}
	if err != nil {
		return fmt.Errorf("cannot push %s (log in with docker login, or give --insecure for a plain-HTTP registry): %w", ref, err)
	}
	return nil
}

// WriteLayout adds a to the OCI image layout in dir, made if it is not one
// yet, with ref (if any) as its org.opencontainers.image.ref.name.
func WriteLayout(dir, ref string, a Artifact) error {
	p, err := layout.FromPath(dir)
	if err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, "index.json")); !errors.Is(statErr, os.ErrNotExist) {
			return fmt.Errorf("%s is not an OCI image layout: %w", dir, err)
		}
		if p, err = layout.Write(dir, empty.Index); err != nil {
			return fmt.Errorf("cannot write the OCI layout %s: %w", dir, err)
		}
	}
	var opts []layout.Option
	if ref != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref}))
	}
	if a.Index != nil {
		err = p.AppendIndex(a.Index, opts...)
	} else {
		err = p.AppendImage(a.Image, opts...)
	}
	if err != nil {
		return fmt.Errorf("cannot write the OCI layout %s: %w", dir, err)
	}
	return nil
}

// ErrTarballPlatforms: a docker tarball holds one image.
var ErrTarballPlatforms = errors.New("a tarball for docker load holds one platform's image: give one --platform")

// WriteTarball writes a as a tarball that docker load takes, tagged ref.
func WriteTarball(file string, ref name.Reference, a Artifact) error {
	if a.Index != nil {
		return ErrTarballPlatforms
	}
	tag, ok := ref.(name.Tag)
	if !ok {
		return fmt.Errorf("a tarball's image is named by a tag, not %s", ref)
	}
	if err := tarball.WriteToFile(file, tag, a.Image); err != nil {
		return fmt.Errorf("cannot write the tarball %s: %w", file, err)
	}
	return nil
}
