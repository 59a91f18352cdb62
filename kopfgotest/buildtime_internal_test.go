package kopfgotest

import (
	"errors"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/e2e/cluster"
)

func TestBuildTimeError(t *testing.T) {
	etcd := cluster.Missing{Name: "etcd", ColdBuild: 4 * time.Minute}
	api := cluster.Missing{Name: "kube-apiserver", ColdBuild: 12 * time.Minute}
	for _, tc := range []struct {
		name    string
		missing []cluster.Missing
		left    time.Duration
		refused bool
	}{
		{"both, go test's default timeout", []cluster.Missing{etcd, api}, 10 * time.Minute, true},
		{"kube-apiserver, default timeout", []cluster.Missing{api}, 10 * time.Minute, true},
		{"etcd only, default timeout", []cluster.Missing{etcd}, 10 * time.Minute, false},
		{"both, -timeout 30m", []cluster.Missing{etcd, api}, 30 * time.Minute, false},
		{"both, just short", []cluster.Missing{etcd, api}, 17*time.Minute + 59*time.Second, true},
	} {
		err := buildTimeError(tc.missing, tc.left)
		if refused := errors.Is(err, errNoTimeToBuild); refused != tc.refused {
			t.Errorf("%s: %v, want refused=%v", tc.name, err, tc.refused)
		}
	}
}
