package handlers

import (
	"errors"
	"testing"
	"time"
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
		{"permanent", Handler{}, &PermanentError{Err: boom}, "boom"},
		{"errors mode permanent", Handler{Errors: ErrorsPermanent}, boom, "boom"},
		{"temporary", Handler{}, &TemporaryError{Err: boom, Delay: time.Second}, "boom"},
		{"arbitrary, retried", Handler{}, boom, "boom"},
		{"temporary over the retries", Handler{Retries: 1}, &TemporaryError{Err: boom, Delay: time.Second},
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
