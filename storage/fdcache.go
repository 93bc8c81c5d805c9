package storage

import (
	"container/list"
	"os"
	"sync"
	"syscall"
)

// fdCache keeps the files of a DirStore's most recently range-read
// objects open. A byte-range read of one row (FetchRows, a random-access
// shuffle) then costs one pread instead of an open, a pread and a close:
// about a fifth of the time for a 12 kB row. Objects are immutable; a Put
// or Delete of a key drops its file, and a file in use when dropped is
// closed by its last reader.
type fdCache struct {
	mu  sync.Mutex
	max int
	m   map[string]*openFile
	lru list.List // *openFile, most recently used first
	// gen counts forgets: a file opened while one happened may be the
	// object's old file, and is not kept.
	gen uint64
}

// openFile is an open object file and the readers using it.
type openFile struct {
	key  string
	fd   int
	refs int
	// dropped is set once the file has left the cache; the last reader
	// closes it.
	dropped bool
	el      *list.Element
}

// dirStoreOpenFiles bounds the files a DirStore keeps open: an eighth of
// the process's open-file limit, between 64 and 1024. A shuffle reads rows
// at random from every chunk file of a column (300 for 2.4 GB in 8 MB
// chunks): with fewer open than that, most reads would open and close.
var dirStoreOpenFiles = func() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 64
	}
	return int(min(max(lim.Cur/8, 64), 1024))
}()

// acquire returns the open file of key (at the path that path returns),
// opening it if needed. The caller reads it with pread and gives it back
// with release. A file already open costs no allocation.
func (c *fdCache) acquire(key string, path func(string) (string, error)) (*openFile, error) {
	c.mu.Lock()
	if of, ok := c.m[key]; ok {
		of.refs++
		c.lru.MoveToFront(of.el)
		c.mu.Unlock()
		return of, nil
	}
	gen := c.gen
	c.mu.Unlock()
	p, err := path(key)
	if err != nil {
		return nil, err
	}
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		// An object was replaced or deleted meanwhile: this one's file
		// serves this read only.
		return &openFile{key: key, fd: fd, refs: 1, dropped: true}, nil
	}
	if of, ok := c.m[key]; ok { // opened meanwhile by another reader
		_ = syscall.Close(fd)
		of.refs++
		c.lru.MoveToFront(of.el)
		return of, nil
	}
	if c.m == nil {
		c.m = make(map[string]*openFile)
	}
	of := &openFile{key: key, fd: fd, refs: 1}
	of.el = c.lru.PushFront(of)
	c.m[key] = of
	for c.lru.Len() > c.max {
		c.dropLocked(c.lru.Back().Value.(*openFile))
	}
	return of, nil
}

// release gives back a file acquire returned.
func (c *fdCache) release(of *openFile) {
	c.mu.Lock()
	of.refs--
	if of.dropped && of.refs == 0 {
		_ = syscall.Close(of.fd)
	}
	c.mu.Unlock()
}

// forget drops key's file: the object was replaced or deleted.
func (c *fdCache) forget(key string) {
	c.mu.Lock()
	c.gen++
	if of, ok := c.m[key]; ok {
		c.dropLocked(of)
	}
	c.mu.Unlock()
}

// closeAll drops every file.
func (c *fdCache) closeAll() {
	c.mu.Lock()
	for _, of := range c.m {
		c.dropLocked(of)
	}
	c.mu.Unlock()
}

func (c *fdCache) dropLocked(of *openFile) {
	c.lru.Remove(of.el)
	delete(c.m, of.key)
	of.dropped = true
	if of.refs == 0 {
		_ = syscall.Close(of.fd)
	}
}

// open reports how many files the cache holds open.
func (c *fdCache) open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
