package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// signal is what a payload carries.
type signal byte

const (
	signalTraces signal = 't'
	signalLogs   signal = 'l'
)

func (s signal) String() string {
	if s == signalLogs {
		return "logs"
	}
	return "traces"
}

// sender posts OTLP/HTTP protobuf requests.
type sender struct {
	client      *http.Client
	traces      string
	logs        string
	headers     map[string]string
	gzip        bool
	userAgent   string
	gzipScratch bytes.Buffer
	zw          *gzip.Writer // reused: a new one allocates its tables
}

// sendError is a request that did not deliver its data.
type sendError struct {
	status     int           // the HTTP status; 0 when no response came
	retry      bool          // worth trying again
	retryAfter time.Duration // the backend's Retry-After
	err        error
}

func (e *sendError) Error() string {
	if e.status != 0 {
		return fmt.Sprintf("HTTP %d: %v", e.status, e.err)
	}
	return e.err.Error()
}

func (e *sendError) Unwrap() error { return e.err }

// post sends one request body (a serialized Export*ServiceRequest) and
// returns how many bytes went on the wire and how many items the backend
// said it rejected (a partial success).
func (s *sender) post(ctx context.Context, sig signal, body []byte) (wire int, rejected int64, err error) {
	u := s.traces
	if sig == signalLogs {
		u = s.logs
	}
	payload := body
	if s.gzip {
		s.gzipScratch.Reset()
		if s.zw == nil {
			s.zw, _ = gzip.NewWriterLevel(&s.gzipScratch, gzip.BestSpeed)
		} else {
			s.zw.Reset(&s.gzipScratch)
		}
		s.zw.Write(body)
		s.zw.Close()
		payload = s.gzipScratch.Bytes()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(payload))
	if err != nil {
		return 0, 0, &sendError{err: err}
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", s.userAgent)
	if s.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	for k, v := range s.headers {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		// No answer: refused, unreachable, timed out, or we stopped
		// waiting. Worth another try.
		return 0, 0, &sendError{retry: true, err: cleanNetError(err)}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 2 {
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-protobuf") {
			rejected = partialRejected(data)
		}
		return len(payload), rejected, nil
	}
	se := &sendError{status: resp.StatusCode, err: errors.New(statusText(resp, data))}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		// The OTLP specification's retryable statuses.
		se.retry = true
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
			se.retryAfter = time.Duration(min(secs, 60)) * time.Second
		}
	}
	return len(payload), 0, se
}

// statusText is the error a backend's refusal gives: its status and the
// start of what it said.
func statusText(resp *http.Response, body []byte) string {
	msg := strings.TrimSpace(string(body))
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-protobuf") {
		msg = statusMessage(body)
	}
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		return http.StatusText(resp.StatusCode)
	}
	return http.StatusText(resp.StatusCode) + ": " + msg
}

// partialRejected reads the rejected count of an
// Export{Trace,Logs}ServiceResponse: field 1 (partial_success), whose
// field 1 is rejected_spans or rejected_log_records.
func partialRejected(b []byte) int64 {
	ps := field(b, 1, protowire.BytesType)
	if ps == nil {
		return 0
	}
	for len(ps) > 0 {
		num, typ, n := protowire.ConsumeTag(ps)
		if n < 0 {
			return 0
		}
		ps = ps[n:]
		if num == 1 && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(ps)
			if n < 0 {
				return 0
			}
			return int64(v)
		}
		if n = protowire.ConsumeFieldValue(num, typ, ps); n < 0 {
			return 0
		}
		ps = ps[n:]
	}
	return 0
}

// statusMessage reads the message of a google.rpc.Status (field 2).
func statusMessage(b []byte) string { return string(field(b, 2, protowire.BytesType)) }

// field returns the value of the first field num of type typ in b.
func field(b []byte, num protowire.Number, typ protowire.Type) []byte {
	for len(b) > 0 {
		n, t, l := protowire.ConsumeTag(b)
		if l < 0 {
			return nil
		}
		b = b[l:]
		if n == num && t == typ {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return nil
			}
			return v
		}
		if l = protowire.ConsumeFieldValue(n, t, b); l < 0 {
			return nil
		}
		b = b[l:]
	}
	return nil
}

// cleanNetError drops the method and URL net/http wraps around a dial
// error: the summary line names the endpoint once.
func cleanNetError(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		if inner := ue.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}
