package handling

import (
	"errors"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/internal/handlers"
)

// The progress record keeps what Kopf keeps, str() of the outcome's
// exception: a permanent error's own text, a retried error's own text, and
// the whole line where Kopf wraps the error in its timeout or retries error
// (compat: persistence-progress).
func TestJudgeRecordsKopfsMessages(t *testing.T) {
	boom := errors.New("boom")
	for _, tt := range []struct {
		name string
		h    Handler
		err  error
		want string
	}{
		{"permanent", Handler{}, &handlers.PermanentError{Err: boom}, "boom"},
		{"errors mode permanent", Handler{Errors: handlers.ErrorsPermanent}, boom, "boom"},
		{"temporary", Handler{}, &handlers.TemporaryError{Err: boom, Delay: time.Second}, "boom"},
		{"arbitrary, retried", Handler{}, boom, "boom"},
		{"temporary over the retries", Handler{Retries: 1}, &handlers.TemporaryError{Err: boom, Delay: time.Second},
			"Handler 'h' failed temporarily but will exceed 1 retries: boom"},
		{"arbitrary over the retries", Handler{Retries: 1}, boom,
			"Handler 'h' failed with an exception and will stop now (it would exceed 1 retries on the next attempt): boom"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.h.ID = "h"
			v := Judge(&tt.h, "Handler 'h'", tt.err, 1, 0, time.Minute)
			if v.Message != tt.want {
				t.Errorf("Message = %q, want %q", v.Message, tt.want)
			}
		})
	}
}

// A permanent failure carries its error: Kopf's HandlerTimeoutError and
// HandlerRetriesError where the Timeout or the Retries end the handler
// (before an attempt, or by the look-ahead after one), wrapping the
// handler's last error; the handler's own error otherwise.
func TestFailuresCarryTheirErrors(t *testing.T) {
	boom := errors.New("boom")
	timeout := func(h *Handler) { h.Timeout = 5 * time.Second }
	retries := func(h *Handler) { h.Retries = 2 }
	tests := []struct {
		name    string
		opts    func(*Handler)
		err     error
		retries int
		runtime time.Duration
		want    func(error) bool
	}{
		{"permanent", nil, &handlers.PermanentError{Err: boom}, 1, 0, func(err error) bool { return errors.Is(err, boom) }},
		{"errors mode permanent", func(h *Handler) { h.Errors = handlers.ErrorsPermanent }, boom, 1, 0, func(err error) bool { return err == boom }},
		{"temporary past the timeout", timeout, &handlers.TemporaryError{Err: boom, Delay: 10 * time.Second}, 1, 0, func(err error) bool {
			var te *handlers.HandlerTimeoutError
			return errors.As(err, &te) && te.ID == "h" && te.Timeout == 5*time.Second && errors.Is(err, boom)
		}},
		{"backoff past the timeout", func(h *Handler) { timeout(h); h.Backoff = 10 * time.Second }, boom, 1, 0, func(err error) bool {
			var te *handlers.HandlerTimeoutError
			return errors.As(err, &te) && errors.Is(err, boom) && errors.Is(err, &handlers.PermanentError{})
		}},
		{"the last retry", retries, boom, 2, 0, func(err error) bool {
			var re *handlers.RetriesExceededError
			return errors.As(err, &re) && re.ID == "h" && re.Retries == 2 && errors.Is(err, boom) && errors.Is(err, &handlers.PermanentError{})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &Handler{ID: "h", Backoff: time.Second}
			if tt.opts != nil {
				tt.opts(h)
			}
			v := Judge(h, "Handler 'h'", tt.err, tt.retries, tt.runtime, time.Minute)
			if !v.Failed || !tt.want(v.Err) {
				t.Errorf("verdict: failed %v, Err %#v", v.Failed, v.Err)
			}
		})
	}
	// Before an attempt, nothing of the handler's is inside.
	v, expired := Expired(&Handler{ID: "h", Timeout: time.Second}, "Handler 'h'", 1, 2*time.Second)
	var te *handlers.HandlerTimeoutError
	if !expired || !errors.As(v.Err, &te) || te.Runtime != 2*time.Second || te.Err != nil {
		t.Errorf("expired by the timeout: %v, Err %#v", expired, v.Err)
	}
	v, expired = Expired(&Handler{ID: "h", Retries: 3}, "Handler 'h'", 3, 0)
	var re *handlers.RetriesExceededError
	if !expired || !errors.As(v.Err, &re) || re.Retries != 3 {
		t.Errorf("expired by the retries: %v, Err %#v", expired, v.Err)
	}
	// A retry and a success carry none.
	if v := Judge(&Handler{ID: "h"}, "Handler 'h'", boom, 1, 0, time.Minute); v.Failed || v.Err != nil {
		t.Errorf("a retry: %+v", v)
	}
}
