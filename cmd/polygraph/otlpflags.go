package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/stores"

	"github.com/spf13/pflag"

	"github.com/polygraph/polygraph/internal/otlp"
)

// otlpOptions are the --otlp flags, the same on every verb that exports
// (export; run and watch stream through the same exporter).
type otlpOptions struct {
	endpoint    string
	headers     []string
	ca          string
	insecure    bool
	compression string
	spool       string
	wait        time.Duration
}

// addOTLPFlags adds the --otlp flags to fs; wait is how long the verb
// waits for delivery at its end by default.
func addOTLPFlags(fs *pflag.FlagSet, o *otlpOptions, wait time.Duration) {
	fs.StringVar(&o.endpoint, "otlp", "", "OTLP/HTTP endpoint to export to, e.g. http://collector:4318 (default: $OTEL_EXPORTER_OTLP_ENDPOINT)")
	fs.StringArrayVar(&o.headers, "otlp-header", nil, "header KEY=VALUE sent with every OTLP request (repeatable; also $OTEL_EXPORTER_OTLP_HEADERS)")
	fs.StringVar(&o.ca, "otlp-ca", "", "PEM file of the CA that signs the OTLP endpoint's certificate")
	fs.BoolVar(&o.insecure, "otlp-insecure", false, "do not verify the OTLP endpoint's certificate")
	fs.StringVar(&o.compression, "otlp-compression", "gzip", "gzip or none")
	fs.StringVar(&o.spool, "otlp-spool", "", `where data waits while the backend is down (default $POLYGRAPH_HOME/otlp-spool; "none": memory only)`)
	fs.DurationVar(&o.wait, "otlp-wait", wait, "how long to wait at the end for the backend to take what is left")
}

// enabled reports whether an endpoint is given, by flag or environment.
func (o *otlpOptions) enabled() bool {
	return o.endpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// config builds the exporter's configuration from the flags and the
// OpenTelemetry environment (flags win).
func (o *otlpOptions) config() (otlp.Config, error) {
	c := otlp.Config{Endpoint: o.endpoint, CAFile: o.ca, Insecure: o.insecure}
	switch o.compression {
	case "gzip":
	case "none":
		c.NoGzip = true
	default:
		return c, &usageError{fmt.Errorf("--otlp-compression %q: want gzip or none", o.compression)}
	}
	for _, h := range o.headers {
		k, v, ok := strings.Cut(h, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return c, &usageError{fmt.Errorf("--otlp-header %q: want KEY=VALUE", h)}
		}
		if c.Headers == nil {
			c.Headers = map[string]string{}
		}
		c.Headers[strings.TrimSpace(k)] = v
	}
	if err := c.FromEnv(os.Getenv); err != nil {
		return c, &usageError{err}
	}
	if c.Endpoint == "" && c.TracesURL == "" {
		return c, &usageError{otlp.ErrNoEndpoint}
	}
	switch o.spool {
	case "none":
	case "":
		home, err := stores.Home()
		if err != nil {
			return c, err
		}
		c.SpoolDir = filepath.Join(home, "otlp-spool")
	default:
		c.SpoolDir = o.spool
	}
	return c, nil
}

// start starts the exporter; quiet keeps its outage warnings at debug
// level, for a verb whose line at the end says it all.
func (o *otlpOptions) start(quiet bool) (*otlp.Exporter, error) {
	c, err := o.config()
	if err != nil {
		return nil, err
	}
	if quiet {
		c.Log = slog.New(debugOnly{slog.Default().Handler()})
	}
	x, err := otlp.New(c)
	if errors.Is(err, otlp.ErrBadEndpoint) {
		return nil, &usageError{err}
	}
	return x, err
}

// stop waits up to --otlp-wait for the backend to take what is left,
// stops the exporter and prints the one line that says what happened:
// for run and watch, whose exit status is not the export's.
func (o *otlpOptions) stop(x *otlp.Exporter, w io.Writer) otlp.Stats {
	ctx, cancel := context.WithTimeout(context.Background(), o.wait)
	defer cancel()
	st := x.Close(ctx)
	fmt.Fprintln(w, st)
	return st
}

// finish is stop for export: exit status 1 (the line said why) when
// anything was dropped or still waits in the spool.
func (o *otlpOptions) finish(x *otlp.Exporter, w io.Writer) error {
	if st := o.stop(x, w); !st.Delivered() {
		return &exitError{code: exitFailure}
	}
	return nil
}

// debugOnly passes a handler's records on at debug level.
type debugOnly struct{ slog.Handler }

func (h debugOnly) Enabled(ctx context.Context, _ slog.Level) bool {
	return h.Handler.Enabled(ctx, slog.LevelDebug)
}

func (h debugOnly) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return h.Handler.Handle(ctx, r)
}

func (h debugOnly) WithAttrs(as []slog.Attr) slog.Handler { return debugOnly{h.Handler.WithAttrs(as)} }

func (h debugOnly) WithGroup(name string) slog.Handler { return debugOnly{h.Handler.WithGroup(name)} }
