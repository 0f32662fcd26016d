package main

import (
	"github.com/nicflow/nicflow/storage"
)

// s3Flags are the process's S3 client options (storage.S3Options): every
// command that reads or writes s3:// paths uses them.
var s3Flags struct {
	endpoint   string
	region     string
	urlStyle   string
	noTLS      bool
	maxRetries int
}

func init() {
	pf := rootCmd.PersistentFlags()
	pf.StringVar(&s3Flags.endpoint, "s3-endpoint", "", "S3-compatible server of s3:// paths: host:port or an http:// or https:// URL (default $AWS_ENDPOINT_URL, else AWS)")
	pf.StringVar(&s3Flags.region, "s3-region", "", "S3 region that signs requests (default $AWS_REGION, else us-east-1)")
	pf.StringVar(&s3Flags.urlStyle, "s3-url-style", "auto", "S3 bucket addressing: path (host/bucket/key, most S3-compatible servers), virtual (bucket.host/key) or auto (virtual for AWS)")
	pf.BoolVar(&s3Flags.noTLS, "s3-no-tls", false, "talk plain HTTP to the S3 server (an endpoint URL starting http:// does too)")
	pf.IntVar(&s3Flags.maxRetries, "s3-max-retries", 5, "retries, with backoff, of an S3 request that failed with a 5xx status, throttling or a lost connection")
}

// applyS3Flags hands the --s3-* flags to storage (applyConfig).
func applyS3Flags() error {
	err := storage.SetS3Options(storage.S3Options{
		Endpoint: s3Flags.endpoint, Region: s3Flags.region, URLStyle: s3Flags.urlStyle,
		DisableTLS: s3Flags.noTLS, MaxRetries: s3Flags.maxRetries,
	})
	if err != nil {
		return usagef("%v", err)
	}
	return nil
}
