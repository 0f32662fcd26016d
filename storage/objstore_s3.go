package storage

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/nicflow/nicflow/internal/nferr"
)

// S3 object storage (decisions D55): s3://bucket/key names an object
// of an S3-compatible server, read and written through minio-go.
//
// Reads: Open asks for the object's size and ETag (HEAD), then every read
// is a ranged GET conditional on that ETag (If-Match), so that all the
// bytes of one open come from one version of the object: an object
// replaced meanwhile fails the read (KindData, "changed"), it is never
// mixed. A file table records the ETag in its File.Checksum and its scans
// refuse another version the same way. The last s3FooterTail bytes of an
// object (its Parquet footer) are fetched with the first read of the
// tail and kept in a cache bounded by S3Options.FooterCacheBytes (least
// recently used out), keyed by bucket, key and ETag. A read longer than
// S3Options.PartSize is split into ranged GETs run in parallel (at most
// S3Options.ReadParallelism). Scans read row groups in parallel (one
// worker per row group), each column chunk with one read.
//
// Faults: minio-go retries a request that failed with a 5xx status, 503
// SlowDown and the other throttling codes, a timeout or a refused
// connection, with exponential backoff and jitter, up to
// S3Options.MaxRetries times; a body cut off midway is read again from
// where it stopped (the same ETag). What still fails is KindUnavailable
// naming the endpoint (retryable: the statement can be run again), a
// missing object or bucket KindQuery, refused credentials KindAuth, a
// short or changed object KindData. A read never returns fewer bytes
// than asked without an error.
//
// Writes (COPY TO, CREATE files): the file is written to a temporary
// local file and uploaded at commit (multipart above 16 MiB), so that the
// object appears whole or not at all.
//
// Configuration is process-wide (SetS3Options, from cmd/nicflow's
// --s3-* flags): workers and storage nodes that describe a file table
// again from its name use their own.

// S3Options configure the S3 client. The zero value works against AWS with
// credentials from the environment.
type S3Options struct {
	// Endpoint is the server: host[:port] or a URL (http:// turns TLS
	// off). Empty: $AWS_ENDPOINT_URL_S3, then $AWS_ENDPOINT_URL, then
	// s3.amazonaws.com.
	Endpoint string `toml:"endpoint"`
	// Region signs requests. Empty: $AWS_REGION, then
	// $AWS_DEFAULT_REGION, then us-east-1.
	Region string `toml:"region"`
	// URLStyle is how a bucket is addressed: "path" (http://host/bucket/key,
	// what most S3-compatible servers want), "virtual"
	// (http://bucket.host/key) or "auto" (virtual for AWS, path for
	// others). Default auto.
	URLStyle string `toml:"url_style"`
	// DisableTLS talks plain HTTP (a loopback or private server).
	DisableTLS bool `toml:"disable_tls"`
	// AccessKeyID, SecretAccessKey and SessionToken: empty takes them
	// from $AWS_ACCESS_KEY_ID, $AWS_SECRET_ACCESS_KEY and
	// $AWS_SESSION_TOKEN, then from ~/.aws/credentials ($AWS_PROFILE,
	// $AWS_SHARED_CREDENTIALS_FILE), else requests are anonymous.
	AccessKeyID     string `toml:"-"`
	SecretAccessKey string `toml:"-"`
	SessionToken    string `toml:"-"`
	// MaxRetries is how often a failed request is retried (with backoff).
	// Default 5; at most 50.
	MaxRetries int `toml:"max_retries"`
	// ReadParallelism is how many ranged GETs one long read runs at once.
	// Default 8; at most 256.
	ReadParallelism int `toml:"read_parallelism"`
	// PartSize is the longest ranged GET; a longer read is split. Default
	// 8 MiB; at least 64 KiB.
	PartSize int64 `toml:"part_size"`
	// FooterCacheBytes bounds the cache of objects' tails (their Parquet
	// footers). Default 64 MiB; 0 takes the default, negative turns the
	// cache off.
	FooterCacheBytes int64 `toml:"footer_cache_bytes"`
	// RequestTimeout bounds one request: connecting and waiting for the
	// response's headers. Default 30s.
	RequestTimeout time.Duration `toml:"request_timeout"`
}

// Validate checks the options.
func (o S3Options) Validate() error {
	switch o.URLStyle {
	case "", "auto", "path", "virtual":
	default:
		return nferr.Queryf("s3 url style %q: want auto, path or virtual", o.URLStyle)
	}
	if o.MaxRetries < 0 || o.MaxRetries > 50 {
		return nferr.Queryf("s3 max retries %d: want 0 to 50", o.MaxRetries)
	}
	if o.ReadParallelism < 0 || o.ReadParallelism > 256 {
		return nferr.Queryf("s3 read parallelism %d: want 0 to 256", o.ReadParallelism)
	}
	if o.PartSize != 0 && o.PartSize < 64<<10 {
		return nferr.Queryf("s3 part size %d: want at least 65536 bytes", o.PartSize)
	}
	if o.RequestTimeout < 0 {
		return nferr.Queryf("s3 request timeout %s is negative", o.RequestTimeout)
	}
	if (o.AccessKeyID == "") != (o.SecretAccessKey == "") {
		return nferr.Queryf("s3 credentials: an access key id needs its secret access key and the other way round")
	}
	if e := o.Endpoint; e != "" && strings.Contains(e, "://") {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nferr.Queryf("s3 endpoint %q: want host[:port] or an http:// or https:// URL", e)
		}
	}
	return nil
}

// withDefaults fills what is unset from the environment and the defaults.
func (o S3Options) withDefaults() S3Options {
	if o.Endpoint == "" {
		o.Endpoint = firstEnv("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
	}
	if o.Region == "" {
		o.Region = firstEnv("AWS_REGION", "AWS_DEFAULT_REGION")
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.URLStyle == "" {
		o.URLStyle = "auto"
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = 5
	}
	if o.ReadParallelism == 0 {
		o.ReadParallelism = 8
	}
	if o.PartSize == 0 {
		o.PartSize = 8 << 20
	}
	if o.FooterCacheBytes == 0 {
		o.FooterCacheBytes = 64 << 20
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 30 * time.Second
	}
	return o
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

var s3conf struct {
	mu    sync.Mutex
	opts  S3Options
	store *s3Store // nil until first used after SetS3Options
	err   error
}

// SetS3Options sets the process's S3 options (cmd/nicflow's --s3-*
// flags); the client is made again at the next use.
func SetS3Options(o S3Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	s3conf.mu.Lock()
	defer s3conf.mu.Unlock()
	s3conf.opts, s3conf.store, s3conf.err = o, nil, nil
	return nil
}

// s3Default returns the process's S3 store, made at its first use.
func s3Default() (*s3Store, error) {
	s3conf.mu.Lock()
	defer s3conf.mu.Unlock()
	if s3conf.store == nil && s3conf.err == nil {
		s3conf.store, s3conf.err = newS3Store(s3conf.opts)
	}
	return s3conf.store, s3conf.err
}

// s3Store is an S3-compatible server.
type s3Store struct {
	opts     S3Options // with defaults
	endpoint string    // for errors
	c        *minio.Client
	tails    *tailCache
}

// s3FooterTail is how many bytes at an object's end the first read of its
// tail fetches and the cache keeps: a Parquet footer of TPC-H's widest
// table is a few KiB.
const s3FooterTail = 64 << 10

func newS3Store(o S3Options) (*s3Store, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	host, secure := o.Endpoint, !o.DisableTLS
	if host == "" {
		host = "s3.amazonaws.com"
	}
	if strings.Contains(host, "://") {
		u, err := url.Parse(host)
		if err != nil || u.Host == "" {
			return nil, nferr.Queryf("s3 endpoint %q: want host[:port] or an http:// or https:// URL", o.Endpoint)
		}
		host, secure = u.Host, u.Scheme == "https" && !o.DisableTLS
	}
	var creds *credentials.Credentials
	if o.AccessKeyID != "" {
		creds = credentials.NewStaticV4(o.AccessKeyID, o.SecretAccessKey, o.SessionToken)
	} else {
		creds = credentials.NewChainCredentials([]credentials.Provider{
			&credentials.EnvAWS{},
			&credentials.FileAWSCredentials{},
		})
	}
	lookup := minio.BucketLookupAuto
	switch o.URLStyle {
	case "path":
		lookup = minio.BucketLookupPath
	case "virtual":
		lookup = minio.BucketLookupDNS
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: min(o.RequestTimeout, 10*time.Second), KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: o.RequestTimeout,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
	c, err := minio.New(host, &minio.Options{
		Creds: creds, Secure: secure, Region: o.Region, BucketLookup: lookup,
		Transport: tr, MaxRetries: o.MaxRetries,
	})
	if err != nil {
		return nil, nferr.Queryf("s3 endpoint %s: %v", host, err)
	}
	scheme := "https://"
	if !secure {
		scheme = "http://"
	}
	s := &s3Store{opts: o, endpoint: scheme + host, c: c}
	if o.FooterCacheBytes > 0 {
		s.tails = newTailCache(o.FooterCacheBytes)
	}
	return s, nil
}

// splitURL splits s3://bucket/key.
func splitURL(name string) (bucket, key string, err error) {
	if !IsObjectURL(name) {
		return "", "", nferr.Internalf("%s is not an s3:// URL", name)
	}
	rest := name[5:]
	bucket, key, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", nferr.Queryf("object URL %s names no bucket (want s3://bucket/key)", name)
	}
	return bucket, key, nil
}

// s3Err classifies a failed request about name.
func (s *s3Store) s3Err(name, what string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := nferr.As(err); ok {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return nferr.With(nferr.KindCanceled, err)
	}
	resp := minio.ToErrorResponse(err)
	switch resp.Code {
	case "NoSuchKey", "NotFound":
		return notFound(name)
	case "NoSuchBucket":
		return nferr.Queryf("%s: bucket %s does not exist at %s", name, resp.BucketName, s.endpoint)
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken", "AllAccessDisabled":
		return nferr.Authf("%s %s: %s refused the credentials: %s (%s)", what, name, s.endpoint, resp.Message, resp.Code)
	case "PreconditionFailed":
		return nferr.Dataf("%s changed while it was being read (its ETag no longer matches)", name)
	case "InvalidRange":
		return nferr.Dataf("%s is shorter than it was when it was opened", name)
	}
	if resp.StatusCode >= 500 || resp.StatusCode == 429 || resp.Code == "SlowDown" {
		return nferr.Unavailablef("%s %s: %s failed after %d retries: %s (HTTP %d %s); the statement can be run again",
			what, name, s.endpoint, s.opts.MaxRetries, resp.Message, resp.StatusCode, resp.Code)
	}
	if resp.StatusCode == 0 && resp.Code != "" {
		// minio-go refused the request before sending it (an invalid
		// bucket or object name).
		return nferr.Queryf("%s %s: %s (%s)", what, name, resp.Message, resp.Code)
	}
	if resp.StatusCode == 0 {
		// No S3 answer: the network (refused, reset, timed out).
		return nferr.Unavailablef("%s %s: S3 endpoint %s is unreachable after %d retries (%v); the statement can be run again",
			what, name, s.endpoint, s.opts.MaxRetries, err)
	}
	if resp.StatusCode == 400 {
		return nferr.Queryf("%s %s: %s: %s (%s)", what, name, s.endpoint, resp.Message, resp.Code)
	}
	return nferr.IOf("%s %s: %s: %v", what, name, s.endpoint, err)
}

// notFound is a missing object: os.IsNotExist recognizes it, so that
// callers report it as they do a missing local file.
func notFound(name string) error {
	return &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// objInfo is an object's fs.FileInfo; Sys is its ETag.
type objInfo struct {
	name string
	size int64
	mt   time.Time
	etag string
	dir  bool
}

func (i *objInfo) Name() string { return path.Base(i.name) }
func (i *objInfo) Size() int64  { return i.size }
func (i *objInfo) Mode() fs.FileMode {
	return map[bool]fs.FileMode{true: fs.ModeDir | 0o755, false: 0o644}[i.dir]
}
func (i *objInfo) ModTime() time.Time { return i.mt }
func (i *objInfo) IsDir() bool        { return i.dir }
func (i *objInfo) Sys() any           { return i.etag }

// objectETag returns the ETag of an object's FileInfo ("" for a local
// file).
func objectETag(st fs.FileInfo) string {
	if i, ok := st.(*objInfo); ok {
		return i.etag
	}
	return ""
}

func (s *s3Store) ctx() (context.Context, context.CancelFunc) {
	// NB: a request's own wait is bounded by RequestTimeout (the
	// transport); this bounds its retries too.
	return context.WithTimeout(context.Background(), time.Duration(s.opts.MaxRetries+2)*(s.opts.RequestTimeout+2*time.Second))
}

// Stat describes an object; a name with no object but objects under
// name/ is a directory.
func (s *s3Store) Stat(name string) (fs.FileInfo, error) {
	bucket, key, err := splitURL(name)
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	if key != "" && !strings.HasSuffix(key, "/") {
		oi, err := s.c.StatObject(ctx, bucket, key, minio.StatObjectOptions{})
		if err == nil {
			return &objInfo{name: name, size: oi.Size, mt: oi.LastModified, etag: oi.ETag}, nil
		}
		if err = s.s3Err(name, "stat", err); !os.IsNotExist(err) {
			return nil, err
		}
	}
	prefix := key
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	for oi := range s.c.ListObjectsIter(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, MaxKeys: 1}) {
		if oi.Err != nil {
			return nil, s.s3Err(name, "list", oi.Err)
		}
		return &objInfo{name: name, dir: true}, nil
	}
	return nil, notFound(name)
}

// Glob lists the objects pattern matches: the listing of the prefix
// before its first wildcard, matched key by key (path.Match: a wildcard
// never matches "/").
func (s *s3Store) Glob(pattern string) ([]string, error) {
	bucket, key, err := splitURL(pattern)
	if err != nil {
		return nil, err
	}
	if _, err := path.Match(key, ""); err != nil {
		return nil, nferr.Queryf("file pattern %s: %v", pattern, err)
	}
	meta := strings.IndexAny(key, "*?[\\")
	if meta < 0 {
		st, err := s.Stat(pattern)
		if err != nil || st.IsDir() {
			if err != nil && !os.IsNotExist(err) {
				return nil, err
			}
			return nil, nil
		}
		return []string{pattern}, nil
	}
	prefix := key[:meta]
	ctx, cancel := s.ctx()
	defer cancel()
	var out []string
	for oi := range s.c.ListObjectsIter(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if oi.Err != nil {
			return nil, s.s3Err(pattern, "list", oi.Err)
		}
		if strings.HasSuffix(oi.Key, "/") {
			continue
		}
		if ok, _ := path.Match(key, oi.Key); ok {
			out = append(out, "s3://"+bucket+"/"+oi.Key)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Create writes name through a temporary local file uploaded at Commit.
func (s *s3Store) Create(name string) (*NewFile, error) {
	bucket, key, err := splitURL(name)
	if err != nil {
		return nil, err
	}
	if key == "" || strings.HasSuffix(key, "/") {
		return nil, nferr.Queryf("%s names no object (want s3://bucket/key)", name)
	}
	f, err := os.CreateTemp("", ".nicflow-upload-*")
	if err != nil {
		return nil, nferr.OS(err, "creating a temporary file for %s", name)
	}
	nf := &NewFile{File: f, path: name, tmp: f.Name()}
	nf.upload = func(tmp string) error {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ct := "application/octet-stream"
		if strings.HasSuffix(strings.ToLower(key), ".parquet") {
			ct = "application/vnd.apache.parquet"
		}
		_, err := s.c.FPutObject(ctx, bucket, key, tmp, minio.PutObjectOptions{ContentType: ct})
		if err != nil {
			return s.s3Err(name, "uploading", err)
		}
		return nil
	}
	return nf, nil
}

// Open opens an object at its current version.
func (s *s3Store) Open(name string) (ObjectReader, error) {
	return s.openVersion(name, "")
}

// openVersion opens an object; etag, when set, is the version the caller
// described (a file table's File.Checksum), and another is KindData.
func (s *s3Store) openVersion(name, etag string) (ObjectReader, error) {
	bucket, key, err := splitURL(name)
	if err != nil {
		return nil, err
	}
	if key == "" {
		return nil, notFound(name)
	}
	ctx, cancel := s.ctx()
	defer cancel()
	oi, err := s.c.StatObject(ctx, bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return nil, s.s3Err(name, "opening", err)
	}
	if etag != "" && oi.ETag != etag {
		return nil, nferr.Dataf("%s changed since its footer was read (ETag %s, was %s)", name, oi.ETag, etag)
	}
	return &s3Reader{s: s, name: name, bucket: bucket, key: key,
		info: &objInfo{name: name, size: oi.Size, mt: oi.LastModified, etag: oi.ETag}}, nil
}

// s3Reader reads one version of an object.
type s3Reader struct {
	s           *s3Store
	name        string
	bucket, key string
	info        *objInfo
	mu          sync.Mutex
	pos         int64 // Read and Seek
}

func (r *s3Reader) Stat() (fs.FileInfo, error) { return r.info, nil }
func (r *s3Reader) Close() error               { return nil }

func (r *s3Reader) Seek(off int64, whence int) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pos, err := seekOffset(r.name, r.pos, r.info.size, off, whence)
	if err == nil {
		r.pos = pos
	}
	return pos, err
}

func (r *s3Reader) Read(p []byte) (int, error) {
	r.mu.Lock()
	pos := r.pos
	r.mu.Unlock()
	if pos >= r.info.size {
		return 0, io.EOF
	}
	n, err := r.ReadAt(p[:min(int64(len(p)), r.s.opts.PartSize)], pos)
	r.mu.Lock()
	r.pos = pos + int64(n)
	r.mu.Unlock()
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

// ReadAt reads len(p) bytes at off: from the cached tail when it holds
// them, else by ranged GETs (in parallel above PartSize). Fewer bytes come
// only at the object's end, with io.EOF.
func (r *s3Reader) ReadAt(p []byte, off int64) (int, error) {
	size := r.info.size
	if off < 0 {
		return 0, fmt.Errorf("read %s: negative offset", r.name)
	}
	if off >= size {
		return 0, io.EOF
	}
	var eof error
	if int64(len(p)) > size-off {
		p, eof = p[:size-off], io.EOF
	}
	if len(p) == 0 {
		return 0, eof
	}
	// The tail: fetched whole at its first read, kept in the cache.
	tailStart := max(size-s3FooterTail, 0)
	if off >= tailStart {
		tail, err := r.tail(tailStart)
		if err != nil {
			return 0, err
		}
		return copy(p, tail[off-tailStart:]), eof
	}
	part := r.s.opts.PartSize
	if int64(len(p)) <= part {
		if err := r.get(p, off); err != nil {
			return 0, err
		}
		return len(p), eof
	}
	var wg sync.WaitGroup
	var emu sync.Mutex
	var first error
	sem := make(chan struct{}, r.s.opts.ReadParallelism)
	for at := int64(0); at < int64(len(p)); at += part {
		b := p[at:min(at+part, int64(len(p)))]
		sem <- struct{}{}
		wg.Add(1)
		go func(b []byte, o int64) {
			defer func() { <-sem; wg.Done() }()
			if err := r.get(b, o); err != nil {
				emu.Lock()
				if first == nil {
					first = err
				}
				emu.Unlock()
			}
		}(b, off+at)
	}
	wg.Wait()
	if first != nil {
		return 0, first
	}
	return len(p), eof
}

// tail returns the object's bytes from start to its end, cached.
func (r *s3Reader) tail(start int64) ([]byte, error) {
	ck := r.bucket + "/" + r.key + "\x00" + r.info.etag
	if r.s.tails != nil {
		if b := r.s.tails.get(ck); b != nil {
			return b, nil
		}
	}
	b := make([]byte, r.info.size-start)
	if err := r.get(b, start); err != nil {
		return nil, err
	}
	if r.s.tails != nil {
		r.s.tails.put(ck, b)
	}
	return b, nil
}

// bodyRetries is how often get reads again a body cut off midway (minio
// retries requests, not bodies).
const bodyRetries = 3

// get fills p with the object's bytes at off (all of them: the caller
// asks within the object), from the version opened.
func (r *s3Reader) get(p []byte, off int64) error {
	done := 0
	var last error
	for attempt := 0; attempt <= bodyRetries; attempt++ {
		if attempt > 0 {
			time.Sleep(time.Duration(100<<attempt) * time.Millisecond)
		}
		n, err := r.getOnce(p[done:], off+int64(done))
		done += n
		if err == nil {
			return nil
		}
		if _, ok := nferr.As(err); ok {
			return err // classified: no use reading again
		}
		last = err
	}
	return nferr.Unavailablef("reading %s at %d: S3 endpoint %s: %v (after %d attempts); the statement can be run again",
		r.name, off, r.s.endpoint, last, bodyRetries+1)
}

// getOnce is one ranged GET into p; it returns the bytes it read and an
// error that is classified (nferr) unless reading again may help.
func (r *s3Reader) getOnce(p []byte, off int64) (int, error) {
	var opts minio.GetObjectOptions
	if err := opts.SetRange(off, off+int64(len(p))-1); err != nil {
		return 0, nferr.Internalf("range of %s: %v", r.name, err)
	}
	if r.info.etag != "" {
		if err := opts.SetMatchETag(r.info.etag); err != nil {
			return 0, nferr.Internalf("etag of %s: %v", r.name, err)
		}
	}
	ctx, cancel := r.s.ctx()
	defer cancel()
	// NB: Core.GetObject is one request (retried by minio-go until it has
	// an answer); minio.Object would read lazily and hide the status.
	body, oi, _, err := minio.Core{Client: r.s.c}.GetObject(ctx, r.bucket, r.key, opts)
	if err != nil {
		return 0, r.s.s3Err(r.name, "reading", err)
	}
	defer body.Close()
	if oi.Size != int64(len(p)) {
		return 0, nferr.Dataf("%s: the server sent %d bytes for a range of %d at %d (object of %d bytes)",
			r.name, oi.Size, len(p), off, r.info.size)
	}
	n, err := io.ReadFull(body, p)
	if err != nil {
		return n, err
	}
	return n, nil
}

// tailCache keeps objects' tails, bounded in bytes, least recently used
// out.
type tailCache struct {
	mu    sync.Mutex
	limit int64
	used  int64
	lru   *list.List // of *tailEntry, most recent first
	m     map[string]*list.Element
}

type tailEntry struct {
	key string
	b   []byte
}

func newTailCache(limit int64) *tailCache {
	return &tailCache{limit: limit, lru: list.New(), m: map[string]*list.Element{}}
}

func (c *tailCache) get(k string) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[k]; e != nil {
		c.lru.MoveToFront(e)
		return e.Value.(*tailEntry).b
	}
	return nil
}

func (c *tailCache) put(k string, b []byte) {
	if int64(len(b)) > c.limit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[k]; e != nil {
		return
	}
	c.m[k] = c.lru.PushFront(&tailEntry{key: k, b: b})
	c.used += int64(len(b))
	for c.used > c.limit {
		e := c.lru.Back()
		te := e.Value.(*tailEntry)
		c.lru.Remove(e)
		delete(c.m, te.key)
		c.used -= int64(len(te.b))
	}
}

// bytes is how many bytes the cache holds (tests).
func (c *tailCache) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}
