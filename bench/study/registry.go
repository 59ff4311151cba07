package study

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// registry is a package registry on loopback that npm installs from: the
// study's "install a dependency" task reaches it, and nothing leaves the
// machine. It serves one small package, as the public registry serves
// packages: its packument (GET /NAME) and its tarball.
type registry struct {
	ln  net.Listener
	srv *http.Server
	tgz []byte
	mu  sync.Mutex
	got int // requests served
}

// Package is the package the registry serves.
const (
	pkgName    = "padstart-lite"
	pkgVersion = "1.2.0"
)

// startRegistry listens on a free loopback port.
func startRegistry() (*registry, error) {
	tgz, err := packageTarball()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("registry: listen: %w", err)
	}
	r := &registry{ln: ln, tgz: tgz}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// URL is the registry's base URL, with the trailing slash npm wants.
func (r *registry) URL() string { return "http://" + r.ln.Addr().String() + "/" }

// Addr is its host:port, for a policy's registries.
func (r *registry) Addr() string { return r.ln.Addr().String() }

// Close stops it.
func (r *registry) Close() error { return r.srv.Close() }

func (r *registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.got++
	r.mu.Unlock()
	tarball := "/" + pkgName + "/-/" + pkgName + "-" + pkgVersion + ".tgz"
	switch strings.TrimSuffix(req.URL.Path, "/") {
	case "/" + pkgName:
		sha1sum := sha1.Sum(r.tgz)
		sha512sum := sha512.Sum512(r.tgz)
		doc := map[string]any{
			"name":      pkgName,
			"dist-tags": map[string]string{"latest": pkgVersion},
			"versions": map[string]any{pkgVersion: map[string]any{
				"name": pkgName, "version": pkgVersion, "main": "index.js",
				"dist": map[string]string{
					"tarball":   strings.TrimSuffix(r.URL(), "/") + tarball,
					"shasum":    hex.EncodeToString(sha1sum[:]),
					"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sha512sum[:]),
				},
			}},
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	case tarball:
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(r.tgz)
	default:
		http.NotFound(w, req)
	}
}

// packageTarball is the package as npm packs it: package/package.json
// and package/index.js in a gzipped tar.
func packageTarball() ([]byte, error) {
	files := []struct{ name, body string }{
		{"package/package.json", `{"name": "` + pkgName + `", "version": "` + pkgVersion + `", "main": "index.js", "license": "MIT"}` + "\n"},
		{"package/index.js", "module.exports = (s, n, c) => String(s).padStart(n, c === undefined ? ' ' : c);\n"},
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	mtime := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
