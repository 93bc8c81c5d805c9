package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// Defaults of S3Options.
const (
	DefaultS3Region             = "us-east-1"
	DefaultS3MaxAttempts        = 6
	DefaultS3MultipartThreshold = 16 << 20
	DefaultS3PartSize           = 8 << 20
	DefaultS3Concurrency        = 4
	DefaultS3ReadConcurrency    = 32
	DefaultS3ReadPartSize       = 2 << 20

	// s3MinPartSize is the smallest part S3 accepts, except the last.
	s3MinPartSize = 5 << 20
	// s3MaxParts is the most parts one multipart upload may have.
	s3MaxParts = 10000
)

// S3Options configure NewS3Store. Only Bucket is required.
type S3Options struct {
	// Bucket holds the objects; NewS3Store creates it when missing.
	Bucket string
	// Prefix is prepended to every key, followed by a '/' ("db1" stores
	// key "tables/1/a" as "db1/tables/1/a"). Empty stores keys as they are.
	Prefix string
	// Endpoint is the URL of an S3-compatible server
	// ("http://127.0.0.1:7070"). It selects path-style addressing. Empty
	// means AWS S3.
	Endpoint string
	// Region overrides AWS_REGION and AWS_DEFAULT_REGION; DefaultS3Region
	// is used when none of them is set.
	Region string
	// AccessKey and SecretKey, when set, are the credentials. Otherwise
	// the standard AWS chain applies (AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY, shared config files, instance roles).
	AccessKey, SecretKey string
	// MaxAttempts bounds the attempts of one request, retries of
	// throttling, 5xx and network errors included (DefaultS3MaxAttempts).
	MaxAttempts int
	// MaxBackoff caps the delay between attempts (default 5 s). Delays
	// start at 100 ms and double, with full jitter.
	MaxBackoff time.Duration
	// MultipartThreshold is the size above which Put uploads an object in
	// parts (DefaultS3MultipartThreshold).
	MultipartThreshold int64
	// PartSize is the size of each part but the last (DefaultS3PartSize;
	// at least 5 MiB, the S3 minimum).
	PartSize int64
	// Concurrency is how many parts of one object are uploaded at once
	// (DefaultS3Concurrency).
	Concurrency int
	// ReadConcurrency is how many byte ranges a reader of single rows
	// (an exact shuffle, a lookup by key) has in flight at once
	// (DefaultS3ReadConcurrency): each read waits a round trip. It also
	// bounds the parts of one object read at once (ReadPartSize).
	ReadConcurrency int
	// ReadPartSize is about the size of the ranged parts in which a scan
	// reads a chunk, all at once (DefaultS3ReadPartSize): one connection
	// carries a fraction of what S3 serves, and an 8 MB chunk then comes
	// over 4.
	ReadPartSize int64
}

// S3Store is an ObjectStore in an S3 bucket, under a key prefix. Reads of
// a range send a Range header, large objects are uploaded in parts, List
// pages through ListObjectsV2, and PutIfAbsent is a conditional write
// (If-None-Match: *), so several servers can share one bucket.
//
// Requests are retried with exponential backoff on throttling, 5xx and
// network errors. NB: a retried conditional write whose first attempt
// reached the server may be refused with 412 by its own earlier success.
// PutIfAbsent therefore retries on its own: after an attempt whose outcome
// is unknown (a 5xx or a network error), a refusal is checked by reading
// the object back, and bytes equal to the caller's count as success. The
// only case this lets through is another writer storing the very same
// bytes, which leaves the store exactly as a success would.
type S3Store struct {
	client  *s3.Client
	retryer *retry.Standard
	bucket  string
	prefix  string
	opts    S3Options
}

var _ ObjectStore = (*S3Store)(nil)

// NewS3Store connects to the bucket of opts, creating it when missing.
func NewS3Store(ctx context.Context, opts S3Options) (*S3Store, error) {
	if opts.Bucket == "" {
		return nil, errors.New("s3: a bucket name is required")
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultS3MaxAttempts
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 5 * time.Second
	}
	if opts.MultipartThreshold <= 0 {
		opts.MultipartThreshold = DefaultS3MultipartThreshold
	}
	if opts.PartSize <= 0 {
		opts.PartSize = DefaultS3PartSize
	}
	opts.PartSize = max(opts.PartSize, s3MinPartSize)
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultS3Concurrency
	}
	if opts.ReadConcurrency <= 0 {
		opts.ReadConcurrency = DefaultS3ReadConcurrency
	}
	if opts.ReadPartSize <= 0 {
		opts.ReadPartSize = DefaultS3ReadPartSize
	}
	maxBackoff := opts.MaxBackoff
	retryer := retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = opts.MaxAttempts
		o.MaxBackoff = maxBackoff
		o.Backoff = retry.BackoffDelayerFunc(func(attempt int, _ error) (time.Duration, error) {
			return s3Backoff(attempt, maxBackoff), nil
		})
		// A database retries every request it is allowed to; a client-side
		// retry budget would turn an outage into spurious failures sooner.
		o.RateLimiter = ratelimit.None
	})

	// The client keeps a connection open for each request that may be in
	// flight at once, so that concurrent reads do not open one each: a
	// row fetcher's, and the parts of the chunks that scans load.
	idle := 2*opts.ReadConcurrency + opts.Concurrency
	loadOpts := []func(*config.LoadOptions) error{config.WithHTTPClient(awshttp.NewBuildableClient().
		WithTransportOptions(func(tr *http.Transport) { tr.MaxIdleConnsPerHost = max(tr.MaxIdleConnsPerHost, idle) }))}
	if opts.Region != "" {
		loadOpts = append(loadOpts, config.WithRegion(opts.Region))
	}
	if opts.AccessKey != "" {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(opts.AccessKey, opts.SecretKey, "")))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("s3: loading AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = DefaultS3Region
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.Retryer = retryer
		// Servers that send no checksum for a GET are common; chunks carry
		// their own checksums, verified on read.
		o.DisableLogOutputChecksumValidationSkipped = true
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
			o.UsePathStyle = true
		}
	})
	s := &S3Store{client: client, retryer: retryer, bucket: opts.Bucket, opts: opts}
	if p := strings.Trim(opts.Prefix, "/"); p != "" {
		s.prefix = p + "/"
	}
	if err := s.ensureBucket(ctx, cfg.Region); err != nil {
		return nil, err
	}
	return s, nil
}

// s3Backoff is the delay before attempt+1: 100 ms doubling per attempt,
// capped at limit, with full jitter.
func s3Backoff(attempt int, limit time.Duration) time.Duration {
	d := 100 * time.Millisecond << min(attempt-1, 20)
	if d <= 0 || d > limit {
		d = limit
	}
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

func (s *S3Store) ensureBucket(ctx context.Context, region string) error {
	_, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &s.bucket})
	if err == nil {
		return nil
	}
	if st := s3Status(err); st != 404 && s3ErrorCode(err) != "NoSuchBucket" {
		return fmt.Errorf("s3: checking bucket %q: %w", s.bucket, err)
	}
	in := &s3.CreateBucketInput{Bucket: &s.bucket}
	if region != DefaultS3Region {
		in.CreateBucketConfiguration = &s3types.CreateBucketConfiguration{
			LocationConstraint: s3types.BucketLocationConstraint(region),
		}
	}
	if _, err := s.client.CreateBucket(ctx, in); err != nil && s3ErrorCode(err) != "BucketAlreadyOwnedByYou" {
		return fmt.Errorf("s3: creating bucket %q: %w", s.bucket, err)
	}
	return nil
}

// Bucket returns the bucket name.
func (s *S3Store) Bucket() string { return s.bucket }

// Prefix returns the prefix every key is stored under: empty or ending in
// '/'.
func (s *S3Store) Prefix() string { return s.prefix }

func (s *S3Store) objectKey(key string) *string { return aws.String(s.prefix + key) }

// Put implements ObjectStore. Objects larger than MultipartThreshold are
// uploaded in parts.
func (s *S3Store) Put(ctx context.Context, key string, data []byte) error {
	if int64(len(data)) > s.opts.MultipartThreshold {
		return s.putMultipart(ctx, key, data, false)
	}
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        &s.bucket,
		Key:           s.objectKey(key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
	})
	if err != nil {
		return fmt.Errorf("s3 put %q: %w", key, err)
	}
	return nil
}

// PutIfAbsent implements ObjectStore with If-None-Match: *; see S3Store
// for how retries keep a success from turning into ErrExists.
func (s *S3Store) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if int64(len(data)) > s.opts.MultipartThreshold {
		return s.putMultipart(ctx, key, data, true)
	}
	return s.conditional(ctx, key, data, func(ctx context.Context) error {
		_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket:        &s.bucket,
			Key:           s.objectKey(key),
			Body:          bytes.NewReader(data),
			ContentLength: aws.Int64(int64(len(data))),
			IfNoneMatch:   aws.String("*"),
		}, noRetry)
		return err
	})
}

// noRetry turns off the client's retries for one request.
func noRetry(o *s3.Options) { o.Retryer = aws.NopRetryer{} }

// conditional runs write, a conditional write of data to key, with
// retries. A refusal (412, or 409 once attempts are spent) means
// ErrExists, unless an earlier attempt may have been applied and the
// stored bytes equal data: then that attempt won.
func (s *S3Store) conditional(ctx context.Context, key string, data []byte, write func(context.Context) error) error {
	maybeWritten := false
	for attempt := 1; ; attempt++ {
		err := write(ctx)
		if err == nil {
			return nil
		}
		code, st := s3ErrorCode(err), s3Status(err)
		// 409 ConditionalRequestConflict: another conditional write to key
		// is in flight. Retrying learns whether it won (412) or not.
		conflict := st == 409 || code == "ConditionalRequestConflict"
		refused := st == 412 || code == "PreconditionFailed" ||
			(maybeWritten && code == "NoSuchUpload") // a completed upload is gone
		if refused || (conflict && attempt >= s.opts.MaxAttempts) {
			if maybeWritten {
				got, gerr := s.Get(ctx, key)
				if gerr != nil {
					return fmt.Errorf("s3 put %q: refused after an attempt that may have landed; reading it back: %w", key, gerr)
				}
				if bytes.Equal(got, data) {
					return nil
				}
			}
			return fmt.Errorf("s3 put %q: %w", key, ErrExists)
		}
		if !conflict && (attempt >= s.opts.MaxAttempts || !s.retryer.IsErrorRetryable(err)) {
			return fmt.Errorf("s3 put %q: %w", key, err)
		}
		if st < 400 || st >= 500 {
			maybeWritten = true // no answer, or a 5xx: the write may have landed
		}
		if err := sleepCtx(ctx, s3Backoff(attempt, s.opts.MaxBackoff)); err != nil {
			return fmt.Errorf("s3 put %q: %w", key, err)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// putMultipart uploads data in parts, Concurrency at a time, each with a
// CRC32 checksum that S3 verifies. Any failure aborts the upload so no
// parts are left behind.
func (s *S3Store) putMultipart(ctx context.Context, key string, data []byte, ifAbsent bool) (err error) {
	created, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket:            &s.bucket,
		Key:               s.objectKey(key),
		ChecksumAlgorithm: s3types.ChecksumAlgorithmCrc32,
	})
	if err != nil {
		return fmt.Errorf("s3 put %q: starting multipart upload: %w", key, err)
	}
	uploadID := created.UploadId
	defer func() {
		if err == nil {
			return
		}
		// The caller's context may be what failed; aborting must not.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = s.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{
			Bucket: &s.bucket, Key: s.objectKey(key), UploadId: uploadID,
		})
	}()

	parts, err := s.uploadParts(ctx, key, *uploadID, data)
	if err != nil {
		return err
	}
	complete := func(ctx context.Context, optFns ...func(*s3.Options)) error {
		in := &s3.CompleteMultipartUploadInput{
			Bucket:          &s.bucket,
			Key:             s.objectKey(key),
			UploadId:        uploadID,
			MultipartUpload: &s3types.CompletedMultipartUpload{Parts: parts},
		}
		if ifAbsent {
			in.IfNoneMatch = aws.String("*")
		}
		_, err := s.client.CompleteMultipartUpload(ctx, in, optFns...)
		return err
	}
	if ifAbsent {
		return s.conditional(ctx, key, data, func(ctx context.Context) error { return complete(ctx, noRetry) })
	}
	if err := complete(ctx); err != nil {
		return fmt.Errorf("s3 put %q: completing multipart upload: %w", key, err)
	}
	return nil
}

func (s *S3Store) uploadParts(ctx context.Context, key, uploadID string, data []byte) ([]s3types.CompletedPart, error) {
	partSize := max(s.opts.PartSize, (int64(len(data))+s3MaxParts-1)/s3MaxParts)
	n := int((int64(len(data)) + partSize - 1) / partSize)
	parts := make([]s3types.CompletedPart, n)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		next     = make(chan int)
	)
	for range min(s.opts.Concurrency, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				off := int64(i) * partSize
				body := data[off:min(off+partSize, int64(len(data)))]
				out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{
					Bucket:            &s.bucket,
					Key:               s.objectKey(key),
					UploadId:          &uploadID,
					PartNumber:        aws.Int32(int32(i + 1)),
					Body:              bytes.NewReader(body),
					ContentLength:     aws.Int64(int64(len(body))),
					ChecksumAlgorithm: s3types.ChecksumAlgorithmCrc32,
				})
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("s3 put %q: uploading part %d of %d: %w", key, i+1, n, err)
						cancel()
					}
					mu.Unlock()
					continue
				}
				parts[i] = s3types.CompletedPart{
					PartNumber:    aws.Int32(int32(i + 1)),
					ETag:          out.ETag,
					ChecksumCRC32: out.ChecksumCRC32,
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("s3 put %q: %w", key, err)
	}
	return parts, nil
}

// Get implements ObjectStore.
func (s *S3Store) Get(ctx context.Context, key string) ([]byte, error) {
	return s.GetRange(ctx, key, 0, -1)
}

// GetRange implements ObjectStore with a Range header. A negative n reads
// to the end. A body cut short in transit is read again, with backoff.
func (s *S3Store) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if off < 0 || n == 0 {
		// Nothing to read, but a missing key is still an error.
		if _, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: s.objectKey(key)}); err != nil {
			return nil, s.readErr(key, err)
		}
		return nil, nil
	}
	return rereadBody(ctx, s, key, func() ([]byte, error) { return s.getRange(ctx, key, off, n) })
}

// rereadBody calls get until it succeeds, fails otherwise than by a body
// cut short in transit (which the client's retryer does not see), or
// MaxAttempts calls were made, with backoff between calls.
func rereadBody[T any](ctx context.Context, s *S3Store, key string, get func() (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		v, err := get()
		var be bodyError
		if err == nil || !errors.As(err, &be) || attempt >= s.opts.MaxAttempts {
			return v, err
		}
		if err := sleepCtx(ctx, s3Backoff(attempt, s.opts.MaxBackoff)); err != nil {
			var zero T
			return zero, fmt.Errorf("s3 get %q: %w", key, err)
		}
	}
}

// bodyError marks a failure while reading a response body, which the
// client's retryer does not see.
type bodyError struct{ err error }

func (e bodyError) Error() string { return "reading body: " + e.err.Error() }
func (e bodyError) Unwrap() error { return e.err }

func (s *S3Store) getRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	in := &s3.GetObjectInput{Bucket: &s.bucket, Key: s.objectKey(key)}
	ranged := off > 0 || n > 0
	switch {
	case n > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	case off > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", off))
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		if s3Status(err) == 416 || s3ErrorCode(err) == "InvalidRange" {
			return nil, nil // the object exists and ends at or before off
		}
		return nil, s.readErr(key, err)
	}
	defer out.Body.Close()
	var data []byte
	if cl := aws.ToInt64(out.ContentLength); cl > 0 {
		data = make([]byte, cl)
		_, err = io.ReadFull(out.Body, data)
	} else {
		data, err = io.ReadAll(out.Body)
	}
	if err != nil {
		return nil, fmt.Errorf("s3 get %q: %w", key, bodyError{err})
	}
	if ranged && out.ContentRange == nil {
		// The server ignored Range and sent the whole object.
		return sliceRange(data, off, n), nil
	}
	return data, nil
}

// GetSizedInto implements sizedGetter: the object, size bytes as its
// reader knows it, read into buf in about ReadPartSize parts at once (up
// to ReadConcurrency), progress called in order as each part completes the
// bytes before it. One byte past size is asked for, so that an object of
// another size comes back with another length, for the caller to see.
func (s *S3Store) GetSizedInto(ctx context.Context, key string, size int64, buf []byte, progress func(read []byte) error) ([]byte, error) {
	want := size + 1
	if int64(cap(buf)) < want {
		buf = make([]byte, want)
	}
	buf = buf[:want]
	nparts := max(1, (want+s.opts.ReadPartSize/2)/s.opts.ReadPartSize)
	part := (want + nparts - 1) / nparts
	if nparts == 1 {
		n, err := s.getRangeInto(ctx, key, 0, buf)
		if err == nil && progress != nil {
			err = progress(buf[:n])
		}
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make([]int, nparts)
	errs := make([]error, nparts)
	done := make([]chan struct{}, nparts)
	for i := range done {
		done[i] = make(chan struct{})
	}
	sem := make(chan struct{}, min(int(nparts), s.opts.ReadConcurrency))
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range int(nparts) {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				for ; i < int(nparts); i++ {
					errs[i] = ctx.Err()
					close(done[i])
				}
				return
			}
			lo := int64(i) * part
			hi := min(lo+part, want)
			wg.Go(func() {
				defer func() {
					<-sem
					close(done[i])
				}()
				got[i], errs[i] = s.getRangeInto(ctx, key, lo, buf[lo:hi])
			})
		}
	})
	n := int64(0)
	var err error
	for i := range int(nparts) {
		<-done[i]
		if err = errs[i]; err != nil {
			break
		}
		n += int64(got[i])
		if progress != nil {
			if err = progress(buf[:n]); err != nil {
				break
			}
		}
		if n < min(int64(i+1)*part, want) {
			break // the object ends here
		}
	}
	cancel()
	wg.Wait()
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// getRangeInto reads the len(dst) bytes at off into dst, and returns how
// many there were (fewer where the object ends). A body cut short in
// transit is read again, with backoff.
func (s *S3Store) getRangeInto(ctx context.Context, key string, off int64, dst []byte) (int, error) {
	return rereadBody(ctx, s, key, func() (int, error) { return s.getRangeIntoOnce(ctx, key, off, dst) })
}

func (s *S3Store) getRangeIntoOnce(ctx context.Context, key string, off int64, dst []byte) (int, error) {
	in := &s3.GetObjectInput{Bucket: &s.bucket, Key: s.objectKey(key),
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+int64(len(dst))-1))}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		if s3Status(err) == 416 || s3ErrorCode(err) == "InvalidRange" {
			return 0, nil // the object ends at or before off
		}
		return 0, s.readErr(key, err)
	}
	defer out.Body.Close()
	if out.ContentRange == nil {
		// The server ignored Range and sends the whole object.
		data, err := io.ReadAll(out.Body)
		if err != nil {
			return 0, fmt.Errorf("s3 get %q: %w", key, bodyError{err})
		}
		return copy(dst, sliceRange(data, off, int64(len(dst)))), nil
	}
	cl := aws.ToInt64(out.ContentLength)
	if cl < 0 || cl > int64(len(dst)) {
		return 0, fmt.Errorf("s3 get %q: %d bytes for a range of %d", key, cl, len(dst))
	}
	n, err := io.ReadFull(out.Body, dst[:cl])
	if err != nil {
		return 0, fmt.Errorf("s3 get %q: %w", key, bodyError{err})
	}
	return n, nil
}

func (s *S3Store) readErr(key string, err error) error {
	if s3NotFound(err) {
		return fmt.Errorf("s3 get %q: %w", key, ErrNotFound)
	}
	return fmt.Errorf("s3 get %q: %w", key, err)
}

// Delete implements ObjectStore.
func (s *S3Store) Delete(ctx context.Context, key string) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: s.objectKey(key)})
	if err != nil && !s3NotFound(err) {
		return fmt.Errorf("s3 delete %q: %w", key, err)
	}
	return nil
}

// List implements ObjectStore, a page of ListObjectsV2 at a time.
func (s *S3Store) List(ctx context.Context, prefix string) ([]string, error) {
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: &s.bucket,
		Prefix: aws.String(s.prefix + prefix),
	})
	var keys []string
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("s3 list %q: %w", prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, strings.TrimPrefix(aws.ToString(o.Key), s.prefix))
		}
	}
	// S3 lists in byte order already; S3-compatible servers may not.
	sort.Strings(keys)
	return keys, nil
}

func s3Status(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func s3ErrorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// s3NotFound reports whether err says the key holds no object; a missing
// bucket or upload is a different failure.
func s3NotFound(err error) bool {
	switch s3ErrorCode(err) {
	case "NoSuchKey", "NotFound":
		return true
	case "NoSuchBucket", "NoSuchUpload":
		return false
	}
	return s3Status(err) == 404
}

// ReadConcurrency implements concurrentReader.
func (s *S3Store) ReadConcurrency() int { return s.opts.ReadConcurrency }
