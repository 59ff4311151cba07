package otlp

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Config says where and how to send.
type Config struct {
	// Endpoint is the OTLP/HTTP base URL (http://collector:4318): traces
	// go to Endpoint/v1/traces and logs to Endpoint/v1/logs. A URL that
	// already ends in /v1/traces is taken as the traces URL, with logs
	// beside it.
	Endpoint string
	// TracesURL and LogsURL, when set, are used as they are
	// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, …_LOGS_ENDPOINT).
	TracesURL, LogsURL string
	// Headers are sent with every request (an API key, a tenant).
	Headers map[string]string
	// NoGzip sends bodies uncompressed (gzip is the default).
	NoGzip bool
	// CAFile is a PEM bundle of the CAs that sign the backend's
	// certificate, beside the system's.
	CAFile string
	// Insecure skips verifying the backend's certificate.
	Insecure bool
	// Timeout bounds one request (default 10s).
	Timeout time.Duration
	// SpoolDir is where data waits while the backend is down or slow,
	// and survives a restart; "" keeps it in memory only.
	SpoolDir string
	// SpoolMax bounds the data waiting, in bytes (default 64 MiB): past
	// it the oldest is dropped, and counted.
	SpoolMax int64
	// Version is polygraph's own, for service.version.
	Version string
	// Log gets a warning when the backend stops answering (once per
	// outage) or refuses data, and a note when it answers again (nil:
	// slog's default). A batch export that prints Stats at its end
	// passes one that discards them.
	Log *slog.Logger
}

// Defaults.
const (
	defaultTimeout  = 10 * time.Second
	defaultSpoolMax = 64 << 20
)

// ErrNoEndpoint is returned when no endpoint is configured, and
// ErrBadEndpoint (wrapped) for one that is not an http(s) URL.
var (
	ErrNoEndpoint  = errors.New("no OTLP endpoint: give --otlp URL or set OTEL_EXPORTER_OTLP_ENDPOINT")
	ErrBadEndpoint = errors.New("not an http:// or https:// URL")
)

// FromEnv fills what c leaves unset from the OpenTelemetry exporter
// environment: OTEL_EXPORTER_OTLP_ENDPOINT, _TRACES_ENDPOINT,
// _LOGS_ENDPOINT, _HEADERS (k=v,k=v, values URL-encoded), _COMPRESSION
// (gzip or none), _CERTIFICATE and _TIMEOUT (milliseconds). Headers
// given in c win over the environment's.
func (c *Config) FromEnv(getenv func(string) string) error {
	if c.Endpoint == "" && c.TracesURL == "" {
		c.Endpoint = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
		c.TracesURL = getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
		c.LogsURL = getenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT")
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		h, err := ParseHeaders(getenv(name))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		for k, v := range h {
			if c.Headers == nil {
				c.Headers = map[string]string{}
			}
			if _, set := c.Headers[k]; !set {
				c.Headers[k] = v
			}
		}
	}
	if v := getenv("OTEL_EXPORTER_OTLP_COMPRESSION"); v == "none" {
		c.NoGzip = true
	}
	if c.CAFile == "" {
		c.CAFile = getenv("OTEL_EXPORTER_OTLP_CERTIFICATE")
	}
	if v := getenv("OTEL_EXPORTER_OTLP_TIMEOUT"); v != "" && c.Timeout == 0 {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT: %q is not a number of milliseconds", v)
		}
		c.Timeout = time.Duration(ms) * time.Millisecond
	}
	return nil
}

// ParseHeaders parses headers as OTEL_EXPORTER_OTLP_HEADERS gives them:
// comma-separated key=value pairs, values URL-encoded.
func ParseHeaders(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("header %q is not key=value", strings.TrimSpace(k))
		}
		dv, err := url.QueryUnescape(strings.TrimSpace(v))
		if err != nil {
			dv = strings.TrimSpace(v)
		}
		out[k] = dv
	}
	return out, nil
}

// urls returns the traces and logs URLs.
func (c *Config) urls() (traces, logs string, err error) {
	traces, logs = c.TracesURL, c.LogsURL
	if base := strings.TrimRight(c.Endpoint, "/"); base != "" {
		switch {
		case strings.HasSuffix(base, "/v1/traces"):
			traces = firstNonEmpty(traces, base)
			logs = firstNonEmpty(logs, strings.TrimSuffix(base, "/v1/traces")+"/v1/logs")
		case strings.HasSuffix(base, "/v1/logs"):
			logs = firstNonEmpty(logs, base)
			traces = firstNonEmpty(traces, strings.TrimSuffix(base, "/v1/logs")+"/v1/traces")
		default:
			traces = firstNonEmpty(traces, base+"/v1/traces")
			logs = firstNonEmpty(logs, base+"/v1/logs")
		}
	}
	if traces == "" {
		return "", "", ErrNoEndpoint
	}
	if logs == "" {
		logs = strings.TrimSuffix(traces, "/v1/traces") + "/v1/logs"
	}
	for _, u := range []string{traces, logs} {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return "", "", fmt.Errorf("OTLP endpoint %q: %w", u, ErrBadEndpoint)
		}
	}
	return traces, logs, nil
}

// httpClient is the client every request goes through: the TLS the
// config asks for, a bounded dial and request time, proxies from the
// environment.
func (c *Config) httpClient() (*http.Client, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.Insecure} //nolint:gosec // the user's --otlp-insecure
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read OTLP CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTLP CA file %s holds no PEM certificate", c.CAFile)
		}
		tc.RootCAs = pool
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: min(timeout, 5*time.Second), KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     tc,
		TLSHandshakeTimeout: min(timeout, 5*time.Second),
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	return &http.Client{Transport: tr, Timeout: timeout}, nil
}
